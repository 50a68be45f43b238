"""``studio demo create DIR``: write the demo workspace (models, images, studio.toml)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "demo"
HELP = "write the demo workspace: generated U-Net, SSD detector, colorization net, classifier, images"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="write the demo workspace into DIR")
    create.add_argument("folder", type=Path, metavar="DIR")


def run(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.demo.workspace import create_demo_workspace, ensure_demo_workspace
    from studio.core.workspace import Workspace

    def write_demo():
        yield from create_demo_workspace(args.folder)  # always rewrites the models and images
        # then every tool adds its results (a local profile, a dump comparison, ...)
        return (yield from ensure_demo_workspace(args.folder))

    demo = run_job(write_demo(), on_progress=print_progress)
    workspace = Workspace.create(demo.folder, name="Demo")
    print(f"demo workspace written to {workspace.folder}")
    for path in demo.files + demo.show[:-1]:
        print(f"  {Path(path).relative_to(workspace.folder)}")
    return 0
