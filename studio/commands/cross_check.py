"""``studio cross-check MODEL --host NAME``: the accuracy panel's "Compare here and on a host…".

Dumps the model here (ONNX Runtime on CPU) and with Studio's engine on the host (``--provider``
there, e.g. CUDAExecutionProvider) on the same input, and compares the host's dump against this
computer's op by op.
"""

from __future__ import annotations

import argparse

NAME = "cross-check"
HELP = "dump an ONNX model here and on a host on the same input, compare op by op"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.cross_check import Request

    add_request_arguments(parser, Request, "model")
    parser.add_argument("--host", metavar="NAME", required=True, help="the host to compare with (see studio ssh list)")
    add_request_arguments(parser, Request, "output", "inputs", "shapes", "seed")
    parser.add_argument("--check", action="store_true", help="exit 1 when any compared tensor fails")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    add_request_arguments(parser, Request)  # --provider, the host engine's options


def run(args: argparse.Namespace) -> int:
    from studio.commands._engine_host import run_check
    from studio.ops import cross_check

    return run_check(cross_check, args)
