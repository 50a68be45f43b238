"""The words of the pictures' options (``--size HxW``, ``--mean R,G,B``): read from a command line
and written back, so ``studio infer`` and ``studio quantize`` take them alike."""

from __future__ import annotations

import argparse


def parse_size(text: str) -> tuple[int, int]:
    """``"640x640"`` (or ``"640,640"``) as (height, width); argparse names a malformed one."""
    parts = text.lower().replace(",", "x").split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not HEIGHTxWIDTH, e.g. 640x640")
    return int(parts[0]), int(parts[1])


def size_word(size: tuple[int, int]) -> str:
    """The word :func:`parse_size` reads back as ``size``."""
    return f"{size[0]}x{size[1]}"


def parse_triple(text: str) -> tuple[float, float, float]:
    """``"127.5,127.5,127.5"`` as three floats (a per-channel mean or std)."""
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3:
        raise argparse.ArgumentTypeError(f"{text!r} is not three numbers R,G,B")
    return values


def triple_word(values) -> str:
    """The word :func:`parse_triple` reads back as ``values``."""
    return ",".join(f"{v:g}" for v in values)
