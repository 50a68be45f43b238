"""Deterministic input data for a corpus model, from its :class:`~.manifest.InputSpec` entries.

The element type comes from the model itself, so the same spec serves FP32 and FP16 copies.
Written as ``.npy`` files so every CLI can be given them with ``--input NAME=FILE.npy``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from studio.tools.corpus.manifest import Entry, InputSpec


def model_input_types(model_path: Path) -> dict[str, np.dtype]:
    """Input name -> numpy dtype of a model's real inputs (initializers excluded)."""
    import onnx
    from onnx import helper

    model = onnx.load(str(model_path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    return {i.name: np.dtype(helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
            for i in model.graph.input if i.name not in inits}


def make_array(spec: InputSpec, dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """One input tensor as ``spec`` describes it. Strings come as a fixed-width unicode array (not
    numpy's object dtype), so the ``.npy`` file loads without pickle, as a user's would."""
    kind, _, arg = spec.fill.partition(":")
    if kind == "rand":
        return rng.random(spec.shape).astype(dtype)
    if kind == "normal":
        return rng.standard_normal(spec.shape).astype(dtype)
    if kind == "mask":
        # right padding, as tokenizers pad a batch: ones, then the last K positions of each row 0
        mask = np.ones(spec.shape, dtype)
        padded = int(arg)
        if not 0 < padded < spec.shape[-1]:
            raise ValueError(f"fill {spec.fill!r}: pad between 1 and {spec.shape[-1] - 1} positions")
        mask[..., -padded:] = 0
        return mask
    if kind == "strings":
        values = np.array(arg.split(","), dtype=str)
        return values[rng.integers(0, len(values), size=spec.shape)]
    if kind == "zeros":
        return np.zeros(spec.shape, dtype)
    if kind == "ones":
        return np.ones(spec.shape, dtype)
    if kind == "ids":
        return rng.integers(0, int(arg), size=spec.shape).astype(dtype)
    if kind == "value":
        return np.full(spec.shape, float(arg)).astype(dtype)
    raise ValueError(f"unknown fill {spec.fill!r}")


def make_inputs(entry: Entry, model_path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """All inputs of ``entry``'s model, seeded; names the model declares but the entry does not
    describe are an error (a new input must be described, never guessed)."""
    types = model_input_types(model_path)
    missing = sorted(set(types) - set(entry.inputs))
    if missing:
        raise ValueError(f"{entry.id}: no input spec for {missing}")
    rng = np.random.default_rng(seed)
    return {name: make_array(entry.inputs[name], types[name], rng) for name in types}


def write_inputs(arrays: dict[str, np.ndarray], folder: Path) -> dict[str, Path]:
    """Write each input as ``folder/<index>.npy`` (names may hold ``/``); returns name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i, (name, array) in enumerate(arrays.items()):
        path = folder / f"input{i}.npy"
        np.save(path, array)
        paths[name] = path
    return paths
