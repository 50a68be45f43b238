"""Render ``<corpus>/results.json`` (written by a corpus run) as the Markdown table of docs/corpus.md.

    python tests/corpus/render.py [RESULTS.json] > table.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TOOLS = ["graph_summary", "graph_export", "profile_run", "convert_fp32", "convert_fp16", "fp16_check", "dump_compare"]
MARK = {"ok": "ok", "refusal": "refusal", "failure": "**FAIL**"}


def render(results: dict) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from studio.tools.corpus import manifest

    lines = ["| model | " + " | ".join(TOOLS) + " |", "|---|" + "---|" * len(TOOLS)]
    notes = []
    for e in manifest.ALL:
        cells = []
        for tool in TOOLS:
            r = results.get(f"{e.id}|{tool}")
            if r is None:
                cells.append("–")
                continue
            cells.append(f"{MARK[r['status']]} ({r['seconds']:.0f} s)")
            if r["status"] != "ok":
                notes.append(f"- `{e.id}` × `{tool}`: {r['detail']}")
        lines.append(f"| {e.id} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


if __name__ == "__main__":
    default = Path.home() / ".cache" / "studio" / "corpus" / "results.json"
    print(render(json.loads(Path(sys.argv[1] if len(sys.argv) > 1 else default).read_text())))
