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


NEAR = 2  # at most this many "../" from the report's folder: a file of the same workspace


def near_path(value, folder: Path):
    """``value`` (a path text) relative to ``folder`` when it lies near it (see :data:`NEAR`), else as given."""
    import os

    if not value or not Path(str(value)).is_absolute():
        return value
    try:
        relative = Path(os.path.relpath(Path(str(value)), Path(folder).resolve()))
    except ValueError:  # another drive (Windows)
        return value
    ups = len([part for part in relative.parts if part == ".."])
    return relative.as_posix() if ups <= NEAR and ".." not in relative.parts[ups:] else value


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
        data = to_json(report)
        # Inputs beside the report (in the same workspace) are stored relative to it, so a moved or
        # copied workspace opens its own files, not the original copy's (read_report resolves them).
        data["inputs"] = {key: near_path(value, path.parent) for key, value in (data.get("inputs") or {}).items()}
        text = json.dumps(data, indent=1, default=str)
    else:
        raise UserError(f"Unknown report format {suffix or '(none)'}", path, "Use a .html, .md or .json file name.")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
