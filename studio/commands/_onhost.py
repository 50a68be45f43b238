"""The ``--host`` halves of ``studio profile run`` and ``studio dump``: msprof / dumps on an Ascend host.

``studio profile run --host NAME (--config RUN | -- CMD...) [--msprof-option K=V ...] -o DIR``
``studio profile run --host NAME --config RUN --collect FOLDER -o DIR``  (PyTorch-NPU scripts)
``studio dump --host NAME --config RUN --model MODEL.om -o DIR [--layer OP ...] [--mode output|input|all]``
"""

from __future__ import annotations

import argparse
import json
import shlex
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


def _config(args, command: list[str]):
    from studio.errors import UserError
    from studio.runs.config import RunConfig, find_config, find_workspace

    if args.config and command:
        raise UserError("Give --config or a command after --, not both", "--config", "Drop one of them.")
    if args.config:
        config = find_config(find_workspace(args.workspace), args.config)
        if not config.is_local and config.target != args.host:
            raise UserError(f"Run configuration {config.name!r} runs on {config.target!r}, not {args.host!r}",
                            "--host", f"Use --host {config.target}, or edit the configuration.")
        upload_first(config, quiet=getattr(args, "json", False))
        return config
    if not command:
        raise UserError("What should run on the host?", "--config / -- CMD",
                        "Give --config RUN, or the command after --: studio profile run --host NAME -o DIR -- ./main")
    return RunConfig("command", shlex.join(command), target=args.host)


def _target(host: str):
    from studio.commands._context import cli_context
    from studio.runs.where import target_for_host

    return target_for_host(cli_context(), host)


def _show(args):
    def show(step) -> None:
        if not getattr(args, "json", False) and step.message:
            print(step.message, flush=True)
    return show


def profile_on_host_cli(args: argparse.Namespace, command: list[str]) -> int:
    """``profile run --host``: msprof around a configuration or a command; the PROF_ folder lands in -o."""
    from studio.errors import UserError
    from studio.jobs import run_job
    from studio.tools.profiler.msprof_cmd import MsprofOptions
    from studio.tools.profiler.on_host import collect_on_host, profile_on_host

    if not args.host:
        raise UserError("--config profiles on a host", "--host", "Add --host NAME.")
    config = _config(args, command)
    from studio.tools.deploy.fetch import folder_fetcher

    from studio.output_lock import output_lock

    with output_lock(args.output, "profile"), _target(args.host) as target:
        fetch = folder_fetcher(target)
        if args.collect:
            job = collect_on_host(target, config, args.collect, args.output, fetch=fetch)
        else:
            job = profile_on_host(target, config, args.output, MsprofOptions.from_strings(args.msprof_option),
                                  fetch=fetch)
        result = run_job(job, on_progress=_show(args))
    data = {"folder": str(result.folder), "remote": result.remote, "host": result.where, "command": result.command,
            "exported": result.exported, "files": result.files, "bytes": result.bytes}
    print(json.dumps(data, indent=2) if args.json else
          f"profile of {config.name} on {result.where}: {result.files} files ({result.bytes / 2**20:.1f} MiB) "
          f"in {result.folder}" + (" (exported with msprof --export=on)" if result.exported else ""))
    return 0


def dump_on_host_cli(args: argparse.Namespace) -> int:
    """``dump --host``: acl.json with a host dump_path, run, newest tree downloaded into -o."""
    from studio.errors import UserError
    from studio.jobs import run_job
    from studio.tools.accuracy.acl_config import om_dump_entry
    from studio.tools.accuracy.on_host import dump_on_host

    if not args.config:
        raise UserError("Dumping on a host runs a run configuration", "--config", "Add --config RUN.")
    if args.model is None:
        raise UserError("Which model does the app load?", "--model", "Add --model MODEL.om (its name goes into dump_list).")
    layers = list(args.layer)
    if args.model.is_file():
        from studio.tools.graph.om_reader import read_om

        name, layers = om_dump_entry(read_om(args.model), args.model.name, layers)
    else:  # the .om lives only on the host: its file name is what dump_list needs
        name = args.model.stem
    config = _config(args, [])
    from studio.tools.deploy.fetch import folder_fetcher

    arrays = {}
    for item in args.npy:
        key, sep, file = item.partition("=")
        arrays[key if sep else Path(item).stem] = Path(file if sep else item)
    with _target(args.host) as target:
        if args.reference is not None:
            from studio.tools.accuracy.on_host import dump_and_compare

            both = run_job(dump_and_compare(target, config, name, args.reference, args.output, arrays, layers,
                                            args.mode, converted=args.model, fetch=folder_fetcher(target)),
                           on_progress=_show(args))
            result = both.host
        else:
            result = run_job(dump_on_host(target, config, name, args.output, layers, args.mode, args.op_switch,
                                          list(arrays.values()), fetch=folder_fetcher(target)), on_progress=_show(args))
    data = {"folder": str(result.folder), "host": result.where, "dump": result.tree.path,
            "files": len(result.tree.files), "bytes": result.bytes, "acl_json": result.acl_json}
    if args.reference is not None:
        csv = Path(args.output) / "compare.csv"
        both.result.write_csv(csv)
        data.update(cpu_dump=str(both.cpu_dump), compare=both.result.to_json(), csv=str(csv),
                    mapping=str(both.mapping) if both.mapping else None)
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    print(f"dumped {len(result.tree.files)} op files of {name} on {result.where} into {result.folder}")
    if args.reference is not None:
        print(f"reference dump (ONNX Runtime here): {both.cpu_dump}")
        print(both.result)
        print(f"wrote {data['csv']}")
    return 0


def upload_first(config, quiet: bool = False) -> None:
    """Carry out the configuration's "upload the deployment first": the plan is printed (to stderr
    with --json), then the upload runs (never deleting); a failed or conflicting file stops the run."""
    if not config.upload:
        return
    import sys

    from studio.commands._context import cli_context
    from studio.commands._progress import print_progress
    from studio.commands.deploy import print_plan
    from studio.errors import UserError
    from studio.jobs import run_job
    from studio.tools.deploy.deployments import DeploymentStore
    from studio.tools.deploy.sync import host_connector
    from studio.tools.deploy.sync import run_job as sync_job

    deployment = DeploymentStore().get(config.upload)
    out = sys.stderr if quiet else sys.stdout
    print(f"uploading deployment {deployment.name} first", file=out)
    plan, result = run_job(sync_job(deployment, "upload", host_connector(cli_context(), deployment), False, False,
                                    None, on_plan=lambda p: print_plan(p, out)), on_progress=print_progress)
    print(result.summary(), file=out)
    if not result.ok or result.conflicts:
        raise UserError(f"The upload of deployment {deployment.name} did not complete, so the run did not start",
                        f"run configuration {config.name!r}, upload = {config.upload!r}",
                        f"Look at it with `studio deploy status {deployment.name}`, then run again.")
