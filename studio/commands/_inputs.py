"""``--input NAME=FILE.npy`` and ``--input-shape`` values read for commands whose options are not declared on
a Request yet (the declared ones are in :class:`studio.ops.inputs.ModelRun`)."""

from __future__ import annotations

from pathlib import Path


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
