"""Render ``<corpus>/results.json`` (written by a corpus run) as the Markdown table of docs/corpus.md.

    python tests/corpus/render.py [RESULTS.json] > table.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TOOLS = ["graph_summary", "graph_export", "profile_run", "convert_fp32", "convert_fp16", "fp16_check", "dump_compare"]
MARK = {"ok": "ok", "refusal": "refusal", "failure": "**FAIL**"}


def _slow() -> set:
    import importlib.util

    here = Path(__file__).resolve().parent
    spec = importlib.util.spec_from_file_location("corpus_cases", here / "test_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render(results: dict) -> str:
    """The models × tools table (``†``: left out on CI as slow) and one line per non-ok case."""
    from studio.tools.corpus import manifest

    cases = _slow()
    slow, known = cases.SLOW, cases.KNOWN_BUGS

    lines = ["| model | " + " | ".join(TOOLS) + " |", "|---|" + "---|" * len(TOOLS)]
    notes = []
    for e in manifest.ALL:
        cells = []
        for tool in TOOLS:
            r = results.get(f"{e.id}|{tool}")
            if r is None:
                stress_only = e.kind == "stress" and e.id not in cases.FULL_STRESS and tool not in cases.STRESS_TOOLS
                same_file = e.kind == "variant" and tool not in cases.VARIANT_TOOLS
                cells.append("n/a" if stress_only or same_file else "not run")
                continue
            mark = MARK[r["status"]]
            if r["status"] == "failure" and (e.id, tool) in known:
                mark = "known bug"
            cells.append(f"{mark} ({r['seconds']:.0f} s{' †' if (e.id, tool) in slow else ''})")
            if r["status"] != "ok":
                first = " ".join(r["detail"].split())[:220]
                notes.append(f"- `{e.id}` × `{tool}`: {first}")
        lines.append(f"| {e.id} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


if __name__ == "__main__":
    default = Path.home() / ".cache" / "studio" / "corpus" / "results.json"
    print(render(json.loads(Path(sys.argv[1] if len(sys.argv) > 1 else default).read_text())))
