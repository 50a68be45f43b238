"""``--input NAME=FILE.npy`` and ``--input-shape "name:1,3,640,640;..."`` for commands that run a model."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The two ways to give a model's inputs: data, or sizes for the dynamic dims (random data)."""
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                        help="data for a model input (repeatable); other inputs get seeded random data")
    parser.add_argument("--input-shape", "--input_shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="sizes for an input with dynamic dims (repeatable; ATC's \"a:1,3;b:2\" works too); "
                             "seeded random data of that shape")


def parse_inputs(items: list[str]) -> dict:
    """``--input`` values -> {name: array} (files read and checked)."""
    from studio.core.errors import UserError
    from studio.core.npyfile import load_npy

    given = {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            raise UserError(f"--input {item!r} is not NAME=FILE.npy", "--input", "Example: --input image=image.npy")
        if name in given:
            raise UserError(f"--input {name} is given twice", "--input", "Give each input once.")
        given[name] = load_npy(Path(file), what=f"--input {name}", text=True)
    return given


def parse_shapes(items: list[str] | None) -> dict[str, list[int]]:
    """``--input-shape`` values -> {name: dims}, read as every other command reads them."""
    from studio.core.model_inputs import parse_input_shapes

    return {name: list(dims) for name, dims in parse_input_shapes(items).items()}
