"""Calibration and evaluation samples: a list of ``{input name: array}`` feeds, one per sample.

A folder of pictures becomes samples in the operations layer (with ``studio infer``'s
preprocessing, :mod:`studio.ops.quantize`); here are the ``.npz`` reader, the checks every
source goes through, and the adapter ONNX Runtime's calibrator reads.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from studio.core.errors import UserError

Feeds = dict[str, np.ndarray]


def npz_samples(path: Path, inputs: dict[str, tuple]) -> list[Feeds]:
    """Samples from an ``.npz`` whose arrays are named after the model's ``inputs`` (name -> shape,
    dims None when dynamic), samples along the first axis: each sample keeps that axis as 1."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise UserError(f"Cannot read the calibration arrays ({exc})", path,
                        "Give an .npz written by numpy.savez, one array per model input.") from exc
    missing = [name for name in inputs if name not in arrays]
    if missing:
        raise UserError(f"The calibration file has no array for input(s) {', '.join(missing)} "
                        f"(it holds: {', '.join(arrays) or 'nothing'})", path,
                        "Name each array after a model input: numpy.savez(FILE, **{input_name: samples}).")
    counts = {name: int(arrays[name].shape[0]) if arrays[name].ndim else 0 for name in inputs}
    if len(set(counts.values())) != 1 or not next(iter(counts.values()), 0):
        raise UserError(f"The calibration arrays need the same number (> 0) of samples along their first axis; "
                        f"they have {counts}", path, "Stack the samples along axis 0 of every array.")
    return [{name: np.ascontiguousarray(arrays[name][i:i + 1]) for name in inputs}
            for i in range(next(iter(counts.values())))]


def check_samples(samples: list[Feeds], inputs: dict[str, tuple], where: Path | str) -> list[Feeds]:
    """``samples`` when there is at least one and each matches the model's inputs; a UserError otherwise."""
    if not samples:
        raise UserError("No calibration samples", where,
                        "Give a folder with readable pictures, or an .npz with at least one sample per input.")
    for name, shape in inputs.items():
        got = samples[0][name].shape
        fixed = [(i, d) for i, d in enumerate(shape) if isinstance(d, int) and d > 0]
        if len(got) != len(shape) or any(got[i] != d for i, d in fixed):
            raise UserError(f"Calibration samples of input {name!r} have shape {list(got)}; the model takes "
                            f"{[d if isinstance(d, int) else '?' for d in shape]}", where,
                            "Give arrays (or a preprocessing: --input-shape, --layout) that match the model's input.")
    return samples


def reader(samples: list[Feeds]):
    """ONNX Runtime's ``CalibrationDataReader`` over ``samples``."""
    from onnxruntime.quantization import CalibrationDataReader

    class _Reader(CalibrationDataReader):
        def __init__(self):
            self._items = iter(samples)

        def get_next(self):
            return next(self._items, None)

        def __len__(self):
            return len(samples)

    return _Reader()
