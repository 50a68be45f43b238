"""The advisor: one report over a model's graph, its profile, its accuracy and its benchmark.

* :func:`engine.advise` — the job: loads the inputs through the graph, profiler and accuracy
  engines, runs the rules (:mod:`.rules`), the roofline (:mod:`.roofline`) and, for Ascend
  profiling data, msprof-analyze (:mod:`.msprof_analyze`); returns a :class:`model.Report`.
* :mod:`.gains` — the suggested fixes and settings tried and timed A/B (:mod:`.ab`) before a
  finding may rate high; the severity policy for measured and estimated gains.
* :mod:`.fixes` / :mod:`.loop` — the closed loop: apply the ticked automatic fixes to an ONNX
  model, profile it again with the same settings, check its accuracy against the original.
* :func:`write_report` — the report as self-contained HTML, Markdown or JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

from studio.core.errors import UserError
from studio.core.serial import to_json


def write_report(report, path: Path | str) -> Path:
    """Write ``report`` as HTML, Markdown or JSON, by the suffix of ``path`` (atomically)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        from studio.tools.advisor.render_html import render_html

        text = render_html(report)
    elif suffix in (".md", ".markdown"):
        from studio.tools.advisor.render_md import render_markdown

        text = render_markdown(report)
    elif suffix == ".json":
        text = json.dumps(to_json(report), indent=1, default=str)
    else:
        raise UserError(f"Unknown report format {suffix or '(none)'}", path, "Use a .html, .md or .json file name.")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
