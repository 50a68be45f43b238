"""The files an ONNX model needs besides itself: its external data, checked before anyone loads it.

A model saved with ``save_as_external_data`` keeps its weights in side files named in each
tensor (``location``, ``offset``, ``length``), relative to the model's folder. Copy the ``.onnx``
alone and onnx, ONNX Runtime and the converters each fail in their own words (a "truncated
model", a C++ path check, or nothing at all). :func:`external_data_problem` says it once, the
same way for every command: which file, how many bytes, for which tensor.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.core.errors import UserError


@dataclass
class _Needed:
    location: str
    tensor: str
    tensors: int
    end: int  # bytes the file must hold for every tensor that reads it


def _tensors(graph: Any) -> Iterator[Any]:
    """Every TensorProto of ``graph``: initializers, Constant values, and those of subgraphs."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _tensors(attr.g)
            for sub in attr.graphs:
                yield from _tensors(sub)


def _byte_length(tensor: Any, info: dict[str, str]) -> int:
    if info.get("length"):
        return int(info["length"])
    from onnx import helper

    count = 1
    for dim in tensor.dims:
        count *= int(dim)
    try:
        return count * helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, TypeError, ValueError):
        return 0


def external_data_problem(model: Any, path: Path | str) -> UserError | None:
    """A UserError for the first external data file of ``model`` (a ModelProto read without its
    external data, from ``path``) that is missing or shorter than its tensors need; None when
    every file is there."""
    path = Path(path)
    folder = path.parent
    needed: dict[str, _Needed] = {}
    for tensor in _tensors(model.graph):
        if tensor.data_location != tensor.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        end = int(info.get("offset", 0) or 0) + _byte_length(tensor, info)
        entry = needed.get(location)
        if entry is None:
            needed[location] = _Needed(location, tensor.name, 1, end)
        else:
            entry.tensors += 1
            entry.end = max(entry.end, end)
    for entry in needed.values():
        file = folder / entry.location
        more = f" and {entry.tensors - 1:,} more" if entry.tensors > 1 else ""
        what = f"{entry.end:,} bytes, for tensor {entry.tensor!r}{more}"
        if not entry.location or not file.is_file():
            return UserError(f"external data file {entry.location!r} ({what}) not found next to the model",
                             path, f"Copy {entry.location!r} into {folder} (the model reads its weights from "
                             "there), or save the model with its weights inside it.")
        size = file.stat().st_size
        if size < entry.end:
            return UserError(f"external data file {entry.location!r} holds {size:,} bytes; the model reads "
                             f"{what}", file, "The file is truncated or belongs to another model: copy it again "
                             "with the model.")
    return None


def check_external_data(path: Path | str) -> None:
    """Raise :func:`external_data_problem` 's error for the ONNX model at ``path``, if any.
    A file onnx cannot parse is left to the caller's own reader (and its message)."""
    import onnx

    path = Path(path)
    if path.suffix.lower() != ".onnx" or not path.is_file():
        return
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - not parseable: the caller's reader says why
        return
    problem = external_data_problem(model, path)
    if problem is not None:
        raise problem


def load_with_external_data(path: Path | str) -> Any:
    """``onnx.load`` of ``path``, external data checked first (:func:`external_data_problem`) and
    then read. onnx's own exceptions for a file that is not ONNX pass to the caller."""
    import onnx
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    path = Path(path)
    model = onnx.load(str(path), load_external_data=False)
    problem = external_data_problem(model, path)
    if problem is not None:
        raise problem
    if any(uses_external_data(t) for t in _tensors(model.graph)):
        load_external_data_for_model(model, str(path.parent))
    return model
