"""``--input NAME=FILE.npy`` and ``--input-shape "name:1,3,640,640;..."`` for commands that run a model."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The two ways to give a model's inputs: data, or sizes for the dynamic dims (random data)."""
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                        help="data for a model input (repeatable); other inputs get seeded random data")
    parser.add_argument("--input-shape", "--input_shape", metavar='"NAME:1,3,640,640;..."',
                        help="sizes for inputs with dynamic dims (seeded random data of that shape)")


def parse_inputs(items: list[str]) -> dict:
    """``--input`` values -> {name: array} (files read and checked)."""
    from studio.errors import UserError
    from studio.npyfile import load_npy

    given = {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            raise UserError(f"--input {item!r} is not NAME=FILE.npy", "--input", "Example: --input image=image.npy")
        if name in given:
            raise UserError(f"--input {name} is given twice", "--input", "Give each input once.")
        given[name] = load_npy(Path(file), what=f"--input {name}")
    return given


def parse_shapes(text: str | None) -> dict[str, list[int]]:
    """``--input-shape`` -> {name: dims} (fixed sizes only)."""
    if not text:
        return {}
    from studio.commands._spelling import cli_error
    from studio.errors import UserError
    from studio.tools.convert.input_shape import parse_input_shape

    try:
        specs = parse_input_shape(text, allow_dynamic=False)
    except UserError as exc:
        raise cli_error(exc) from exc
    return {name: list(spec.dims) for name, spec in specs.items()}
