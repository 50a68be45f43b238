"""Read an Ascend OM model (``IMOD``) into a :class:`~studio.tools.graph.model.Model`.

The MODEL_DEF partition is ``ge.proto.ModelDef`` protobuf, decoded by the ``protobuf`` runtime
with message classes built from GE's schema (:mod:`ge_proto`; no Ascend package needed). Attribute names compressed by newer ATC
(``\\0``-prefixed keys) are decoded through the model's ``attr_name_enum`` table. Flow models
carry whole OM files inside their FLOW_SUBMODEL partitions; those are read recursively.
Facts: ../shared/reference/ascend_formats.md §1.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from studio.core.errors import UserError
from studio.core.formats import GRAPH, FileFormat
from studio.core.safe_read import open_regular
from studio.tools.graph import ge_proto
from studio.tools.graph.model import Graph, Model, Node, Tensor, Value
from studio.tools.graph.om_format import OmContainer, read_container

# ge.proto.DataType (protobuf numbering, §1.4a)
DTYPES = {
    0: "undefined", 1: "float32", 2: "float16", 3: "int8", 4: "uint8", 5: "int16", 6: "uint16", 7: "int32",
    8: "int64", 9: "uint32", 10: "uint64", 11: "bool", 12: "float64", 13: "string", 14: "dual_sub_int8",
    15: "dual_sub_uint8", 16: "complex64", 17: "complex128", 18: "qint8", 19: "qint16", 20: "qint32",
    21: "quint8", 22: "quint16", 23: "resource", 24: "string_ref", 25: "dual", 26: "variant", 27: "bfloat16",
    28: "int4", 29: "uint1", 30: "int2", 31: "uint2", 32: "complex32", 33: "hifloat8", 34: "float8_e5m2",
    35: "float8_e4m3fn", 36: "float8_e8m0", 37: "float6_e3m2", 38: "float6_e2m3", 39: "float4_e2m1",
    40: "float4_e1m2", 41: "hifloat4",
}
NUMPY = {1: np.float32, 2: np.float16, 3: np.int8, 4: np.uint8, 5: np.int16, 6: np.uint16, 7: np.int32,
         8: np.int64, 9: np.uint32, 10: np.uint64, 11: np.bool_, 12: np.float64}
CONST_TYPES = {"Const", "Constant"}


class _Names:
    """The compressed-attribute tables of one ModelDef (§1.5)."""

    def __init__(self, names: list[str], values: list[str], use_value: list[bool]):
        self.names, self.values, self.use_value = names, values, use_value

    def key(self, raw: bytes) -> tuple[str, bool]:
        """Decode an attribute key; return (name, value is an index into attr_value_enum)."""
        if not raw.startswith(b"\0"):
            return raw.decode("utf-8", "replace"), False
        index = sum((b - 1) * 127 ** i for i, b in enumerate(raw[1:]))
        if index < len(self.names):
            return self.names[index], index < len(self.use_value) and self.use_value[index]
        return f"<compressed attribute #{index}>", False


def read_om(path: Path, cancel=None) -> Model:
    """Read the OM file at ``path``. Raises UserError for anything that is not a readable OM."""
    path = Path(path)
    try:
        with open_regular(path, "model") as handle:
            # mapped, not read: a model of many GB (or a sparse file claiming so) costs no memory up front
            buf = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(handle.fileno()).st_size \
                else b""
    except OSError as exc:
        raise UserError(f"Cannot read the model: {exc.strerror}", path, "Check the path and permissions.") from exc
    model = Model(path=path, format="om")
    _read_into(model, path, buf, prefix="", cancel=cancel)
    if not model.graphs:
        raise UserError("The OM model holds no graph (no MODEL_DEF partition)", path,
                        "Convert the model again with atc; encrypted or stripped models cannot be shown.")
    return model


def _read_into(model: Model, path: Path, buf: bytes, prefix: str, cancel) -> None:
    container: OmContainer = read_container(path, buf)
    if not prefix:
        model.metadata.update(container.header.metadata())
        model.metadata["partitions"] = [[f"{p.type_name}: {p.size} bytes" for p in parts]
                                        for parts in container.models]
    model.warnings += [f"{prefix}{p}" for p in container.problems]
    view = memoryview(buf)
    for index, partitions in enumerate(container.models):
        if cancel is not None:
            cancel.raise_if_cancelled()
        by_type = {p.type: p for p in partitions}
        for p in partitions:
            if p.type_name.startswith("unknown"):
                model.warnings.append(f"{prefix}model {index}: {p.type_name} partition of {p.size} bytes skipped")
        weights = by_type.get(1)
        weight_view = view[weights.offset:weights.offset + weights.size] if weights else None
        model_def = by_type.get(0)
        if model_def is not None:
            where = f"{path} (MODEL_DEF of model {index}, bytes {model_def.offset}..{model_def.offset + model_def.size})"
            try:
                _read_model_def(model, view[model_def.offset:model_def.offset + model_def.size], weight_view,
                                f"{prefix}{'' if len(container.models) == 1 else f'model{index}/'}")
            except (DecodeError, TypeError, ValueError, IndexError, KeyError, AttributeError, MemoryError,
                    OverflowError, RecursionError) as exc:
                # A damaged protobuf decodes into fields of the wrong kind; say so, never crash.
                raise UserError(f"Corrupt OM graph definition ({type(exc).__name__}: {exc})", where,
                                "The file is damaged; convert the model again with atc.") from exc
        for p in partitions:
            if p.type == 7:  # FLOW_SUBMODEL: {name=1, type=2, om bytes=3, ...}
                _read_flow_submodel(model, path, view[p.offset:p.offset + p.size], prefix, cancel)


def _read_flow_submodel(model: Model, path: Path, data, prefix: str, cancel) -> None:
    sub = ge_proto.FlowSubmodel()
    try:
        sub.ParseFromString(bytes(data))
    except DecodeError as exc:
        model.warnings.append(f"{prefix}flow submodel not readable: {exc}")
        return
    name = _text(sub.name) or "submodel"
    device = _text(sub.type)
    if not sub.om_data or sub.om_data[:4] != b"IMOD":
        model.warnings.append(f"{prefix}flow submodel {name} ({device}) holds no OM model")
        return
    start = len(model.graphs)
    try:
        _read_into(model, path, bytes(sub.om_data), f"{prefix}{name}/", cancel)
    except UserError as exc:
        model.warnings.append(f"{prefix}flow submodel {name}: {exc.what}")
    for graph in model.graphs[start:]:
        graph.name = f"{name}/{graph.name}" if not graph.name.startswith(name) else graph.name
    model.metadata.setdefault("flow_submodels", []).append({"name": name, "device": device})


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _attr_map(entries, names: _Names) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in entries:
        key, use_value = names.key(entry.key)
        if not key.isprintable():  # keep undecodable names readable instead of control characters
            key = key.encode("unicode_escape").decode("ascii")
        value = _attr_value(entry.value, names) if entry.HasField("value") else None
        if use_value:
            value = _enum_value(value, names)
        out[key] = value
    return out


def _enum_value(value, names: _Names):
    def lookup(i):
        return names.values[i] if isinstance(i, int) and 0 <= i < len(names.values) else i
    return [lookup(v) for v in value] if isinstance(value, list) else lookup(value)


def _attr_value(f, names: _Names):
    """AttrDef -> a Python value (strings, ints, floats, lists, nested dicts for tensors/graphs)."""
    has = f.HasField
    if has("s"):
        return _bytes_text(f.s)
    if has("i"):
        return f.i
    if has("f"):
        return f.f
    if has("b"):
        return f.b
    if has("bt"):
        return f"<{len(f.bt)} bytes>"
    if has("dt"):
        return DTYPES.get(f.dt, str(f.dt))
    if has("td"):
        return _desc_summary(f.td)
    if has("t"):
        desc = _desc_summary(f.t.desc) if f.t.HasField("desc") else {}
        return {"tensor": desc, "bytes": len(f.t.data)}
    if has("g"):
        return {"graph": _text(f.g.name)}
    if has("func"):
        return {"name": _text(f.func.name), "attr": _attr_map(f.func.attr, names)}
    if has("list_list_int"):
        return [list(row.list_i) for row in f.list_list_int.list_list_i]
    if has("list_list_float"):
        return [list(row.list_f) for row in f.list_list_float.list_list_f]
    if has("list"):
        lst = f.list
        if lst.s:
            return [_bytes_text(v) for v in lst.s]
        if lst.i:
            return list(lst.i)
        if lst.f:
            return list(lst.f)
        if lst.b:
            return [bool(v) for v in lst.b]
        if lst.dt:
            return [DTYPES.get(v, str(v)) for v in lst.dt]
        if lst.td:
            return [_desc_summary(v) for v in lst.td]
        if lst.g:
            return [{"graph": _text(v.name)} for v in lst.g]
        if lst.na:
            return [_text(v.name) for v in lst.na]
        return []
    return None


def _bytes_text(raw) -> str:
    data = bytes(raw)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes>"


def _desc_summary(d) -> dict:
    return {"dtype": DTYPES.get(d.dtype, "?"), "shape": _shape(d), "format": _text(d.layout)}


def _shape(desc) -> tuple | None:
    if not desc.HasField("shape"):
        return ()
    dims = list(desc.shape.dim)
    if dims == [-2]:
        return None  # unknown rank
    return tuple(None if d < 0 else d for d in dims)


def _value(name: str, desc, names: _Names) -> Value:
    fmt = _text(desc.layout) or None
    return Value(name, _shape(desc), DTYPES.get(desc.dtype, "?"), fmt)


def _read_model_def(model: Model, data, weights, prefix: str) -> None:
    model_def = ge_proto.ModelDef()
    model_def.ParseFromString(bytes(data))
    # The name tables live in the model attributes; their own keys are never compressed.
    plain = _attr_map(model_def.attr, _Names([], [], []))
    names = _Names(list(plain.get("attr_name_enum") or []), list(plain.get("attr_value_enum") or []),
                   list(plain.get("attrs_use_string_value") or []))
    if not prefix or "model_name" not in model.metadata:
        model.metadata.setdefault("model_name", _text(model_def.name))
        for key in ("soc_version", "framework_type", "atc_version", "opp_version", "atc_cmdline",
                    "memory_size", "weight_size", "stream_num", "event_num", "core_type"):
            if key in plain:
                model.metadata.setdefault(key, plain[key])
    graphs = [_read_graph(g, names, weights, prefix) for g in model_def.graph]
    by_name = {g.name: g for g in graphs}
    referenced: set[str] = set()
    for graph in graphs:
        for node in graph.nodes:
            for slot, sub_name in list(node.subgraphs.items()):
                target = by_name.get(sub_name) if isinstance(sub_name, str) else None
                if target is None:
                    del node.subgraphs[slot]
                    model.warnings.append(f"{node.name}: subgraph {sub_name!r} not found in the model")
                else:
                    node.subgraphs[slot] = target
                    referenced.add(sub_name)
    for graph in graphs:  # nested graphs are reached through their parent op
        if graph.name not in referenced or graph is graphs[0]:
            graph.name = f"{prefix}{graph.name}" if prefix and not graph.name.startswith(prefix) else graph.name
            model.graphs.append(graph)


def _read_graph(proto, names: _Names, weights, prefix: str) -> Graph:
    graph = Graph(_text(proto.name) or "graph")
    graph.inputs = [_text(v) for v in proto.input]
    graph.outputs = [_text(v) for v in proto.output]
    for op in proto.op:
        name, op_type = _text(op.name), _text(op.type)
        attrs = _attr_map(op.attr, names)
        in_descs = list(op.input_desc)
        out_descs = list(op.output_desc)
        if op_type in CONST_TYPES:
            out_name = f"{name}:0"
            graph.initializers[out_name] = _const_tensor(out_name, attrs, op, out_descs, weights, names)
            if out_descs:
                graph.values[out_name] = _value(out_name, out_descs[0], names)
            continue
        node = Node(name=name, type=op_type, attributes=attrs)
        for k, desc in enumerate(out_descs or [ge_proto.TensorDescriptor()]):
            out_name = f"{name}:{k}"
            node.outputs.append(out_name)
            graph.values[out_name] = _value(out_name, desc, names)
        for j, ref in enumerate(_text(v) for v in op.input):
            if not ref:
                node.inputs.append("")
                continue
            src, _, idx = ref.rpartition(":")
            if idx == "-1":
                node.control_inputs.append(src)
                continue
            node.inputs.append(ref)
            if j < len(in_descs) and ref not in graph.values:
                graph.values[ref] = _value(ref, in_descs[j], names)
        node.attributes["stream_id"] = op.stream_id
        for k, sub in enumerate(op.subgraph_name):
            node.subgraphs[f"subgraph_{k}"] = _text(sub)
        for key, value in attrs.items():
            if isinstance(value, dict) and set(value) == {"graph"}:
                node.subgraphs[key] = value["graph"]
        graph.nodes.append(node)
    if not graph.inputs:
        graph.inputs = [n.outputs[0] for n in graph.nodes if n.type in ("Data", "RefData") and n.outputs]
    if not graph.outputs:  # the NetOutput op collects what the graph returns
        graph.outputs = [i for n in graph.nodes if n.type == "NetOutput" for i in n.inputs if i]
    return graph


def _const_tensor(name: str, attrs: dict, op, out_descs: list, weights, names: _Names) -> Tensor:
    desc = out_descs[0] if out_descs else ge_proto.TensorDescriptor()
    dtype_code = desc.dtype
    shape = _shape(desc) or ()
    tensor = Tensor(name, tuple(d if d is not None else -1 for d in shape), DTYPES.get(dtype_code, "?"))
    raw = None
    # The value attribute carries the data inline (TensorDef.data) in IR models...
    for entry in op.attr:
        key, _ = names.key(entry.key)
        if key == "value" and entry.HasField("value") and entry.value.HasField("t") \
                and entry.value.t.HasField("data"):
            raw = bytes(entry.value.t.data)
    # ... and offline models point into the WEIGHTS_DATA partition.
    if raw is None and weights is not None and desc.ByteSize():
        desc_attrs = _attr_map(desc.attr, names)
        offset = desc_attrs.get("merged_offset", desc.data_offset)
        size = desc.weight_size
        if isinstance(offset, int) and size > 0 and offset + size <= len(weights):
            raw = bytes(weights[offset:offset + size])
    np_type = NUMPY.get(dtype_code)
    if raw is None or np_type is None:
        tensor.problem = "no data stored in the model" if raw is None else f"{tensor.dtype} data is not decoded"
        return tensor
    count = tensor.size

    def load(raw=raw, np_type=np_type, shape=tensor.shape, count=count):
        array = np.frombuffer(raw, dtype=np_type)
        return array[:count].reshape(shape) if array.size >= count and shape else array
    tensor.loader = load
    return tensor


def match_om(path: Path, head: bytes) -> bool:
    """An OM file starts with its magic (``PICO`` models are recognised to be refused clearly)."""
    return head[:4] in (b"IMOD", b"PICO")


OM = FileFormat("om", "Ascend OM model", GRAPH, match_om, read_om)
