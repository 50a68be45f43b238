"""The advisor's part of the demo workspace: a report over the demo U-Net, its profile and its FP16 check.

Writes ``advisor/unet_report.json`` (and the same as ``.html``) once; the window opens the JSON in
the Advisor panel. The profile and the comparison come from the profiler's and accuracy's demo
parts (run here first if they have not run yet: each skips work already done).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress

REPORT = Path("advisor") / "unet_report.json"


def add_to_demo(folder: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, list[Path]]:
    """Write the demo report unless it is already there; returns it for the window to open."""
    from studio.tools.accuracy import demo as accuracy_demo
    from studio.tools.profiler import demo as profiler_demo

    folder = Path(folder)
    out = folder / REPORT
    model = folder / "models" / "unet.onnx"
    if out.is_file():
        return [out]
    if not model.is_file():
        return []
    profiles = yield from profiler_demo.add_to_demo(folder, cancel)
    comparisons = yield from accuracy_demo.add_to_demo(folder, cancel)
    from studio.tools.advisor import write_report
    from studio.tools.advisor.engine import advise

    yield Progress(None, "advisor: the demo U-Net report")
    report = yield from advise(model=model, profile=profiles[0] if profiles else None,
                               accuracy=comparisons[0] if comparisons else None, msprof=False, cancel=cancel,
                               measure_budget_s=4.0)  # the demo's A/B timings: a few seconds each
    write_report(report, out.with_suffix(".html"))
    write_report(report, out)  # last: a JSON present means the demo content is complete
    return [out]
