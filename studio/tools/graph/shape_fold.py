"""Shape inference that folds the graph's shape computations once the input sizes are known.

Exporters compute sizes inside the graph: PyTorch's BERT takes ``Shape(input_ids)[1]`` to slice
its position-id buffer, builds an ``Expand`` target with ``ConstantOfShape``/``Equal``/``Where``
and reshapes every attention head with ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``.
ONNX shape inference (even with data propagation) does not carry values through all of these
(``Slice`` and ``Expand`` of propagated values, ``Where``), so everything downstream, every MatMul
included, is left with unknown dims.

With every input size given, those chains are plain arithmetic on small integer tensors: this
module evaluates them with numpy (the ops below, on tensors of at most :data:`MAX_ELEMENTS`),
writes the results into a light copy of the model as initializers, and infers again, until no
more folds. Nothing is guessed: a node is folded only when all its inputs are known values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_ELEMENTS = 1 << 16  # larger values are data, not shapes: never folded
MAX_ROUNDS = 8
_LIGHT_WEIGHT = 1 << 12  # initializers above this many elements become typed inputs in the light copy


def infer_folded(proto: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """(inferred light ModelProto, {tensor name: folded value}) for ``proto`` (not changed).

    The light copy holds no large weights (they become graph inputs of the same type and shape), so
    each round of inference is cheap. Raises what ONNX shape inference raises.
    """
    import onnx

    work = _light_copy(proto)
    consts = _constants(work.graph)
    folded: dict[str, np.ndarray] = {}
    inferred = work
    for _ in range(MAX_ROUNDS):
        inferred = onnx.shape_inference.infer_shapes(work, strict_mode=False, data_prop=True)
        fresh = _fold_pass(work.graph, _known_shapes(inferred.graph), consts)
        if not fresh:
            break
        folded.update(fresh)
        _replace_by_initializers(work.graph, fresh)
    return inferred, folded


def _light_copy(proto: Any) -> Any:
    """``proto`` with its large weights turned into typed graph inputs (their shapes are all
    inference needs; serialising 100 MB of weights once per round is what this avoids)."""
    import onnx
    from onnx import helper

    work = onnx.ModelProto()
    work.CopyFrom(proto)
    work.graph.ClearField("initializer")
    # declared symbolic dims would stay (inference keeps a declaration it cannot contradict): the
    # outputs' go, and so do value_info entries with one (inference writes them anew)
    for out in work.graph.output:
        tensor = out.type.tensor_type
        if out.type.HasField("tensor_type") and not _concrete(tensor):
            tensor.ClearField("shape")
    infos = [vi for vi in work.graph.value_info if vi.type.HasField("tensor_type") and _concrete(vi.type.tensor_type)]
    del work.graph.value_info[:]
    work.graph.value_info.extend(infos)
    declared = {i.name for i in work.graph.input}
    for tensor in proto.graph.initializer:
        size = int(np.prod(tensor.dims)) if tensor.dims else 1
        if size <= _LIGHT_WEIGHT and tensor.data_location != onnx.TensorProto.EXTERNAL:
            work.graph.initializer.add().CopyFrom(tensor)
        elif tensor.name not in declared:
            work.graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    return work


def _concrete(tensor_type) -> bool:
    """True when a tensor type has a shape whose every dim is a size."""
    return tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in tensor_type.shape.dim)


def _constants(graph: Any) -> dict[str, np.ndarray]:
    """Small values known before any fold: initializers and Constant nodes."""
    from onnx import numpy_helper

    out = {}
    for tensor in graph.initializer:
        try:
            out[tensor.name] = numpy_helper.to_array(tensor)
        except Exception:  # noqa: BLE001 - an unreadable tensor is simply not a known value
            pass
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            value = _constant_value(node)
            if value is not None and value.size <= MAX_ELEMENTS:
                out[node.output[0]] = value
    return out


def _constant_value(node: Any) -> np.ndarray | None:
    from onnx import helper, numpy_helper

    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if attr.name == "value":
            return numpy_helper.to_array(value)
        if attr.name in ("value_int", "value_float"):
            return np.array(value, np.int64 if attr.name == "value_int" else np.float32)
        if attr.name in ("value_ints", "value_floats"):
            return np.array(value, np.int64 if attr.name == "value_ints" else np.float32)
    return None


def _known_shapes(graph: Any) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape, for the tensors whose every dim is a size."""
    out = {}
    for info in (*graph.input, *graph.output, *graph.value_info):
        tensor = info.type.tensor_type
        if not info.type.HasField("tensor_type") or not tensor.HasField("shape"):
            continue
        dims = tensor.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            out[info.name] = tuple(int(d.dim_value) for d in dims)
    for tensor in graph.initializer:
        out[tensor.name] = tuple(int(d) for d in tensor.dims)
    return out


def _fold_pass(graph: Any, shapes: dict[str, tuple[int, ...]], consts: dict[str, np.ndarray]
               ) -> dict[str, np.ndarray]:
    """Evaluate every node whose inputs are known; returns the new values (also added to ``consts``)."""
    from onnx import helper

    from studio.tools.graph.shape_ops import evaluate

    fresh = {}
    for node in graph.node:
        if node.op_type == "Constant" or not node.output or node.domain not in ("", "ai.onnx"):
            continue
        if all(o in consts for o in node.output if o):
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type in ("Shape", "Size"):
            shape = shapes.get(node.input[0])
            if shape is None:
                continue
            if node.op_type == "Size":
                value = np.array(int(np.prod(shape)), np.int64)
            else:
                value = np.array(shape[slice(attrs.get("start", 0), attrs.get("end"))], np.int64)
            outputs = [value]
        else:
            if any(i and i not in consts for i in node.input):
                continue
            try:
                outputs = evaluate(node.op_type, [consts[i] if i else None for i in node.input], attrs)
            except Exception:  # noqa: BLE001 - an op we cannot evaluate stays for inference to size
                outputs = None
        if not outputs or any(o is None or np.asarray(o).size > MAX_ELEMENTS for o in outputs):
            continue
        for name, value in zip(node.output, outputs):
            if name:
                consts[name] = fresh[name] = np.asarray(value)
    return fresh


def _replace_by_initializers(graph: Any, fresh: dict[str, np.ndarray]) -> None:
    """Nodes whose outputs are all folded give way to initializers holding those outputs."""
    from onnx import numpy_helper

    outputs = {o.name for o in graph.output}
    keep = []
    for node in graph.node:
        names = [o for o in node.output if o]
        if names and all(o in fresh for o in names) and not outputs.intersection(names):
            for name in names:
                graph.initializer.append(numpy_helper.from_array(fresh[name], name))
        else:
            keep.append(node)
    if len(keep) != len(graph.node):
        del graph.node[:]
        graph.node.extend(keep)
    folded = set(fresh)
    infos = [vi for vi in graph.value_info if vi.name not in folded]
    del graph.value_info[:]
    graph.value_info.extend(infos)
