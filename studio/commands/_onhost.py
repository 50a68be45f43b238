"""The ``--host`` halves of ``studio profile run`` and ``studio dump``: msprof / dumps on an Ascend host.

``studio profile run --host NAME (--config RUN | -- CMD...) [--msprof-option K=V ...] -o DIR``
``studio profile run --host NAME --config RUN --collect FOLDER -o DIR``  (PyTorch-NPU scripts)
``studio dump --host NAME --config RUN --model MODEL.om -o DIR [--layer OP ...] [--mode output|input|all]``
"""

from __future__ import annotations

import argparse
import json


def add_profile_host_arguments(run: argparse.ArgumentParser) -> None:
    """The options ``profile run`` gains for a host (declared on :class:`studio.ops.msprof.Request`)."""
    from studio.core.options import add_arguments
    from studio.ops.msprof import HOST_GROUP, Request

    run.add_argument_group(HOST_GROUP).add_argument("--host", metavar="NAME",
                                                    help="run msprof on this host (see studio ssh list)")
    add_arguments(run, Request, "config", "workspace", "msprof_options", "collect")


def add_dump_host_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``dump`` gains for a host (declared on :class:`studio.ops.npu_dump.Request`)."""
    from studio.core.options import add_arguments
    from studio.ops.npu_dump import HOST_GROUP, Request

    parser.add_argument_group(HOST_GROUP).add_argument("--host", metavar="NAME",
                                                       help="dump on this host (see studio ssh list)")
    add_arguments(parser, Request, "config", "workspace", "model")
    add_arguments(parser, Request)  # the rest; -o/--output is the local dump's


def profile_on_host_cli(args: argparse.Namespace, command: list[str]) -> int:
    """``profile run --host``: msprof around a configuration or a command (:mod:`studio.ops.msprof`)."""
    from studio.ops import msprof

    return _run(msprof, msprof.Request.from_args(args), args)


def dump_on_host_cli(args: argparse.Namespace) -> int:
    """``dump --host``: acl.json with a host dump_path, run, newest tree downloaded into -o
    (:mod:`studio.ops.npu_dump`)."""
    from studio.ops import npu_dump

    return _run(npu_dump, npu_dump.Request.from_args(args), args)


def _run(op, request, args: argparse.Namespace) -> int:
    from studio.commands._context import cli_context
    from studio.core.jobs import run_job

    config = op.prepare(request, args.host)
    upload_first(config, quiet=args.json)

    def show(step) -> None:
        if not args.json and step.message:
            print(step.message, flush=True)

    result = run_job(op.run(request, args.host, cli_context(), config=config), on_progress=show)
    print(json.dumps(result.to_json(), indent=getattr(result, "JSON_INDENT", 2)) if args.json else result.text())
    return 0


def upload_first(config, quiet: bool = False) -> None:
    """Carry out the configuration's "upload the deployment first" (:mod:`studio.ops.upload_first`):
    the plan and the outcome are printed (to stderr with --json), the transfer's progress shows on a
    terminal."""
    if not config.upload:
        return
    import sys

    from studio.commands._context import cli_context
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.ops import upload_first as op

    out = sys.stderr if quiet else sys.stdout

    def show(step) -> None:
        if step.message:
            print(step.message, file=out, flush=True)
        else:
            print_progress(step)

    run_job(op.run(cli_context(), config.upload), on_progress=show)
