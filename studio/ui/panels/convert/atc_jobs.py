"""Job pieces for the Converter's ATC runs: the remote job factory and a line-keeping wrapper.

The JobRunner throttles progress signals (at most ~20 a second), which is right for a progress
bar but would drop lines of ATC's output; :func:`tee` keeps every message in a deque the panel
drains into its log.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from studio.jobs import Progress


def tee(job, lines: deque):
    """Pass ``job``'s steps on and keep each message in ``lines``, so the log misses none (ATC's output)."""
    try:
        while True:
            try:
                step = next(job)
            except StopIteration as done:
                return done.value
            if isinstance(step, Progress) and step.message:
                lines.append(("" if step.fraction is None else f"[{step.fraction * 100:3.0f}%] ") + step.message)
            yield step
    finally:
        job.close()


def remote_atc_job(options, host, aipp_path: Path | None, aipp_text: str | None, known_hosts, ask_secret):
    """(job factory taking a CancelToken, log line) for ATC on ``host``; ``known_hosts`` None = the user's."""
    from studio.tools.convert.atc_remote import run_atc_remote
    from studio.tools.convert.convert import write_text_then
    from studio.tools.deploy.hosts import HostStore
    from studio.tools.deploy.known_hosts import KnownHosts

    known = known_hosts or KnownHosts()
    resolve = HostStore().get
    if options.output is None:
        options.output = options.model.with_suffix("")
    local_om = options.output if options.output.suffix == ".om" else Path(str(options.output) + ".om")
    message = f"ATC on {host.name} ({host.address}); the .om comes back to {local_om}"

    def make(cancel):
        return write_text_then(aipp_path, aipp_text, run_atc_remote(
            options, host, known, ask_secret, resolve_host=resolve, cancel=cancel))

    return make, message
