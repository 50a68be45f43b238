"""Read an ONNX model into a :class:`~studio.tools.graph.model.Model`.

Shapes come from the file's value_info after ONNX shape inference; an inference failure becomes a
warning, never an error. External-data tensors are resolved next to the model, and a missing file is
named. If/Loop/Scan bodies become node subgraphs and model-local functions become graphs that the
calling nodes link to. The ``onnx`` package is imported here only, when a model is opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from studio.core.errors import UserError
from studio.core.formats import GRAPH, FileFormat
from studio.core.safe_read import open_regular
from studio.tools.graph.model import Graph, Model, Node, Tensor, Value
from studio.tools.graph.onnx_parse import WireError, load_proto, read_varint
from studio.tools.graph.onnx_parse import infer_shapes as onnx_infer_shapes

INFER_MAX_NODES = 50_000  # shape inference above this takes seconds; the file's shapes are shown instead


def read_onnx(path: Path, cancel=None, infer_shapes: bool = True) -> Model:
    """Read the ONNX model at ``path`` (weights stay on disk until statistics are asked for)."""
    import onnx
    from google.protobuf.message import DecodeError

    path = Path(path)
    fix = "The file is truncated or not an ONNX model; export or download it again."
    try:
        proto = load_proto(path)  # in slices: the GUI thread gets the interpreter in between
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise UserError(f"Cannot decode the ONNX model: {exc or type(exc).__name__}", path, fix) from exc
    except OSError as exc:
        raise UserError(f"Cannot read the model: {exc.strerror}", path, "Check the path and permissions.") from exc
    if not proto.HasField("graph") or (not proto.graph.node and not proto.graph.output):
        raise UserError("The ONNX file holds no graph (no nodes, no outputs)", path, fix)
    if cancel is not None:
        cancel.raise_if_cancelled()
    model = Model(path=path, format="onnx")
    model.opsets = {(_s(o.domain) or "ai.onnx"): o.version for o in proto.opset_import}
    model.metadata = {
        "ir_version": proto.ir_version, "producer": f"{proto.producer_name} {proto.producer_version}".strip(),
        "domain": proto.domain, "model_version": proto.model_version, "doc_string": proto.doc_string,
        "graph_name": proto.graph.name,
        **{f"meta:{_s(p.key)}": _s(p.value) for p in proto.metadata_props},
    }
    inferred = proto
    if infer_shapes:
        if len(proto.graph.node) > INFER_MAX_NODES:
            model.warnings.append(f"shape inference skipped for {len(proto.graph.node):,} nodes; "
                                  "shapes are the ones stored in the file")
        else:  # big models are inferred in a worker process (one long C call)
            inferred, warnings = onnx_infer_shapes(path, proto, cancel)
            model.warnings.extend(warnings)
    if cancel is not None:
        cancel.raise_if_cancelled()
    reader = _Reader(model, path.parent)
    for func in proto.functions:
        domain, name = _s(func.domain), _s(func.name)
        graph = Graph(f"{domain}:{name}" if domain else name)
        graph.inputs, graph.outputs = _names(func.input), _names(func.output)
        graph.nodes = [reader.node(n, graph) for n in func.node]
        model.functions[(domain, name)] = graph
    main = reader.graph(inferred.graph, cancel)
    for graph in [main, *model.functions.values()]:
        for sub in graph.walk():
            for node in sub.nodes:
                body = model.functions.get((node.domain, node.type))
                if body is not None and body is not graph:
                    node.subgraphs.setdefault("function", body)
    model.graphs = [main]
    model.functions = {g.name: g for g in model.functions.values()}
    return model


def _s(value) -> str:
    """A protobuf string field; damaged files can hand back bytes that are not UTF-8."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _names(values) -> list[str]:
    return [_s(v) for v in values]


def _dtype(elem_type: int) -> str:
    from onnx import helper

    try:
        return str(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)))
    except Exception:  # noqa: BLE001 - bfloat16, float8 and friends have no plain numpy type
        try:
            return helper.tensor_dtype_to_string(elem_type).replace("TensorProto.", "").lower()
        except Exception:  # noqa: BLE001
            return f"type{elem_type}"


