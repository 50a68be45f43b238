"""The size ``studio infer`` feeds pictures at: ``--input-shape NAME=DIMS`` (the spelling of
every command that sizes a model input) or the older ``--size HxW``
(:func:`studio.tools.infer.words.parse_size`).

A picture model has one picture input, so its shape gives the height and width: ``1,3,H,W``
(channels first) or ``1,H,W,3`` (channels last), told apart by which end holds the 1, 3 or 4
channels; a shape where both ends or neither could be the channels is refused, never guessed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from studio.core.errors import UserError

CHANNELS = (1, 3, 4)  # grey, RGB/BGR, RGBA
OPTION = "--input-shape"


def picture_size(text: str | None, model: Path | None = None) -> tuple[int, int] | None:
    """(height, width) of ``--input-shape NAME=DIMS`` or ``--size HxW``; the name is checked
    against ``model``'s inputs when it is an ONNX file here."""
    if text is None:
        return None
    if "=" not in text and ":" not in text:  # the old --size HxW
        from studio.tools.infer.words import parse_size

        try:
            return parse_size(text)
        except argparse.ArgumentTypeError as exc:
            raise UserError(f"Bad {OPTION} {text!r}", OPTION, "Write NAME=1,3,H,W (channels first), NAME=1,H,W,3 "
                                                              "(channels last) or HxW, e.g. 640x640.") from exc
    from studio.core.model_inputs import parse_input_shapes
    from studio.ops.inputs import model_input_names

    shapes = parse_input_shapes([text], OPTION, names=model_input_names(model) if model is not None else None)
    if len(shapes) != 1:
        raise UserError(f"{OPTION} {text!r} sizes {len(shapes)} inputs; pictures feed one", OPTION,
                        "Give the picture input's shape only, e.g. images=1,3,640,640.")
    (name, dims), = shapes.items()
    return _from_dims(name, list(dims))


def _from_dims(name: str, dims: list[int]) -> tuple[int, int]:
    shown = f"{name}={','.join(str(d) for d in dims)}"
    if len(dims) != 4 or any(d <= 0 for d in dims):
        raise UserError(f"{OPTION} {shown} is not the shape of a picture batch", OPTION,
                        f"Give four sizes: {name}=1,3,H,W (channels first) or {name}=1,H,W,3 (channels last).")
    if dims[0] != 1:
        raise UserError(f"{OPTION} {shown} has a batch of {dims[0]}; pictures are fed one at a time", OPTION,
                        f"Give a batch of 1: {name}=1,{','.join(str(d) for d in dims[1:])}.")
    first, last = dims[1] in CHANNELS, dims[3] in CHANNELS
    if first == last:
        which = "both ends" if first else "neither end"
        raise UserError(f"{OPTION} {shown}: {which} of the shape can be the channels (1, 3 or 4), so the height "
                        "and width cannot be told", OPTION, "Give the size as HxW instead, e.g. --input-shape 640x640.")
    return (dims[2], dims[3]) if first else (dims[1], dims[2])
