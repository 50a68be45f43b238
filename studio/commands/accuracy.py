"""``studio accuracy reduce MODEL -o DIR``: the smallest subgraph that still fails in FP16, as a repro."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "accuracy"
HELP = "reduce a model that fails in FP16 to a minimal repro (model, inputs, commands, report)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="accuracy_command", metavar="{reduce}", required=True)
    reduce = sub.add_parser("reduce", help="cut the first op that goes wrong in FP16, fed with FP32 tensors, down "
                                           "to the fewest ops that still fail")
    reduce.add_argument("model", type=Path, metavar="MODEL")
    reduce.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                        help="folder for model.onnx, inputs.npz, golden_outputs.npz, commands.sh, report.md")
    reduce.add_argument("--target", choices=("fp16-sim",), default="fp16-sim",
                        help="what to check against FP32: fp16-sim (every op's output rounded through FP16)")
    reduce.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                        help="data for an input (repeatable); others get seeded random data")
    reduce.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    reduce.add_argument("--cosine", type=float, default=0.99, help="cosine threshold (default 0.99)")
    reduce.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    from studio.commands._inputs import parse_inputs
    from studio.commands._progress import print_progress
    from studio.jobs import run_job
    from studio.tools.accuracy.metrics import Thresholds
    from studio.tools.accuracy.reduce import reduce_fp16

    thresholds = Thresholds(cosine=args.cosine)
    result = run_job(reduce_fp16(args.model, args.output, parse_inputs(args.input), args.seed, thresholds),
                     on_progress=None if args.json else print_progress)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
        return 0
    print(f"{args.model.name}: first diverging op {result.first_op} ({result.first_op_type}): {result.reason}")
    print(f"repro: {len(result.ops)} of {result.model_ops:,} ops ({', '.join(result.ops)}), fed at "
          f"{', '.join(result.inputs) or 'the model inputs'}; {result.target_runs} target runs")
    for note in result.notes:
        print(f"  {note}")
    print(f"wrote {result.folder}/ (model.onnx, inputs.npz, golden_outputs.npz, commands.sh, report.md)")
    return 0