def _value_from_info(info) -> Value:
    tensor = info.type.tensor_type if info.type.HasField("tensor_type") else None
    if tensor is None:
        kind = info.type.WhichOneof("value") or "unknown"
        return Value(_s(info.name), None, kind.replace("_type", ""))
    shape = None
    if tensor.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else (_s(d.dim_param) or None) for d in tensor.shape.dim)
    return Value(_s(info.name), shape, _dtype(tensor.elem_type) if tensor.elem_type else None)


class _Reader:
    def __init__(self, model: Model, folder: Path):
        self.model = model
        self.folder = folder
        self.missing: set[str] = set()

    def graph(self, g, cancel=None, name: str | None = None) -> Graph:
        graph = Graph(name or _s(g.name) or "main")
        for info in (*g.input, *g.output, *g.value_info):
            value = _value_from_info(info)
            graph.values[value.name] = value
        for t in g.initializer:
            tensor = self.tensor(t)
            graph.initializers[tensor.name] = tensor
            graph.values.setdefault(tensor.name, Value(tensor.name, tuple(t.dims), _dtype(t.data_type)))
        for t in g.sparse_initializer:
            name = _s(t.values.name)
            graph.initializers[name] = Tensor(name, tuple(t.dims), _dtype(t.values.data_type),
                                              problem="sparse tensor: statistics not computed")
        weights = set(graph.initializers)
        graph.inputs = [n for n in _names(i.name for i in g.input) if n not in weights]
        graph.outputs = _names(o.name for o in g.output)
        outputs = set(graph.outputs)
        shape_inputs: set[str] = set()
        for k, n in enumerate(g.node):
            if cancel is not None and k % 2000 == 0:
                cancel.raise_if_cancelled()
            if not n.domain and len(n.output) == 1 and n.output[0] not in outputs and \
                    n.op_type in ("Constant", "ConstantOfShape"):
                tensor = self.constant(n) if n.op_type == "Constant" else _filled(n, graph, k)
                if tensor is not None:  # like Netron: a weight of its consumers, not a box of its own
                    graph.initializers[tensor.name] = tensor
                    graph.values[tensor.name] = Value(tensor.name, tensor.shape, tensor.dtype)
                    graph.folded.append((tensor.origin, _s(n.op_type)))
                    shape_inputs.update(_names(n.input))
                    continue
            graph.nodes.append(self.node(n, graph, k))
        if shape_inputs:  # a shape that only sized a folded ConstantOfShape is not a weight of the model
            read = set(graph.outputs) | set().union(*([set(n.inputs) | set(n.implicit_inputs)
                                                       for n in graph.nodes] or [set()]))
            for name in shape_inputs - read:
                graph.initializers.pop(name, None)
        return graph

    def constant(self, n) -> Tensor | None:
        """The tensor a ``Constant`` node holds (PaddlePaddle exports keep every weight this way)."""
        if len(n.attribute) != 1:
            return None
        attr = n.attribute[0]
        key, name = _s(attr.name), _s(n.output[0])
        origin = _s(n.name) or f"Constant {name}"
        if key == "value":
            tensor = self.tensor(attr.t)
            tensor.name = name
        elif key == "sparse_value":
            tensor = Tensor(name, tuple(attr.sparse_tensor.dims), _dtype(attr.sparse_tensor.values.data_type),
                            problem="sparse tensor: statistics not computed")
        else:
            scalars = {"value_float": (attr.f, np.float32), "value_int": (attr.i, np.int64),
                       "value_floats": (list(attr.floats), np.float32), "value_ints": (list(attr.ints), np.int64),
                       "value_string": (_s(attr.s), object), "value_strings": ([_s(v) for v in attr.strings], object)}
            if key not in scalars:
                return None
            data = np.asarray(scalars[key][0], dtype=scalars[key][1])
            tensor = Tensor(name, tuple(data.shape), "str" if data.dtype == object else str(data.dtype),
                            loader=lambda d=data: d)
        tensor.origin = origin
        return tensor

    def node(self, n, graph: Graph, index: int | None = None) -> Node:
        op_type, domain = _s(n.op_type), _s(n.domain)
        # Unnamed nodes are named by their place in the file (stable whether Constants are folded or not).
        number = len(graph.nodes) if index is None else index
        node = Node(name=_s(n.name) or f"{op_type}_{number}", type=op_type, inputs=_names(n.input),
                    outputs=_names(n.output), domain=domain if domain not in ("", "ai.onnx") else "")
        for attr in n.attribute:
            attr_name = _s(attr.name)
            if attr.type == attr.GRAPH or attr.g.node:
                node.subgraphs[attr_name] = self.graph(attr.g, name=f"{node.name}/{attr_name}")
                node.attributes[attr_name] = f"<graph {len(attr.g.node)} nodes>"
            elif attr.graphs:
                for k, sub in enumerate(attr.graphs):
                    node.subgraphs[f"{attr_name}[{k}]"] = self.graph(sub, name=f"{node.name}/{attr_name}[{k}]")
                node.attributes[attr_name] = f"<{len(attr.graphs)} graphs>"
            else:
                node.attributes[attr_name] = _attribute(attr)
        if node.subgraphs:  # values captured from the outer scope are real dependencies
            weights = {**graph.outer, **graph.initializers}  # ...but weights stay weights at any depth
            for sub in node.subgraphs.values():
                for inner in sub.walk():
                    for name in inner.free_values():
                        if name in weights:
                            inner.outer[name] = weights[name]
                        if name in graph.values:  # the body shows the outer value's type too
                            inner.values.setdefault(name, graph.values[name])
            captured = set()
            for sub in node.subgraphs.values():
                captured |= sub.free_values()
            node.implicit_inputs = sorted(captured - set(node.inputs))
        return node

    def tensor(self, t) -> Tensor:
        tensor = Tensor(_s(t.name), tuple(t.dims), _dtype(t.data_type))
        if t.data_location == t.EXTERNAL:
            info = {_s(e.key): _s(e.value) for e in t.external_data}
            location = info.get("location", "")
            tensor.location = location
            file = (self.folder / location).resolve()
            if not location or not file.is_file():
                tensor.problem = f"external data file {location!r} not found next to the model"
                if location not in self.missing:
                    self.missing.add(location)
                    self.model.warnings.append(
                        f"external data file {location!r} not found in {self.folder} (needed by tensor {t.name!r})")
                return tensor
            offset, length = int(info.get("offset", 0)), int(info.get("length", 0) or 0)
            tensor.loader = lambda f=file, o=offset, ln=length, t=t: _external_array(f, o, ln, t)
        else:
            from onnx import numpy_helper

            tensor.loader = lambda t=t: numpy_helper.to_array(t)
        return tensor


