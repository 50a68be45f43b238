"""Which model a reduced repro was cut from, written into the repro's own ONNX metadata.

A repro (``studio accuracy reduce``) is a few ops of a bigger model, opened in the graph panel to
be looked at; converting it fixes nothing. Its ``metadata_props`` name the model it came from, as a
path relative to the repro's folder (so a moved or shared workspace keeps the link), and a
"Convert…" on the repro converts that model.
"""

from __future__ import annotations

import os
from pathlib import Path

REPRO_OF = "studio.repro_of"  # metadata_props key: the original model, relative to the repro's folder


def repro_link(repro: Path, original: Path) -> str:
    """The value stored under :data:`REPRO_OF` in ``repro``: ``original`` relative to its folder."""
    return Path(os.path.relpath(Path(original).resolve(), Path(repro).resolve().parent)).as_posix()


def repro_original(repro: Path, metadata: dict) -> Path | None:
    """The model ``repro`` was cut from, from its metadata (the graph reader's ``meta:`` keys or the
    bare key); None when it names none or the file is not there."""
    value = metadata.get(f"meta:{REPRO_OF}") or metadata.get(REPRO_OF)
    if not value:
        return None
    original = (Path(repro).resolve().parent / value).resolve()
    return original if original.is_file() else None
