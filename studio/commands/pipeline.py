"""``studio pipeline check|set FILE``: check a MindX SDK pipeline, or change one property in place."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from studio.core.serial import to_json

NAME = "pipeline"
HELP = "check a MindX SDK pipeline, or set one element property keeping the file's layout"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="pipeline_command", metavar="{check,set}", required=True)
    check = sub.add_parser("check", help="missing files and elements, cycles, unknown plugins and props, "
                                         "device and input-size mismatches")
    check.add_argument("path", type=Path, metavar="FILE")
    check.add_argument("--project", type=Path, metavar="DIR",
                       help="the folder the app runs from; relative paths resolve against it "
                            "(default: guessed from main.py or run.sh above FILE, or from the relative paths; "
                            "the output says which)")
    check.add_argument("--host", metavar="NAME",
                       help="check the files where the app runs: on this host, in the project's folder there "
                            "(mapped through the deployment that syncs the project)")
    check.add_argument("--remote-project", metavar="DIR",
                       help="with --host: the app's folder on the host, when no deployment maps the project")
    check.add_argument("--json", action="store_true", help="print machine-readable JSON")
    edit = sub.add_parser("set", help="set [STREAM/]ELEMENT.PROP=VALUE, keeping key order, indentation "
                                      "and line endings")
    edit.add_argument("path", type=Path, metavar="FILE")
    edit.add_argument("assignments", nargs="+", metavar="ELEMENT.PROP=VALUE")


def run(args: argparse.Namespace) -> int:
    from studio.tools.graph.pipeline.document import read_pipeline

    if args.pipeline_command == "set":
        from studio.tools.graph.pipeline.edit import set_prop_in_file

        for assignment in args.assignments:
            stream, element, prop = set_prop_in_file(args.path, assignment)
            print(f"{args.path}: {stream}/{element}.{prop} = {assignment.partition('=')[2]!r}")
        return 0
    from studio.tools.graph.pipeline.check import check_pipeline

    if args.remote_project and not args.host:
        from studio.core.errors import UserError

        raise UserError("--remote-project needs --host", "--remote-project", "Add --host NAME, or drop it.")
    if args.host:
        from studio.commands._context import cli_context
        from studio.ops.pipeline_check import check_on_host

        result = check_on_host(cli_context(), args.host, read_pipeline(args.path), args.project, args.remote_project)
    else:
        result = check_pipeline(read_pipeline(args.path), args.project)
    if args.json:
        print(json.dumps(to_json(result), indent=2))
    else:
        print(f"{args.path}: {len(result.errors)} error(s), {len(result.findings) - len(result.errors)} other "
              f"finding(s); paths resolved against {result.project} ({result.project_reason})"
              + (f"; files checked on {result.host.where} in {result.host.project}" if result.host else ""))
        for finding in result.findings:
            print(f"  {finding}")
    return 1 if result.errors else 0