def _filled(n, graph: Graph, index: int) -> Tensor | None:
    """The tensor a ``ConstantOfShape`` fed by a weight makes (the light_* models keep every weight so):
    a constant tensor, folded like a Constant. None when the shape is not a small stored int vector."""
    shape_tensor = graph.initializers.get(_s(n.input[0])) if len(n.input) == 1 else None
    if shape_tensor is None or shape_tensor.loader is None or shape_tensor.size > 8:
        return None
    try:
        shape = tuple(int(d) for d in np.asarray(shape_tensor.loader()).ravel())
    except Exception:  # noqa: BLE001 - an unreadable shape keeps the node as it is
        return None
    if any(d < 0 for d in shape):
        return None
    fill, dtype = 0.0, "float32"
    for attr in n.attribute:
        if _s(attr.name) == "value" and attr.type == attr.TENSOR:
            from onnx import numpy_helper

            value = numpy_helper.to_array(attr.t).ravel()
            fill, dtype = (value[0] if value.size else 0), str(value.dtype)
    name = _s(n.output[0])
    tensor = Tensor(name, shape, dtype, loader=lambda s=shape, v=fill, d=dtype: np.full(s, v, dtype=d))
    tensor.origin = _s(n.name) or f"ConstantOfShape_{index}"
    return tensor


def _external_array(file: Path, offset: int, length: int, t) -> np.ndarray:
    from onnx import helper

    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type))
    with open_regular(file, "external data file") as handle:
        handle.seek(offset)
        raw = handle.read(length or -1)
    count = int(np.prod(t.dims)) if t.dims else 1
    if len(raw) < count * dtype.itemsize:
        raise ValueError(f"{file.name} holds {len(raw)} bytes at offset {offset}, "
                         f"the tensor needs {count * dtype.itemsize}")
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(tuple(t.dims))


