"""Inputs for a local profiling run: .npy files by input name, or seeded random data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from studio.errors import UserError

_DTYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def parse_input_specs(specs: list[str]) -> dict[str, Path]:
    """``["image=img.npy"]`` -> ``{"image": Path("img.npy")}`` (the ``--input`` option)."""
    inputs = {}
    for spec in specs:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            raise UserError(f"Bad --input {spec!r}", "--input", "Write --input NAME=FILE.npy (one per model input).")
        inputs[name] = Path(file)
    return inputs


def make_inputs(session: Any, files: dict[str, Path], seed: int) -> dict[str, np.ndarray]:
    """Feeds for every model input: the given .npy file, else random data (seeded; dynamic dims = 1)."""
    rng = np.random.default_rng(seed)
    known = {i.name for i in session.get_inputs()}
    unknown = set(files) - known
    if unknown:
        raise UserError(f"The model has no input named {', '.join(sorted(unknown))}", "--input",
                        f"Its inputs are: {', '.join(sorted(known))}.")
    feeds = {}
    for spec in session.get_inputs():
        dtype = _DTYPES.get(spec.type)
        if spec.name in files:
            path = files[spec.name]
            try:
                array = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise UserError(f"Cannot read input array: {exc}", path, "Give a .npy file written by numpy.save.") from exc
            feeds[spec.name] = array.astype(dtype) if dtype is not None and array.dtype != dtype else array
            continue
        if dtype is None:
            raise UserError(f"Cannot make random data for input {spec.name!r} of type {spec.type}", "--input",
                            f"Give it a file: --input {spec.name}=FILE.npy.")
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in spec.shape]
        if np.issubdtype(dtype, np.floating):
            feeds[spec.name] = rng.random(shape, dtype=np.float64).astype(dtype)
        elif dtype is np.bool_:
            feeds[spec.name] = rng.random(shape) > 0.5
        else:
            feeds[spec.name] = rng.integers(0, 10, shape).astype(dtype)
    return feeds
