"""``--host NAME`` for an .onnx model: the command runs with Studio's own engine on that host.

``studio profile run MODEL.onnx --host NAME -o DIR``, ``studio dump MODEL.onnx --host NAME -o DIR``,
``studio convert MODEL.onnx --validate --host NAME -o OUT.onnx`` and ``studio bench MODEL.onnx
--host NAME``: the engine venv is made or reused on the host (studio.runs.engine_env), the model
(with its external-data files) and the --input files are uploaded, the same command runs there,
and its results land where the local command would have written them. The output is the local
command's, plus where it ran.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from studio.errors import UserError


def add_provider_argument(parser) -> None:
    """``--provider NAME`` (repeatable): the ONNX Runtime execution providers, here and on a host."""
    parser.add_argument("--provider", action="append", default=[], metavar="NAME",
                        help="ONNX Runtime execution provider, e.g. CUDAExecutionProvider (repeat, in order of "
                             "preference; default CPU); refused when this onnxruntime does not have it")


def add_engine_arguments(parser) -> None:
    """How the host's engine venv is made (only with --host and an .onnx model)."""
    group = parser.add_argument_group("Studio's engine on a host (--host with an .onnx model)")
    group.add_argument("--engine-wheels", choices=["index", "upload"], default="index",
                       help="where the host's venv gets numpy/onnx/onnxruntime: its package index (default), or "
                            "wheels downloaded here and uploaded (a host without an index)")
    group.add_argument("--engine-system-site-packages", action="store_true",
                       help="let the host's engine venv see the host's own packages (e.g. its onnxruntime-gpu)")


def use_providers(args: argparse.Namespace) -> None:
    """Apply ``--provider`` to this process's engine sessions."""
    from studio import ort_providers

    ort_providers.choose(getattr(args, "provider", None))


def is_engine_model(path) -> bool:
    return str(path).lower().endswith(".onnx")


def input_uploads(items: list[str], uploads: dict[str, Path]) -> list[str]:
    """``--input NAME=FILE.npy`` values rewritten to uploaded copies (``in/inputs/<i>/<file>``)."""
    rewritten = []
    for index, item in enumerate(items):
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            raise UserError(f"--input {item!r} is not NAME=FILE.npy", "--input", "Example: --input image=image.npy")
        if not Path(file).is_file():
            raise UserError(f"--input {name}: file not found", file, "Check the path of the .npy file.")
        remote = f"in/inputs/{index}/{Path(file).name}"
        uploads[remote] = Path(file)
        rewritten.append(f"{name}={remote}")
    return rewritten


def common_args(args: argparse.Namespace) -> list[str]:
    """The options every engine command passes on unchanged."""
    out = []
    for shape in getattr(args, "input_shape", []) or []:
        out += ["--input-shape", shape]
    for provider in getattr(args, "provider", []) or []:
        out += ["--provider", provider]
    if getattr(args, "json", False):
        out.append("--json")
    return out


def model_uploads(model: Path) -> dict[str, Path]:
    from studio.runs.engine_run import model_uploads as uploads

    return uploads(model)


