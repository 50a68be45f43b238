"""``studio screenshot -o DIR [--demo] [--size WxH] [--check-text]``: render the window and each panel
to PNG, offscreen."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "screenshot"
HELP = "render the main window and each panel to PNG files (no display needed)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder for the PNG files")
    parser.add_argument("--demo", action="store_true", help="open the demo workspace first")
    parser.add_argument("--size", default="1400x900", metavar="WxH",
                        help="window size in pixels, e.g. 1280x720 (default 1400x900)")
    parser.add_argument("--check-text", action="store_true",
                        help="also list text cut by its widget with no tooltip holding it (exit code 1 if any)")


def run(args: argparse.Namespace) -> int:
    from studio.ui.screenshot import parse_size, take_screenshots

    size = parse_size(args.size)
    cut: list[str] = []

    def check(name: str, widget) -> None:
        from studio.ui.text_check import find_cut_text

        cut.extend(f"{name}: {found}" for found in find_cut_text(widget))

    for path in take_screenshots(args.output, demo=args.demo, size=size, check=check if args.check_text else None):
        print(path)
    for line in dict.fromkeys(cut):  # a dock's text is seen again in the window's walk
        print(f"cut text: {line}", file=sys.stderr)
    return 1 if cut else 0
