"""``studio fp16-check MODEL``: the graph panel's "FP16 check" on the command line.

Dumps the model in FP32 and in FP16 simulation with the same seeded input, compares the two op
by op and runs the advisor (FP16 overflow, first op that drifts).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "fp16-check"
HELP = "dump an ONNX model in FP32 and FP16 simulation, compare op by op, say where FP16 loses accuracy"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, metavar="MODEL", help="ONNX model")
    parser.add_argument("-o", "--output", type=Path, metavar="DIR",
                        help="folder for the two dumps and the CSV (default: the user cache folder)")
    from studio.commands._inputs import add_input_arguments

    add_input_arguments(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input data (default 0)")
    parser.add_argument("--cosine", type=float, default=0.99, help="cosine threshold (default 0.99)")
    parser.add_argument("--check", action="store_true", help="exit 1 when any compared tensor fails")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.jobs import run_job
    from studio.commands._inputs import parse_inputs, parse_shapes
    from studio.tools.accuracy.fp16_check import csv_path, fp16_check_job, fp16_folders
    from studio.tools.accuracy.metrics import Thresholds

    thresholds = Thresholds(cosine=args.cosine)
    inputs, shapes = parse_inputs(args.input), parse_shapes(args.input_shape)
    golden, target = fp16_folders(args.model, None)  # <cache>/accuracy/<stem>_fp32, _fp16sim
    if args.output:
        golden, target = args.output / golden.name, args.output / target.name
    result = run_job(fp16_check_job(args.model, golden, target, inputs=inputs, shapes=shapes, seed=args.seed,
                                    thresholds=thresholds), on_progress=print_progress)
    from studio.tools.accuracy.dumpset import read_manifest

    warnings = read_manifest(golden).info.get("warnings") or []  # the same input and outputs on both sides
    if args.json:
        data = result.to_json()
        data.update(golden=str(golden), target=str(target), csv=str(csv_path(golden)), warnings=warnings)
        print(json.dumps(data, indent=1))
    else:
        print(result)
        for warning in warnings:
            print(f"warning: {warning}")
        print(f"dumps: {golden} (FP32), {target} (FP16 simulation); table: {csv_path(golden)}")
    return 1 if args.check and not result else 0
