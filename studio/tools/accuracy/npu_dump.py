"""Ascend NPU dump files (written by acl.json ``dump`` configurations).

Layout (MSTT ``AclDumpDataProcessor.cpp``)::

    offset 0      uint64 LE header_len
    offset 8      header_len bytes: protobuf toolkit.dumpdata.DumpData
    then          input[0].size, input[1].size, ..., output[0].size, ... raw bytes (then buffers)

File name: ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}`` (4-token names without a
stream id occur too); folders ``{dump_path}/{time}/{device}/{model}/{model_id}/{data_index}/``.
Reading is strict: a header or tensor running past the end of the file is a UserError naming the
file, the tensor and the byte offset.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from studio.core.errors import UserError
from studio.core.safe_read import open_regular
from studio.tools.accuracy import npu_layout
from studio.tools.accuracy.dump_proto import DumpData

_NAME5 = re.compile(r"^(?P<type>[^.]+)\.(?P<op>.+)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<ts>\d{10,17})$")
_NAME4 = re.compile(r"^(?P<type>[^.]+)\.(?P<op>.+)\.(?P<task>\d+)\.(?P<ts>\d{10,17})$")
_UNKNOWN_DIM = 1 << 63


def is_dump_name(name: str) -> bool:
    """True for ``{op_type}.{op_name}.{task}[.{stream}].{timestamp}`` (no extension)."""
    return bool(_NAME4.match(name)) and not name.endswith((".npy", ".txt", ".csv", ".json"))


@dataclass
class NpuTensor:
    """One input or output slot of a dump file, its bytes located in the file."""

    kind: str
    index: int
    data_type: int
    format: int
    shape: list[int]
    original_shape: list[int]
    offset: int
    size: int
    original_op: str = ""
    original_index: int = 0

    @property
    def dtype_name(self) -> str:
        dtype = npu_layout.numpy_dtype(self.data_type)
        return str(dtype) if dtype is not None else npu_layout.DTYPE_NAMES.get(self.data_type, str(self.data_type))


@dataclass
class NpuDump:
    """The parsed header of one dump file."""

    path: Path
    op_type: str
    op_name: str
    timestamp: int
    task_id: int
    stream_id: int | None
    inputs: list[NpuTensor] = field(default_factory=list)
    outputs: list[NpuTensor] = field(default_factory=list)


def parse_name(path: Path) -> tuple[str, str, int, int | None, int]:
    """(op_type, op_name, task_id, stream_id, timestamp) from the file name."""
    # Five tokens when the name allows it (task + stream), else four (shortened names).
    m = _NAME5.match(path.name) or _NAME4.match(path.name)
    if not m:
        raise UserError("Not an NPU dump file name ({op_type}.{op_name}.{task_id}.{stream_id}.{timestamp})",
                        path, "Give a file written by an acl.json dump, with its original name.")
    stream = int(m["stream"]) if "stream" in m.re.groupindex else None
    return m["type"], m["op"], int(m["task"]), stream, int(m["ts"])


def read_header(path: Path) -> NpuDump:
    """Parse the header of ``path`` and locate every tensor; strict about truncation."""
    op_type, op_name, task, stream, stamp = parse_name(path)
    try:
        with open_regular(path, "NPU dump file") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(8)
            if len(head) < 8:
                raise UserError(f"NPU dump file is truncated: {size} bytes, the 8-byte header length is missing",
                                f"{path}, offset 0", "Copy the dump file again; it is incomplete.")
            header_len = int.from_bytes(head, "little")
            if header_len > size - 8:
                raise UserError(f"NPU dump file is truncated: the header needs {header_len} bytes, "
                                f"only {size - 8} follow", f"{path}, offset 8",
                                "Copy the dump file again; it is incomplete.")
            header = handle.read(header_len)
    except OSError as exc:
        raise UserError(f"Cannot read the NPU dump file ({exc.strerror})", path, "Check the file.") from exc
    data = DumpData()
    try:
        data.ParseFromString(header)
    except DecodeError as exc:
        raise UserError(f"NPU dump header is corrupt: {exc}", f"{path}, offset 8",
                        "The file is damaged or not an NPU dump; dump again.") from exc
    dump = NpuDump(path, op_type, data.op_name.decode("utf-8", "replace") or op_name, stamp, task, stream)
    offset = 8 + header_len
    for kind, items, target in (("input", data.input, dump.inputs), ("output", data.output, dump.outputs)):
        for index, item in enumerate(items):
            nbytes = item.size
            if offset + nbytes > size:
                raise UserError(f"NPU dump file is truncated: {kind} {index} needs {nbytes} bytes at offset "
                                f"{offset}, the file ends at {size}", f"{path}, offset {offset}",
                                "Copy the dump file again; it is incomplete.")
            original = item.original_op if kind == "output" and item.HasField("original_op") else None
            target.append(NpuTensor(kind, index, item.data_type, item.format if item.HasField("format") else 2,
                                    _dims(item, "shape"), _dims(item, "original_shape"), offset, nbytes,
                                    original.name.decode("utf-8", "replace") if original else "",
                                    original.output_index if original else 0))
            offset += nbytes
    return dump


def _dims(item, field: str) -> list[int]:
    dims = list(getattr(item, field).dim) if item.HasField(field) else []
    return [] if any(d >= _UNKNOWN_DIM for d in dims) else [int(d) for d in dims]


def read_tensor(dump: NpuDump, tensor: NpuTensor, original_shape: bool = True) -> np.ndarray:
    """The data of one slot, in the original shape when its layout is known."""
    with open_regular(dump.path, "NPU dump file") as handle:
        handle.seek(tensor.offset)
        raw = handle.read(tensor.size)
    if len(raw) != tensor.size:
        raise UserError(f"NPU dump file is truncated while reading {tensor.kind} {tensor.index}",
                        f"{dump.path}, offset {tensor.offset}", "Copy the dump file again.")
    try:
        flat = npu_layout.decode(raw, tensor.data_type)
        if not tensor.shape and flat.size != 1:
            return flat
        return npu_layout.to_original(flat, tensor.shape, tensor.format,
                                      tensor.original_shape if original_shape else [])
    except npu_layout.LayoutError as exc:
        raise UserError(f"{tensor.kind} {tensor.index} cannot be decoded: {exc}", f"{dump.path}, offset {tensor.offset}",
                        f"Format {npu_layout.format_name(tensor.format)} with data type "
                        f"{npu_layout.DTYPE_NAMES.get(tensor.data_type, tensor.data_type)} is not supported yet.") from exc


def load_tensor(path: Path, kind: str, index: int) -> np.ndarray:
    """Load slot ``kind`` ``index`` of the dump file at ``path``."""
    dump = read_header(path)
    slots = dump.inputs if kind == "input" else dump.outputs
    if index >= len(slots):
        raise UserError(f"The dump file has no {kind} {index}", path, "Compare again; the dump changed.")
    return read_tensor(dump, slots[index])


def convert(path: Path, out_dir: Path, txt: bool = False) -> list[Path]:
    """msaccucmp-style convert: one ``{file}.{input|output}.{i}.npy`` (and ``.txt``) per slot."""
    dump = read_header(path)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for tensor in dump.inputs + dump.outputs:
        array = read_tensor(dump, tensor)
        target = out_dir / f"{path.name}.{tensor.kind}.{tensor.index}.npy"
        np.save(target, array)
        written.append(target)
        if txt:
            text = target.with_suffix(".txt")
            np.savetxt(text, array.reshape(-1) if array.ndim != 2 else array, fmt="%.8g")
            written.append(text)
    return written