def run_on_host(args: argparse.Namespace, remote_args: list[str], uploads: dict[str, Path],
                outputs: dict[str, Path], dest: Path | None, ok_exit: tuple[int, ...] = (0,)) -> int:
    """Bootstrap the engine on ``args.host``, run ``studio REMOTE_ARGS`` there, fetch ``out/`` into
    ``dest`` and print what the command printed with local paths. ``outputs`` maps the remote
    ``out/...`` names to the local paths they stand for."""
    from studio.commands._context import cli_context
    from studio.jobs import run_job
    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_run import json_output, run_engine_command
    from studio.runs.where import target_for_host
    from studio.tools.deploy.fetch import folder_fetcher

    quiet = getattr(args, "json", False)

    def show(step) -> None:
        if step.message:
            print(step.message, file=sys.stderr if quiet else sys.stdout, flush=True)

    from contextlib import ExitStack

    from studio.output_lock import output_lock

    with ExitStack() as locks, target_for_host(cli_context(), args.host) as target:
        for local in outputs.values():  # two runs into the same -o would mix their files: one at a time
            locks.enter_context(output_lock(local, f"{remote_args[0]} run"))
        env = run_job(ensure_engine(target, system_site_packages=args.engine_system_site_packages,
                                    wheels_from=args.engine_wheels), on_progress=show)
        result = run_job(run_engine_command(target, env, remote_args, uploads, dest, fetch=folder_fetcher(target),
                                            ok_exit=ok_exit), on_progress=show)
    mapping: dict[str, str] = {}
    for name, local in list(uploads.items()) + list(outputs.items()):
        mapping[f"{result.work}/{name}"] = str(local)
        mapping[name] = str(local)
    ran_on = {"host": target.where, "engine": env.folder, "engine_reused": env.reused,
              "engine_actions": env.actions, "engine_seconds": round(env.seconds, 3),
              "run_seconds": round(result.seconds, 3)}
    # The host's command calls its own machine "local" (bench's "where"): name the host instead.
    mapping[" on local ("] = f" on {target.where} ("
    if quiet:
        data = json_output(result, mapping)
        if isinstance(data, dict):
            if data.get("where") == "local":
                data["where"] = target.where
            data["ran_on"] = ran_on
        print(json.dumps(data, indent=2))
    else:
        print(result.rewrite(result.stdout, mapping))
        print(f"(ran with Studio's engine on {target.where}, {env.folder}; "
              + ("environment reused" if env.reused else "; ".join(env.actions)) + ")")
    return result.exit_code


def profile_cli(args: argparse.Namespace, model: Path) -> int:
    """``profile run MODEL.onnx --host NAME -o DIR``."""
    uploads = model_uploads(model)
    out = Path(args.output).absolute()
    remote = ["profile", "run", f"in/{model.name}", "-o", f"out/{out.name}", "--iterations", str(args.iterations),
              "--warmup", str(args.warmup), "--seed", str(args.seed)]
    for item in input_uploads(args.input, uploads):
        remote += ["--input", item]
    return run_on_host(args, remote + common_args(args), uploads, {f"out/{out.name}": out}, out.parent)


def dump_cli(args: argparse.Namespace, model: Path) -> int:
    """``dump MODEL.onnx --host NAME -o DIR``."""
    uploads = model_uploads(model)
    out = Path(args.output).absolute()
    remote = ["dump", f"in/{model.name}", "-o", f"out/{out.name}", "--seed", str(args.seed)]
    if args.fp16_sim:
        remote.append("--fp16-sim")
    for item in input_uploads(args.input, uploads):
        remote += ["--input", item]
    return run_on_host(args, remote + common_args(args), uploads, {f"out/{out.name}": out}, out.parent)


def bench_cli(args: argparse.Namespace) -> int:
    """``bench MODEL.onnx --host NAME [-o DIR]``."""
    model = Path(args.model)
    uploads = model_uploads(model)
    remote = ["bench", f"in/{model.name}", "--loop", str(args.loop), "--warmup", str(args.warmup),
              "--seed", str(args.seed)]
    for item in input_uploads(args.input, uploads):
        remote += ["--input", item]
    outputs, dest = {}, None
    if args.output:
        out = Path(args.output).absolute()
        remote += ["-o", f"out/{out.name}"]
        outputs, dest = {f"out/{out.name}": out}, out.parent
    status = run_on_host(args, remote + common_args(args), uploads, outputs, dest)
    if args.output and status == 0:
        from studio.tools.bench.profile_folder import relabel_bench_folder

        relabel_bench_folder(Path(args.output).absolute(), args.host, model.absolute())
    return status


def convert_cli(args: argparse.Namespace, model: Path) -> int:
    """``convert MODEL.onnx [--validate] --host NAME -o OUT.onnx``: the local passes and the
    validation run there; OUT.onnx and its report come back next to OUT."""
    from studio.commands.convert import options_from_args
    from studio.tools.convert.remote_args import remote_convert

    from studio.tools.convert.remote_args import localize_report

    options = options_from_args(args)
    plan = remote_convert(options, model_uploads(model))
    extra = [arg for provider in args.provider for arg in ("--provider", provider)] + (["--json"] if args.json else [])
    # Exit 1 = the validation failed: the report still comes back and is printed, as here.
    status = run_on_host(args, plan.args + extra, plan.uploads, plan.outputs, plan.dest, ok_exit=(0, 1))
    localize_report(plan, options)
    return status
