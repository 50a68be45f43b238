"""``studio dump``: dump every tensor of an ONNX model, or convert an NPU dump file to .npy.

``studio dump MODEL -o DIR [--input NAME=FILE.npy ...] [--seed N] [--fp16-sim]``
``studio dump convert FILE -o DIR [--txt]``
``studio dump --host NAME --config RUN --model MODEL.om -o DIR`` (on an Ascend host; see _onhost.py)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "dump"
HELP = "dump every op output of an ONNX model (FP32 or FP16 simulation), or convert an NPU dump file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = ("studio dump MODEL -o DIR [--input NAME=FILE.npy ...] [--input-shape SPEC] [--seed N] [--fp16-sim] "
                    "[--json]\n"
                    "       studio dump convert FILE -o DIR [--txt] [--json]\n"
                    "       studio dump --host NAME --config RUN --model MODEL.om -o DIR [--layer OP ...]\n"
                    "       studio dump MODEL.onnx --host NAME -o DIR [--provider NAME]  (Studio's engine there)")
    parser.add_argument("paths", nargs="*", metavar="MODEL | convert FILE",
                        help="an ONNX model, or `convert` and an Ascend NPU dump file")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder to write into")
    from studio.commands._inputs import add_input_arguments

    add_input_arguments(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input data (default 0)")
    parser.add_argument("--fp16-sim", action="store_true",
                        help="simulate an FP16 device: weights and every op output rounded through FP16")
    parser.add_argument("--txt", action="store_true", help="convert: also write a .txt per tensor")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    from studio.commands._onhost import add_dump_host_arguments

    add_dump_host_arguments(parser)
    from studio.commands._engine_host import add_engine_arguments, add_provider_argument

    add_provider_argument(parser)
    add_engine_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from studio.errors import UserError

    from studio.commands._engine_host import is_engine_model, use_providers

    if args.host and not args.config and args.model is None and len(args.paths) == 1 \
            and is_engine_model(args.paths[0]):
        from studio.commands._engine_host import dump_cli

        return dump_cli(args, Path(args.paths[0]))
    use_providers(args)
    if args.host:
        from studio.commands._onhost import dump_on_host_cli

        return dump_on_host_cli(args)
    if not args.paths:
        raise UserError("`studio dump` needs a model", "MODEL", "Run: studio dump MODEL -o DIR")
    if args.paths[0] == "convert" and not Path("convert").exists():
        if len(args.paths) != 2:
            raise UserError("`studio dump convert` takes one NPU dump file", " ".join(args.paths[1:]) or None,
                            "Run: studio dump convert FILE -o DIR")
        return _convert(Path(args.paths[1]), args)
    if len(args.paths) != 1:
        raise UserError("`studio dump` takes one model", " ".join(args.paths),
                        "Run: studio dump MODEL -o DIR (or studio dump convert FILE -o DIR)")
    return _dump(Path(args.paths[0]), args)


def _dump(model: Path, args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.jobs import run_job
    from studio.tools.accuracy.dumpset import MODE_LABELS, load_dump
    from studio.tools.accuracy.local_dump import dump_model

    from studio.commands._inputs import parse_inputs, parse_shapes

    out = run_job(dump_model(model, args.output, parse_inputs(args.input), seed=args.seed,
                             fp16_sim=args.fp16_sim, shapes=parse_shapes(args.input_shape)),
                  on_progress=print_progress)
    dump = load_dump(out)
    if args.json:
        print(json.dumps({"dir": str(out), "mode": dump.mode, "model": dump.model, "tensors": len(dump.entries),
                          "inputs": dump.info.get("inputs", {}),
                          "fp16_sim_unrounded": dump.info.get("fp16_sim_unrounded", []),
                          "warnings": dump.info.get("warnings", [])}, indent=2))
    else:
        print(f"{MODE_LABELS[dump.mode]}")
        print(f"dumped {len(dump.entries)} tensors of {model} to {out}")
        for name, info in dump.info.get("inputs", {}).items():
            shape = f"{info['dtype']} {info['shape']} " if "shape" in info else ""
            print(f"  input {name}: {info['source']}" + (f" ({shape.strip()})" if shape else ""))
        sub = dump.info.get("subgraphs") or {}
        if sub.get("ops"):
            print(f"  note: {sub['ops']} op(s) inside the sub-graphs of {', '.join(sub.get('nodes', [])[:5])} ran "
                  "but are not dumped (ONNX Runtime returns top-level tensors only)")
        for warning in dump.info.get("warnings") or []:
            print(f"  warning: {warning}")
        unrounded = dump.info.get("fp16_sim_unrounded") or []
        if unrounded:
            print(f"  note: {len(unrounded)} op output(s) of unknown type were not rounded to FP16: "
                  + ", ".join(unrounded[:5]) + (" ..." if len(unrounded) > 5 else ""))
    return 0


def _convert(file: Path, args: argparse.Namespace) -> int:
    from studio.tools.accuracy import npu_dump

    dump = npu_dump.read_header(file)
    written = npu_dump.convert(file, args.output, txt=args.txt)
    if args.json:
        print(json.dumps({"file": str(file), "op_type": dump.op_type, "op_name": dump.op_name,
                          "written": [str(p) for p in written]}, indent=2))
    else:
        print(f"{dump.op_type} {dump.op_name}: {len(dump.inputs)} input(s), {len(dump.outputs)} output(s)")
        for path in written:
            print(f"  wrote {path}")
    return 0
