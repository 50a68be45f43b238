"""``studio fp16-check MODEL``: the graph panel's "FP16 check" on the command line.

Dumps the model in FP32 and in FP16 simulation with the same seeded input (here, or with
Studio's engine on ``--host NAME``), compares the two op by op and runs the advisor (FP16
overflow, first op that drifts).
"""

from __future__ import annotations

import argparse

NAME = "fp16-check"
HELP = "dump an ONNX model in FP32 and FP16 simulation, compare op by op, say where FP16 loses accuracy"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.fp16_check import Request

    add_request_arguments(parser, Request, "model", "output", "inputs", "shapes", "seed")
    parser.add_argument("--check", action="store_true", help="exit 1 when the FP16 verdict on the outputs is FAIL")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--host", metavar="NAME", help="make both dumps with Studio's engine on this host (see "
                        "studio ssh list); they come back and are compared here")
    add_request_arguments(parser, Request)  # --provider, the host engine's options, the thresholds


def run(args: argparse.Namespace) -> int:
    from studio.commands._engine_host import run_check
    from studio.ops import fp16_check

    return run_check(fp16_check, args)
