"""``studio fp16-check MODEL``: the graph panel's "FP16 check" on the command line.

Dumps the model in FP32 and in FP16 simulation with the same seeded input (here, or with
Studio's engine on ``--host NAME``), compares the two op by op and runs the advisor (FP16
overflow, first op that drifts).
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--check", action="store_true", help="exit 1 when the FP16 verdict on the outputs is FAIL")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--host", metavar="NAME", help="make both dumps with Studio's engine on this host (see "
                        "studio ssh list); they come back and are compared here")
    from studio.commands._engine_host import add_engine_arguments, add_provider_argument

    add_provider_argument(parser)
    add_engine_arguments(parser)
    from studio.core.thresholds import add_threshold_arguments

    add_threshold_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from studio.commands._engine_host import run_check
    from studio.ops import fp16_check

    return run_check(fp16_check, args)
