"""``studio cross-check MODEL --host NAME``: the accuracy panel's "Compare here and on a host…".

Dumps the model here (ONNX Runtime on CPU) and with Studio's engine on the host (``--provider``
there, e.g. CUDAExecutionProvider) on the same input, and compares the host's dump against this
computer's op by op.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "cross-check"
HELP = "dump an ONNX model here and on a host on the same input, compare op by op"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, metavar="MODEL", help="ONNX model")
    parser.add_argument("--host", metavar="NAME", required=True, help="the host to compare with (see studio ssh list)")
    parser.add_argument("-o", "--output", type=Path, metavar="DIR",
                        help="folder for the two dumps and the CSV (default: the user cache folder)")
    from studio.commands._inputs import add_input_arguments

    add_input_arguments(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input data (default 0)")
    parser.add_argument("--check", action="store_true", help="exit 1 when any compared tensor fails")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    from studio.commands._engine_host import add_engine_arguments, add_provider_argument

    add_provider_argument(parser)
    add_engine_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from studio.commands._engine_host import run_check
    from studio.ops import cross_check

    return run_check(cross_check, args)
