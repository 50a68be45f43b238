"""Folders of ``.npy`` files named the way dump scripts name them.

* framework side (ONNX / TF / Caffe dump scripts): ``{op}.{output_index}.{timestamp}.npy``,
  network inputs often ``input_{name}.{i}.{ts}.npy``;
* msaccucmp / msprobe converted NPU dumps: ``{op_type}.{op}.{task}.{stream}.{ts}.{input|output}.{i}.npy``.

Only the headers are read here (shape, dtype); the data is loaded when compared. Order is the
timestamp, then the file name (scripts dump in execution order with growing timestamps).
"""

from __future__ import annotations

import re
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import ACCURACY, FileFormat, path_only
from studio.tools.accuracy.tensors import DumpSet, TensorEntry

_CONVERTED = re.compile(r"^(?P<type>[^.]+)\.(?P<op>.+)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<ts>\d{10,17})"
                        r"\.(?P<kind>input|output)\.(?P<index>\d+)\.npy$")
_FRAMEWORK = re.compile(r"^(?P<op>.+)\.(?P<index>\d+)\.(?P<ts>\d{6,17})\.npy$")
_SIMPLE = re.compile(r"^(?P<op>.+?)(?:\.(?P<index>\d+))?\.npy$")


def parse_npy_name(name: str) -> dict:
    """op, op_type, kind, index and timestamp from a dump .npy name (best effort, never fails)."""
    m = _CONVERTED.match(name)
    if m:
        return {"op": m["op"], "op_type": m["type"], "kind": m["kind"], "index": int(m["index"]), "ts": int(m["ts"])}
    m = _FRAMEWORK.match(name)
    if m:
        op = m["op"]
        op_type = "Input" if op.startswith("input_") else ""
        return {"op": op[6:] if op_type else op, "op_type": op_type, "kind": "output",
                "index": int(m["index"]), "ts": int(m["ts"])}
    m = _SIMPLE.match(name)
    return {"op": m["op"] if m else name, "op_type": "", "kind": "output",
            "index": int(m["index"]) if m and m["index"] else 0, "ts": 0}


def _header(path: Path) -> tuple[tuple[int, ...], str]:
    from studio.core.npyfile import load_npy

    array = load_npy(path, mmap=True)  # header checked against the file's size; maps, reads nothing more
    return tuple(array.shape), str(array.dtype)


def read_npy_folder(root: Path) -> DumpSet:
    """Every ``.npy`` directly in ``root`` as a DumpSet."""
    files = sorted(root.glob("*.npy"))
    if not files:
        raise UserError("No .npy files in the folder", root, "Give a folder of {op}.{output}.{timestamp}.npy files.")
    parsed = sorted(((parse_npy_name(f.name), f) for f in files), key=lambda item: (item[0]["ts"], item[1].name))
    entries, inputs = [], []
    for order, (info, path) in enumerate(parsed):
        shape, dtype = _header(path)
        if info["op_type"] == "Input":
            inputs.append(info["op"])
        entries.append(TensorEntry(op_name=info["op"], op_type=info["op_type"] or "?", index=info["index"],
                                   kind=info["kind"], order=order, tensor=info["op"], shape=shape,
                                   dtype=dtype, locator=path.name))
    return DumpSet(root=root, kind="npy", mode="npy", entries=entries, inputs=inputs)


def match_npy(path: Path, head: bytes) -> bool:
    """A NumPy array file, by its magic."""
    return head.startswith(b"\x93NUMPY")


def _load_npy(path: Path):
    from studio.core.npyfile import load_npy

    return load_npy(path)


NPY = FileFormat("npy", "NumPy array", ACCURACY, match_npy, path_only(_load_npy))