def _attribute(attr) -> Any:
    from onnx import helper

    if attr.type == attr.TENSOR:
        return f"<tensor {_dtype(attr.t.data_type)}{list(attr.t.dims)}>"
    if attr.type == attr.TENSORS:
        return f"<{len(attr.tensors)} tensors>"
    if attr.ref_attr_name:
        return f"<ref {attr.ref_attr_name}>"
    try:
        value = helper.get_attribute_value(attr)
    except Exception:  # noqa: BLE001
        return "<unreadable>"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return value


# ---------------------------------------------------------------- the format: match and check
# ModelProto fields and their protobuf wire types (0 varint, 2 length-delimited).
_ONNX_MODEL_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}
_GRAPH_FIELDS = {1: 2, 2: 2, 5: 2, 10: 2, 11: 2, 12: 2, 13: 2, 14: 2, 15: 2, 16: 2}
_FIELD_NAMES = {7: "graph", 8: "opset_import", 14: "metadata_props", 25: "training_info", 26: "functions"}


def match_onnx(path: Path, head: bytes) -> bool:
    """Walk the first protobuf fields: an ONNX model starts with known ModelProto tags."""
    pos, seen_ir = 0, False
    for _ in range(16):
        if pos >= len(head):
            break
        tag, pos = _varint(head, pos)
        if tag is None:
            return False
        number, wire = tag >> 3, tag & 7
        if _ONNX_MODEL_FIELDS.get(number) != wire:
            return False
        value, pos = _varint(head, pos)
        if value is None:
            return False
        if number == 1:
            seen_ir = 1 <= value <= 64
        if wire == 2:
            if pos + value > len(head):  # a big field (the graph) runs past the head: good enough
                break
            pos += value
    return seen_ir


def check_onnx(path: Path) -> None:
    """Walk the protobuf framing of the ModelProto and of its graph: every field must fit the file.

    The sniff reads 8 KiB, so a model cut short still sniffs as one; this never calls a truncated
    or damaged file valid, without parsing a model of hundreds of MB."""
    import mmap

    with open_regular(path, "model") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        graph = _walk(data, 0, len(data), _ONNX_MODEL_FIELDS, path, "the model")
        if graph is None:
            raise UserError("Not a valid ONNX model: it holds no graph", path,
                            "The file may be truncated or not a model; export it again.")
        start, end = graph
        _walk(data, start, end, _GRAPH_FIELDS, path, "the graph")


def _walk(data, pos: int, end: int, fields: dict[int, int], path: Path, what: str) -> tuple[int, int] | None:
    """Check every field from ``pos`` to ``end``; return the span of field 7 (the graph) if any."""
    graph = None
    while pos < end:
        start = pos
        tag, pos = _varint(data[pos:pos + 10], 0)
        pos += start
        if tag is None:
            raise _damaged(path, what, start, "a field tag is cut off")
        number, wire = tag >> 3, tag & 7
        if fields.get(number, wire) != wire or wire not in (0, 1, 2, 5):
            raise _damaged(path, what, start, f"field {number} has wire type {wire}")
        if wire == 0:
            value, used = _varint(data[pos:pos + 10], 0)
            if value is None:
                raise _damaged(path, what, start, "a number is cut off")
            pos += used
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            length, used = _varint(data[pos:pos + 10], 0)
            if length is None:
                raise _damaged(path, what, start, "a length is cut off")
            pos += used
            if pos + length > end:
                name = _FIELD_NAMES.get(number, f"field {number}") if what == "the model" else f"field {number}"
                raise UserError(
                    f"Truncated ONNX model: {what}'s {name} needs {pos + length - end:,} more bytes "
                    f"than the file holds ({len(data):,} bytes)", path,
                    "The copy is incomplete; download or export the model again.")
            if number == 7 and what == "the model":
                graph = (pos, pos + length)
            pos += length
        if pos > end:
            raise _damaged(path, what, start, "the last field runs past the end")
    return graph


def _damaged(path: Path, what: str, offset: int, why: str) -> UserError:
    return UserError(f"Damaged ONNX model: {why} in {what} at byte {offset:,}", path,
                     "The file is corrupt or not an ONNX model; export or copy it again.")


def _varint(data, pos: int) -> tuple[int | None, int]:
    """:func:`read_varint` with None for a cut-off or overlong number (a sniff never raises)."""
    try:
        return read_varint(data, pos)
    except WireError:
        return None, pos


ONNX = FileFormat("onnx", "ONNX model", GRAPH, match_onnx, read_onnx, check=check_onnx)
