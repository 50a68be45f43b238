"""Job pieces for the Converter's ATC runs: the job factory (here or on a host) and how a step is logged.

The JobRunner throttles progress signals (at most ~20 a second), which is right for a progress
bar but would drop lines of ATC's output; ``studio.ui.jobs.tee`` keeps every message (formatted by
:func:`with_percent`) in a deque the panel drains into its log.
"""

from __future__ import annotations

from pathlib import Path

from studio.core.jobs import Progress


def with_percent(step: Progress) -> str:
    """A log line for one step: ``[ 40%] message`` when the step has a fraction."""
    return ("" if step.fraction is None else f"[{step.fraction * 100:3.0f}%] ") + step.message


def atc_job(options, host, context, aipp_path: Path | None, aipp_text: str | None):
    """(job factory taking a CancelToken, job key, log line) for ATC on ``host`` (None: this computer).

    The job is the ATC operation the CLI runs too (:func:`studio.ops.atc.run`); ``context`` is the
    window's HostContext: the host's pooled connection is used, and the job key ``host:NAME`` keeps
    it from overlapping a sync or another job on that host.
    """
    from studio.ops import atc

    if options.output is None:
        options.output = options.model.with_suffix("")
    local_om = options.output if options.output.suffix == ".om" else Path(str(options.output) + ".om")
    where = "this computer" if host is None else f"{host.name} ({host.address})"
    message = f"ATC on {where}; the .om comes to {local_om}"
    request = atc.Request(options, aipp_path, aipp_text)

    def make(cancel):
        return atc.run(request, None if host is None else host.name, context, cancel)

    return make, "local" if host is None else f"host:{host.name}", message
