"""The ``--host`` halves of ``studio profile run`` and ``studio dump``: msprof / dumps on an Ascend host.

``studio profile run --host NAME (--config RUN | -- CMD...) [--msprof-option K=V ...] -o DIR``
``studio profile run --host NAME --config RUN --collect FOLDER -o DIR``  (PyTorch-NPU scripts)
``studio dump --host NAME --config RUN --model MODEL.om -o DIR [--layer OP ...] [--mode output|input|all]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_profile_host_arguments(run: argparse.ArgumentParser) -> None:
    """The options ``profile run`` gains for a host."""
    group = run.add_argument_group("on an Ascend host (msprof)")
    group.add_argument("--host", metavar="NAME", help="run msprof on this host (see studio ssh list)")
    group.add_argument("--config", metavar="RUN", help="the run configuration msprof wraps (studio run --list)")
    group.add_argument("--workspace", type=Path, metavar="DIR", help="workspace of --config (default: around .)")
    group.add_argument("--msprof-option", action="append", default=[], metavar="NAME=VALUE",
                       help="msprof switch, e.g. ai-core=on, aic-metrics=Memory, task-time=l1 (repeat)")
    group.add_argument("--collect", metavar="FOLDER",
                       help="do not wrap in msprof: run the configuration and bring back the newest "
                            "*_ascend_pt folder under FOLDER (PyTorch scripts that profile themselves)")


def add_dump_host_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``dump`` gains for a host."""
    group = parser.add_argument_group("on an Ascend host")
    group.add_argument("--host", metavar="NAME", help="dump on this host (see studio ssh list)")
    group.add_argument("--config", metavar="RUN", help="the run configuration that runs the app")
    group.add_argument("--workspace", type=Path, metavar="DIR", help="workspace of --config (default: around .)")
    group.add_argument("--model", type=Path, metavar="MODEL.om", help="the .om the app loads (names dump_list)")
    group.add_argument("--layer", action="append", default=[], metavar="OP", help="dump only these ops (repeat)")
    group.add_argument("--mode", choices=["output", "input", "all"], default="output", help="dump_mode")
    group.add_argument("--op-switch", choices=["on", "off"], default="off", help="dump_op_switch")
    group.add_argument("--npy", action="append", default=[], metavar="[NAME=]FILE.npy",
                       help="input arrays to upload beside the app (repeat); NAME = the ONNX input for --reference")
    group.add_argument("--reference", type=Path, metavar="MODEL.onnx",
                       help="also dump this original model here with ONNX Runtime on the same --npy arrays and "
                            "compare (journey 3 in one command)")


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
