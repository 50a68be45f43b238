"""``studio atc-log FILE``: explain the error codes in an ATC output or plog file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from studio.core.safe_read import read_text
from studio.core.serial import to_json

NAME = "atc-log"
HELP = "explain the error codes (E10001 ...) in an ATC output or plog file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, metavar="LOG")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    from studio.core.errors import UserError
    from studio.tools.convert.atc_log import parse_atc_output

    try:
        text = read_text(args.path, "ATC log", errors="replace")
    except OSError as exc:
        raise UserError(f"Cannot read the log: {exc.strerror}", args.path, "Check the path.") from exc
    messages = parse_atc_output(text)
    if args.json:
        print(json.dumps(to_json(messages), indent=2))
    elif not messages:
        print(f"{args.path}: no ATC errors or warnings found")
    else:
        for message in messages:
            print(message)
    return 1 if any(m.level == "error" for m in messages) else 0
