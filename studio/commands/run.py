"""``studio run NAME``: run a workspace's run configuration and show its output as it comes.

``studio run NAME [--workspace DIR] [--json]``  (exit code = the app's exit code; the metrics the app
printed as a table, and the configuration's ``fetch`` outputs copied into ``<workspace>/runs/``)
``studio run --list [--workspace DIR] [--json]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from studio.core.serial import to_json

NAME = "run"
HELP = "run a run configuration of the workspace (here or on its host); --list shows them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME", help="the run configuration to run")
    parser.add_argument("--workspace", type=Path, metavar="DIR", help="the workspace (default: the one around .)")
    parser.add_argument("--list", action="store_true", help="list the run configurations")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON (output included)")


def run(args: argparse.Namespace) -> int:
    from studio.core.errors import UserError
    from studio.runs.config import find_workspace, load_configs

    workspace = find_workspace(args.workspace)
    if args.list or not args.name:
        configs = load_configs(workspace)
        if args.json:
            print(json.dumps(to_json(configs), indent=2))
        elif not configs:
            print(f"no run configurations in {workspace.settings_path}")
        for c in configs if not args.json else []:
            print(f"{c.name:<20} {c.target:<12} {c.command}")
        if not args.list and not args.name:
            raise UserError("Which run configuration?", "NAME", "Run: studio run NAME (names listed above).")
        return 0
    return _run(workspace, args)


def _run(workspace, args: argparse.Namespace) -> int:
    from studio.core.errors import UserError
    from studio.core.jobs import run_job
    from studio.runs.config import find_config
    from studio.runs.runner import run_configuration

    config = find_config(workspace, args.name)
    from studio.runs.where import target_for_config

    if config.is_local:
        target = target_for_config(None, config)
        workdir = str(workspace.resolve(config.workdir)) if config.workdir else str(workspace.folder)
        if not Path(workdir).is_dir():
            raise UserError("The working folder does not exist", f"run configuration {config.name!r}: {workdir}",
                            "Create it or change workdir.")
    else:
        from studio.commands._context import cli_context

        from studio.commands._onhost import upload_first

        target = target_for_config(cli_context(), config)
        workdir = config.workdir or None
        upload_first(config, quiet=args.json)

    def show(step) -> None:
        if not args.json:
            print(step.message, flush=True)
        elif step.message.startswith("not fetched:"):
            print(f"note: {step.message}", file=sys.stderr, flush=True)  # --json keeps stdout for the JSON

    with target:
        outcome = run_job(run_configuration(config, target, workdir, results_base=workspace.folder),
                          on_progress=show)
    if args.json:
        print(json.dumps(to_json(outcome), indent=2))
    else:
        _print_metrics(outcome.metrics)
        print(outcome.summary(), file=sys.stderr)
    return outcome.exit_code


def _print_metrics(table) -> None:
    """The printed metrics as a table (at most 50 rows, then the means)."""
    if not table.rows:
        return
    width = max(12, *(len(r.label) for r in table.rows[:50]))
    print(f"\n{'metrics':<{width}}  " + "  ".join(f"{c:>12}" for c in table.columns))
    for row in table.rows[:50]:
        print(f"{row.label:<{width}}  " + "  ".join(
            f"{row.values[c]:>12.6g}" if c in row.values else f"{'':>12}" for c in table.columns))
    if len(table.rows) > 50:
        print(f"... {len(table.rows) - 50} more rows (--json has them all)")
    means = table.means()
    if means:
        print(f"{'mean':<{width}}  " + "  ".join(f"{means[c]:>12.6g}" if c in means else f"{'':>12}"
                                                 for c in table.columns))
