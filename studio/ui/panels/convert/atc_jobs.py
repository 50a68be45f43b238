"""Job pieces for the Converter's ATC runs: the job factory (here or on a host) and a line-keeping wrapper.

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


def atc_job(options, host, context, aipp_path: Path | None, aipp_text: str | None):
    """(job factory taking a CancelToken, job key, log line) for ATC on ``host`` (None: this computer).

    ``context`` is the window's HostContext: the host's pooled connection is used, and the job
    key ``host:NAME`` keeps it from overlapping a sync or another job on that host.
    """
    from studio.targets import LocalTarget, SshTarget
    from studio.tools.convert.atc_run import run_atc
    from studio.tools.convert.convert import write_text_then

    target = LocalTarget() if host is None else SshTarget(host, context)
    if options.output is None:
        options.output = options.model.with_suffix("")
    local_om = options.output if options.output.suffix == ".om" else Path(str(options.output) + ".om")
    where = "this computer" if host is None else f"{host.name} ({host.address})"
    message = f"ATC on {where}; the .om comes to {local_om}"

    def make(cancel):
        return write_text_then(aipp_path, aipp_text, run_atc(options, target, cancel))

    return make, target.key, message
