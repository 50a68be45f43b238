"""Parsing ONNX protobuf without holding the interpreter for long: in slices, and in a worker process.

``onnx.load`` of a 100,000-node model is one C call of ~0.5 s, and ONNX shape inference of a
50,000-node model one of ~3 s; either, in a thread of the GUI's interpreter, freezes the window
for as long. Here the model's bytes are cut (with the schema-free wire reader) into the graph's
fields, which are merged into the message a few hundred kB at a time, so the interpreter can switch
to the GUI thread between slices; shape inference runs in a worker process
(:func:`studio.core.workers.run_in_worker`) that writes the inferred model to a scratch file, read back
the same sliced way. The resulting ``ModelProto`` is the one ``onnx.load`` gives.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

from studio.core.jobs import CancelToken, Progress, run_job

SLICE_BYTES = 256 << 10  # ~10 ms of protobuf parsing per slice
# Why this hand-written slicer stays beside the protobuf runtime (measured on a quiet machine,
# 2 cores, 5 opens each, median (spread); "stall" = the longest pause of a 1 ms ticker thread,
# what the GUI thread would feel while a job opens the model):
#   table_obj_det_int8.onnx (98 MB, biggest corpus model): sliced 97 (83) ms, stall 15 (4) ms;
#                                                          onnx.load 89 (3) ms, stall 34 (1) ms
#   stress_chain_100k.onnx (100,000 nodes):                sliced 31 (4) ms, stall 7 (2) ms;
#                                                          onnx.load 17 (4) ms, stall 15 (2) ms
#   minilm_l3.onnx (few big initializers):                 sliced 86 (18) ms, stall 36 (3) ms;
#                                                          onnx.load 57 (4) ms, stall 21 (4) ms
# It halves the stall on big graphs (the longest slice, not the file, bounds it) at some cost in
# total time; a single big tensor field cannot be cut, so weight-heavy models gain nothing.
INCREMENTAL = True  # False: one onnx.load (benchmarks compare both)
INFER_IN_WORKER_NODES = 2_000  # above this many nodes, or INFER_IN_WORKER_BYTES (inference
INFER_IN_WORKER_BYTES = 8 << 20  # serializes the whole model first: 1 s for 200 MB), in a worker
_GRAPH_FIELD = 7  # ModelProto.graph


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message (the slicer then leaves them to protobuf)."""


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Decode one varint at ``pos``; return (value, next position)."""
    result = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise WireError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise WireError("varint too long")


def load_proto(path: Path) -> Any:
    """The ``ModelProto`` at ``path`` (external data not loaded), parsed slice by slice.

    Raises what ``onnx.load`` raises for broken files (bytes that are not protobuf fall back to it).
    """
    import onnx

    if not INCREMENTAL:
        return onnx.load(str(path), load_external_data=False)
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        top = _fields(data, 0, len(data))
    except WireError:
        return onnx.load(str(path), load_external_data=False)  # its own error for broken files
    proto = onnx.ModelProto()
    proto.ParseFromString(b"".join(data[start:end] for number, start, end, _, _ in top if number != _GRAPH_FIELD))
    for number, _, _, inner_start, inner_end in top:
        if number != _GRAPH_FIELD:
            continue
        try:
            cuts = _slices(data, inner_start, inner_end, SLICE_BYTES)
        except WireError:
            cuts = [(inner_start, inner_end)]  # MergeFromString gives protobuf's own error
        for start, end in cuts:  # the graph's fields are contiguous: merge them a slice at a time
            proto.graph.MergeFromString(data[start:end])  # repeated fields append
    return proto


def _skip_scalar(data: bytes, pos: int, wire: int) -> int:
    """The position after a value of the non-length-delimited ``wire`` type (varint, 64-bit or
    32-bit) at ``pos``; a WireError for any other wire type."""
    if wire == 0:
        return read_varint(data, pos)[1]
    if wire == 5:
        return pos + 4
    if wire == 1:
        return pos + 8
    raise WireError(f"wire type {wire}")


def _slices(data: bytes, pos: int, end: int, step: int) -> list[tuple[int, int]]:
    """Contiguous ranges of whole fields of the message in ``data[pos:end]``, each about ``step``
    bytes. The loop is the hot path for 100k-node graphs: one-byte tags and lengths inline."""
    cuts, first = [], pos
    while pos < end:
        tag = data[pos]
        pos += 1
        if tag & 0x80:
            tag, pos = read_varint(data, pos - 1)
        wire = tag & 7
        if wire == 2:
            size = data[pos]
            pos += 1
            if size & 0x80:
                size, pos = read_varint(data, pos - 1)
            pos += size
        else:
            pos = _skip_scalar(data, pos, wire)
        if tag >> 3 == 0 or pos > end:
            raise WireError("not a protobuf message")
        if pos - first >= step:
            cuts.append((first, pos))
            first = pos
    if first < end:
        cuts.append((first, end))
    return cuts


def _fields(data: bytes, pos: int, end: int) -> list[tuple[int, int, int, int, int]]:
    """Top-level fields of the message in ``data[pos:end]``: (number, start, end, payload start,
    payload end); the payload bounds matter for length-delimited fields only."""
    fields = []
    while pos < end:
        start = pos
        tag, pos = read_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise WireError("field number 0")
        payload = pos
        if wire == 2:
            size, payload = read_varint(data, pos)
            pos = payload + size
        else:
            pos = _skip_scalar(data, pos, wire)
        if pos > end:
            raise WireError(f"field {number} runs past the end")
        fields.append((number, start, pos, payload, pos))
    return fields


def infer_shapes(path: Path, proto: Any, cancel: CancelToken | None = None) -> tuple[Any, list[str]]:
    """(inferred ModelProto, warnings) for the model at ``path``; big models are inferred in a
    worker process, small ones here. Never raises for an inference failure: it becomes a warning."""
    try:
        size = Path(path).stat().st_size
    except OSError:
        size = 0
    if len(proto.graph.node) <= INFER_IN_WORKER_NODES and size <= INFER_IN_WORKER_BYTES:
        return _infer_here(proto)
    from studio.core.workers import WorkerUnavailable, run_in_worker

    try:
        inferred_path, warnings = run_job(run_in_worker("studio.tools.graph.onnx_parse:infer_to_file", str(path),
                                                        cancel=cancel), cancel)
    except WorkerUnavailable:
        return _infer_here(proto)
    if inferred_path is None:
        return proto, warnings
    try:
        return load_proto(Path(inferred_path)), warnings
    finally:
        os.unlink(inferred_path)


def _infer_here(proto: Any) -> tuple[Any, list[str]]:
    import onnx

    try:
        return onnx.shape_inference.infer_shapes(proto, strict_mode=True), []
    except Exception as exc:  # noqa: BLE001 - inference failures are shown, not fatal
        warning = f"shape inference failed: {str(exc).strip().splitlines()[0][:300]}"
        try:  # keep what can be inferred around the failing op
            return onnx.shape_inference.infer_shapes(proto, strict_mode=False), [warning]
        except Exception:  # noqa: BLE001
            return proto, [warning]


def infer_to_file(path: str, cancel: CancelToken | None = None) -> Generator[Progress, None, tuple[str | None, list]]:
    """Worker side of :func:`infer_shapes`: infer the model at ``path`` into a scratch file."""
    yield Progress(None, "inferring shapes")
    proto = load_proto(Path(path))
    inferred, warnings = _infer_here(proto)
    if inferred is proto:
        return None, warnings
    handle, out = tempfile.mkstemp(prefix="studio-inferred-", suffix=".onnx")
    with os.fdopen(handle, "wb") as stream:
        stream.write(inferred.SerializeToString())
    return out, warnings
