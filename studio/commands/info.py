"""``studio info PATH ...``: which format each file is, and which panel opens it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "info"
HELP = "detect the format of files or folders and the panel that opens them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    from studio.core import formats
    from studio.core.errors import UserError

    rows, failures = [], 0
    for path in args.paths:
        try:
            detected = formats.detect(path)
            formats.verify(detected)
            rows.append({"path": str(path), "format": detected.format.id, "label": detected.format.label,
                         "panel": detected.format.panel, "size": _size(path)})
        except UserError as exc:
            failures += 1
            rows.append({"path": str(path), "error": exc.what, "fix": exc.fix})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            if "error" in row:
                print(f"{row['path']}: error: {row['error']}\n  fix: {row['fix']}")
            else:
                print(f"{row['path']}: {row['label']} [{row['format']}] -> {row['panel']} panel, {row['size']} bytes")
    return 1 if failures else 0


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size
