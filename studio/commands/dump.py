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
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.dump import Request

    add_request_arguments(parser, Request, "model", "output", "inputs", "shapes", "seed", "fp16_sim")
    parser.add_argument("--txt", action="store_true", help="convert: also write a .txt per tensor")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    from studio.commands._onhost import add_dump_host_arguments

    add_dump_host_arguments(parser)
    add_request_arguments(parser, Request)  # --provider, the host engine's options


def run(args: argparse.Namespace) -> int:
    from studio.core.errors import UserError

    from studio.commands._engine_host import is_engine_model, use_providers

    if args.host and not args.config and args.model is None and len(args.paths) == 1 \
            and is_engine_model(args.paths[0]):
        return _dump(args)
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
    return _dump(args)


def _dump(args: argparse.Namespace) -> int:
    from studio.commands._engine_host import print_result, run_op
    from studio.ops import dump

    request = dump.Request.from_args(args)
    print_result(run_op(dump, request, args.host, args.json), args.json, model=request.model)
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
