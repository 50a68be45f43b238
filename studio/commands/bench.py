"""``studio bench MODEL``: time a model with ONNX Runtime here, or an .om with msame / ais_bench.

``studio bench MODEL.onnx [--loop N] [--warmup K] [--input NAME=FILE.npy] [--input-shape NAME=D,..] [--json]``
``studio bench MODEL.om [--host NAME] [--tool msame|ais_bench|msit] [--loop N] [--warmup K] [--device D] [--json]``
``studio bench MODEL.om --host NAME --compare-with MODEL.onnx [--input-shape NAME=D,..]``: the original
model is also timed here with ONNX Runtime (same loops and warm-ups) and the two are put side by side.
``studio bench NEW.onnx --compare-with BASE.onnx [--budget S]``: both timed here, interleaved, until the
change is known to ±2 % or the budget ends; the change is printed with its confidence interval.

With ``--host`` the .om (and its --input files) are uploaded to a work folder on the host and
timed there; without it msame / ais_bench run on this computer.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from studio.core.serial import to_json

NAME = "bench"
HELP = "time a model: ONNX Runtime here, or an .om with msame / ais_bench"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.bench import Request

    add_request_arguments(parser, Request, "model")
    parser.add_argument("--host", metavar="NAME", help="time the model on this host (see studio ssh list): an .om "
                        "with msame/ais_bench, an .onnx with Studio's engine (ONNX Runtime) there")
    parser.add_argument("--tool", choices=["onnxruntime", "msame", "ais_bench", "msit"], default=None,
                        help="what times the model (default: onnxruntime for .onnx, msame for .om)")
    add_request_arguments(parser, Request, "loop", "warmup")
    parser.add_argument("--device", type=int, default=0, metavar="ID", help="NPU device id (msame / ais_bench)")
    add_request_arguments(parser, Request, "inputs", "shapes", "seed", "output")
    parser.add_argument("--compare-with", type=Path, metavar="MODEL.onnx",
                        help="with an .om: also time this original model here with ONNX Runtime, same loops "
                             "(dynamic dims: --input-shape); -o DIR then holds DIR/npu and DIR/onnxruntime. "
                             "With an .onnx: the baseline, timed here interleaved with MODEL until the change is "
                             "known (--budget)")
    parser.add_argument("--budget", type=float, default=10.0, metavar="S",
                        help="with two .onnx models: seconds the interleaved comparison may take (default 10)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    add_request_arguments(parser, Request)  # --provider, the host engine's options


def run(args: argparse.Namespace) -> int:
    from studio.core.errors import UserError

    tool = args.tool or ("msame" if args.model.lower().endswith(".om") else "onnxruntime")
    if args.compare_with and tool == "onnxruntime":
        if args.host or args.compare_with.suffix.lower() != ".onnx":
            raise UserError("--compare-with puts an .om next to its original model, or times two .onnx models here",
                            "--compare-with", "Give the .om as MODEL (with --host NAME for an Ascend host), or two "
                            ".onnx models without --host.")
        return _ab(args)
    if tool == "onnxruntime":
        if args.host and not args.model.lower().endswith(".onnx"):
            raise UserError("--host times an .onnx with Studio's engine there, or an .om with msame or ais_bench",
                            args.model, "Give an .onnx model, or an .om with --tool msame|ais_bench|msit.")
        from studio.commands._engine_host import print_result, run_op
        from studio.ops import bench

        print_result(run_op(bench, bench.Request.from_args(args), args.host, args.json), args.json)
        return 0
    return _bench_om(args, tool)


def _bench_om(args: argparse.Namespace, tool: str) -> int:
    """An .om timed with msame / ais_bench / msit here or on ``--host`` (:mod:`studio.ops.bench_om`, the
    Run panel's operation too); with ``--compare-with`` its original .onnx is timed here beside it."""
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.core.model_inputs import parse_input_shapes
    from studio.ops import bench_om

    context = None
    if args.host:
        from studio.commands._context import cli_context

        context = cli_context()
    files = [item.partition("=")[2] or item for item in args.input]
    out = Path(args.output) if args.output else None
    pair_out = args.compare_with is not None and out is not None  # two folders: out/npu and out/onnxruntime
    request = bench_om.Request(Path(args.model), tool, args.loop, args.warmup, args.device, files,
                               (out / "npu" if pair_out else out), args.compare_with,
                               parse_input_shapes(args.input_shape), out / "onnxruntime" if pair_out else None)
    pair = run_job(bench_om.run(request, args.host, context), on_progress=print_progress)
    if pair.reference is None:
        data = to_json(pair.npu)
        if out:
            data["folder"] = str(pair.npu.folder)
        print(json.dumps(data, indent=2) if args.json else pair.npu.report())
        if out and not args.json:
            print(f"written to {out} (open it in the profiler)")
        return 0
    data = to_json(pair)
    if out:
        data["folder"] = str(pair.npu.folder)
        data["compare_with"]["folder"] = str(pair.reference.folder)
    print(json.dumps(data, indent=2) if args.json else pair.report())
    if out and not args.json:
        print(f"written to {out}/npu and {out}/onnxruntime (open both in the profiler; its Compare tab puts them "
              "side by side)")
    return 0


def _ab(args: argparse.Namespace) -> int:
    """``studio bench NEW.onnx --compare-with BASE.onnx``: an interleaved A/B here."""
    from studio.commands._engine_host import use_providers
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.core.model_inputs import parse_input_files, parse_input_shapes
    from studio.tools.bench.ab_run import Side, ab_models

    if args.output:
        from studio.core.errors import UserError

        raise UserError("-o writes one benchmark; two .onnx models are compared without it", "-o",
                        "Drop -o, or time each model on its own: studio bench MODEL.onnx -o DIR.")
    use_providers(args)
    files, shapes = parse_input_files(args.input), parse_input_shapes(args.input_shape)
    base, new = Side(Path(args.compare_with), files, shapes), Side(Path(args.model), files, shapes)
    change = run_job(ab_models(base, new, args.budget, seed=args.seed), on_progress=None if args.json else print_progress)
    if args.json:
        print(json.dumps({"base": str(base.model), "new": str(new.model), "change": to_json(change)}, indent=2))
    else:
        print(f"baseline: {base.model}\nnew:      {new.model}\n{change.describe()}")
    return 0
