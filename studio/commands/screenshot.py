"""``studio screenshot -o DIR [--demo]``: render the window and each panel to PNG, offscreen."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "screenshot"
HELP = "render the main window and each panel to PNG files (no display needed)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder for the PNG files")
    parser.add_argument("--demo", action="store_true", help="open the demo workspace first")


def run(args: argparse.Namespace) -> int:
    from studio.ui.screenshot import take_screenshots

    for path in take_screenshots(args.output, demo=args.demo):
        print(path)
    return 0
