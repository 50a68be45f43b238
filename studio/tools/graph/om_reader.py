"""Read an Ascend OM model (``IMOD``) into a :class:`~studio.tools.graph.model.Model`.

The MODEL_DEF partition is ``ge.proto.ModelDef`` protobuf, decoded by field number with
:mod:`protowire` (no Ascend package needed). Attribute names compressed by newer ATC
(``\\0``-prefixed keys) are decoded through the model's ``attr_name_enum`` table. Flow models
carry whole OM files inside their FLOW_SUBMODEL partitions; those are read recursively.
Facts: ../shared/reference/ascend_formats.md §1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from studio.errors import UserError
from studio.tools.graph import protowire as pw
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
        buf = path.read_bytes()
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
            except (pw.WireError, TypeError, ValueError, IndexError, KeyError, AttributeError, MemoryError,
                    OverflowError, RecursionError) as exc:
                # A damaged protobuf decodes into fields of the wrong kind; say so, never crash.
                raise UserError(f"Corrupt OM graph definition ({type(exc).__name__}: {exc})", where,
                                "The file is damaged; convert the model again with atc.") from exc
        for p in partitions:
            if p.type == 7:  # FLOW_SUBMODEL: {name=1, type=2, om bytes=3, ...}
                _read_flow_submodel(model, path, view[p.offset:p.offset + p.size], prefix, cancel)


def _read_flow_submodel(model: Model, path: Path, data, prefix: str, cancel) -> None:
    try:
        fields = pw.decode(data)
    except pw.WireError as exc:
        model.warnings.append(f"{prefix}flow submodel not readable: {exc}")
        return
    name = pw.text(fields, 1) or "submodel"
    device = pw.text(fields, 2)
    raw = fields.get(3)
    if not raw or bytes(raw[-1][:4]) != b"IMOD":
        model.warnings.append(f"{prefix}flow submodel {name} ({device}) holds no OM model")
        return
    start = len(model.graphs)
    try:
        _read_into(model, path, bytes(raw[-1]), f"{prefix}{name}/", cancel)
    except UserError as exc:
        model.warnings.append(f"{prefix}flow submodel {name}: {exc.what}")
    for graph in model.graphs[start:]:
        graph.name = f"{name}/{graph.name}" if not graph.name.startswith(name) else graph.name
    model.metadata.setdefault("flow_submodels", []).append({"name": name, "device": device})


def _attr_map(entries, names: _Names) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in entries:
        fields = pw.decode(entry)
        raw_key = bytes(fields.get(1, [b""])[-1])
        key, use_value = names.key(raw_key)
        if not key.isprintable():  # keep undecodable names readable instead of control characters
            key = key.encode("unicode_escape").decode("ascii")
        value = _attr_value(pw.decode(fields[2][-1]), names) if 2 in fields else None
        if use_value:
            value = _enum_value(value, names)
        out[key] = value
    return out


def _enum_value(value, names: _Names):
    def lookup(i):
        return names.values[i] if isinstance(i, int) and 0 <= i < len(names.values) else i
    return [lookup(v) for v in value] if isinstance(value, list) else lookup(value)


def _attr_value(f: dict, names: _Names):
    """AttrDef -> a Python value (strings, ints, floats, lists, nested dicts for tensors/graphs)."""
    if 2 in f:
        return _bytes_text(f[2][-1])
    if 3 in f:
        return pw.integer(f, 3)
    if 4 in f:
        return pw.float32(f, 4)
    if 5 in f:
        return bool(pw.integer(f, 5))
    if 7 in f:
        return f"<{len(f[7][-1])} bytes>"
    if 15 in f:
        return DTYPES.get(pw.integer(f, 15), str(pw.integer(f, 15)))
    if 11 in f:
        return _desc_summary(pw.decode(f[11][-1]))
    if 12 in f:
        tensor = pw.decode(f[12][-1])
        desc = _desc_summary(pw.decode(tensor[1][-1])) if 1 in tensor else {}
        return {"tensor": desc, "bytes": len(tensor[2][-1]) if 2 in tensor else 0}
    if 13 in f:
        return {"graph": pw.text(pw.decode(f[13][-1]), 1)}
    if 10 in f:
        func = pw.decode(f[10][-1])
        return {"name": pw.text(func, 1), "attr": _attr_map(func.get(2, ()), names)}
    if 14 in f:
        return [pw.ints(pw.decode(row), 1) for row in pw.decode(f[14][-1]).get(1, ())]
    if 16 in f:
        return [pw.floats(pw.decode(row), 1) for row in pw.decode(f[16][-1]).get(1, ())]
    if 1 in f:
        lst = pw.decode(f[1][-1])
        if 2 in lst:
            return [_bytes_text(v) for v in lst[2]]
        if 3 in lst:
            return pw.ints(lst, 3)
        if 4 in lst:
            return pw.floats(lst, 4)
        if 5 in lst:
            return [bool(v) for v in pw.ints(lst, 5)]
        if 12 in lst:
            return [DTYPES.get(v, str(v)) for v in pw.ints(lst, 12)]
        if 8 in lst:
            return [_desc_summary(pw.decode(v)) for v in lst[8]]
        if 10 in lst:
            return [{"graph": pw.text(pw.decode(v), 1)} for v in lst[10]]
        if 11 in lst:
            return [pw.text(pw.decode(v), 1) for v in lst[11]]
        return []
    return None


def _bytes_text(raw) -> str:
    data = bytes(raw)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes>"


def _desc_summary(d: dict) -> dict:
    return {"dtype": DTYPES.get(pw.integer(d, 2), "?"), "shape": _shape(d), "format": pw.text(d, 4)}


def _shape(desc: dict) -> tuple | None:
    if 3 not in desc:
        return ()
    dims = pw.ints(pw.decode(desc[3][-1]), 1)
    if dims == [-2]:
        return None  # unknown rank
    return tuple(None if d < 0 else d for d in dims)


def _value(name: str, desc: dict, names: _Names) -> Value:
    fmt = pw.text(desc, 4) or None
    return Value(name, _shape(desc), DTYPES.get(pw.integer(desc, 2), "?"), fmt)


def _read_model_def(model: Model, data, weights, prefix: str) -> None:
    fields = pw.decode(data)
    # The name tables live in the model attributes; their own keys are never compressed.
    plain = _attr_map(fields.get(11, ()), _Names([], [], []))
    names = _Names(list(plain.get("attr_name_enum") or []), list(plain.get("attr_value_enum") or []),
                   list(plain.get("attrs_use_string_value") or []))
    if not prefix or "model_name" not in model.metadata:
        model.metadata.setdefault("model_name", pw.text(fields, 1))
        for key in ("soc_version", "framework_type", "atc_version", "opp_version", "atc_cmdline",
                    "memory_size", "weight_size", "stream_num", "event_num", "core_type"):
            if key in plain:
                model.metadata.setdefault(key, plain[key])
    graphs = [_read_graph(pw.decode(g), names, weights, prefix) for g in fields.get(7, ())]
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


def _read_graph(fields: dict, names: _Names, weights, prefix: str) -> Graph:
    graph = Graph(pw.text(fields, 1) or "graph")
    graph.inputs = pw.texts(fields, 4)
    graph.outputs = pw.texts(fields, 5)
    for raw in fields.get(6, ()):
        op = pw.decode(raw)
        name, op_type = pw.text(op, 1), pw.text(op, 2)
        attrs = _attr_map(op.get(10, ()), names)
        in_descs = [pw.decode(d) for d in op.get(33, ())]
        out_descs = [pw.decode(d) for d in op.get(34, ())]
        if op_type in CONST_TYPES:
            out_name = f"{name}:0"
            graph.initializers[out_name] = _const_tensor(out_name, attrs, op, out_descs, weights, names)
            if out_descs:
                graph.values[out_name] = _value(out_name, out_descs[0], names)
            continue
        node = Node(name=name, type=op_type, attributes=attrs)
        for k, desc in enumerate(out_descs or [{}]):
            out_name = f"{name}:{k}"
            node.outputs.append(out_name)
            graph.values[out_name] = _value(out_name, desc, names)
        for j, ref in enumerate(pw.texts(op, 5)):
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
        node.attributes["stream_id"] = pw.integer(op, 22)
        for k, sub in enumerate(pw.texts(op, 35)):
            node.subgraphs[f"subgraph_{k}"] = sub
        for key, value in attrs.items():
            if isinstance(value, dict) and set(value) == {"graph"}:
                node.subgraphs[key] = value["graph"]
        graph.nodes.append(node)
    if not graph.inputs:
        graph.inputs = [n.outputs[0] for n in graph.nodes if n.type in ("Data", "RefData") and n.outputs]
    if not graph.outputs:  # the NetOutput op collects what the graph returns
        graph.outputs = [i for n in graph.nodes if n.type == "NetOutput" for i in n.inputs if i]
    return graph


def _const_tensor(name: str, attrs: dict, op: dict, out_descs: list, weights, names: _Names) -> Tensor:
    desc = out_descs[0] if out_descs else {}
    dtype_code = pw.integer(desc, 2)
    shape = _shape(desc) or ()
    tensor = Tensor(name, tuple(d if d is not None else -1 for d in shape), DTYPES.get(dtype_code, "?"))
    raw = None
    # The value attribute carries the data inline (TensorDef.data) in IR models...
    for entry in op.get(10, ()):
        fields = pw.decode(entry)
        key, _ = names.key(bytes(fields.get(1, [b""])[-1]))
        if key == "value" and 2 in fields:
            value = pw.decode(fields[2][-1])
            if 12 in value:
                tdef = pw.decode(value[12][-1])
                if 2 in tdef:
                    raw = bytes(tdef[2][-1])
    # ... and offline models point into the WEIGHTS_DATA partition.
    if raw is None and weights is not None and desc:
        desc_attrs = _attr_map(desc.get(5, ()), names)
        offset = desc_attrs.get("merged_offset", pw.integer(desc, 18))
        size = pw.integer(desc, 11)
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
