"""FP16 simulation on a CPU: what an FP16 device would compute, overflow included.

ONNX Runtime's CPU provider runs an "FP16" model in FP32 behind inserted Casts, so FP16 overflow
never shows (measured: inf in a side-cast dump, finite network output). This module instead
rewrites an FP32 model so that

* every float initializer and Constant node value is rounded to FP16 where it is stored (values
  beyond ±65504 become ±inf, as on a device; constants stay constants, so ops that read them at
  load time, such as Resize's empty ``scales``, still load);
* every float graph input and every float node output goes through ``Cast(to=FLOAT16)`` then
  ``Cast(to=FLOAT)`` before anything reads it.

Attention-mask constants (``finfo(float32).min`` and the like, found by
:func:`studio.core.fp16_graph.mask_tensors`) are clamped to -65504 instead, as converters store
them: rounded to -inf, ``(1 - mask) * min`` turns into ``0 * -inf`` = NaN and every output reads NaN,
which no converted model does.

The same holds inside If/Loop/Scan bodies. Each op still computes in FP32, then its result is rounded to FP16 precision and range — the
behaviour of an FP16 device up to the accumulation precision inside one op. Tensor names are kept:
the op writes ``<name>__fp32``, the Cast pair writes ``<name>__fp16`` and then ``<name>``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

SUFFIX_RAW = "__fp32"
SUFFIX_HALF = "__fp16"


def simulate_fp16(model: onnx.ModelProto, keep: frozenset[str] | set[str] = frozenset()
                  ) -> tuple[onnx.ModelProto, list[str]]:
    """A copy of ``model`` that rounds weights and every float tensor through FP16.

    Sub-graph bodies (If branches, Loop and Scan bodies) are rounded the same way, at any depth.
    Ops named in ``keep`` stay in FP32, as ``--keep-fp32`` (ATC's ``--keep_dtype``) keeps them:
    their outputs are not rounded for the FP32 ops that read them, nor the weights only they read;
    an FP16 op reading a kept op's output reads it rounded, as the cast into an FP16 op does on a
    device. Returns the model and the node
    outputs left unrounded because shape inference could not tell their type (custom ops, for
    example) — the caller reports them.
    """
    import onnx

    from studio.core.fp16_graph import mask_tensors

    model = onnx.ModelProto.FromString(model.SerializeToString())
    float_types = _float_tensors(model)
    untyped: list[str] = []
    _round_graph(model.graph, float_types, untyped, top=True, counter=[0], keep=frozenset(keep),
                 masks=frozenset(mask_tensors(model)))
    return model, untyped


def _round_graph(graph, float_types: dict[str, bool], untyped: list[str], top: bool, counter: list[int],
                 keep: frozenset[str] = frozenset(), masks: frozenset[str] = frozenset()) -> None:
    """Round ``graph``'s float initializers, inputs (top level) and node outputs through FP16, in place
    (but the outputs of ops in ``keep``, and the weights only they read); constants in ``masks`` are
    clamped to the FP16 range."""
    import onnx
    from onnx import AttributeProto, TensorProto, helper, numpy_helper

    from studio.core.fp16_graph import clamp_to_fp16

    readers: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.name)
    with np.errstate(over="ignore"):
        for index, init in enumerate(graph.initializer):
            if keep and readers.get(init.name) and readers[init.name] <= keep:
                continue  # an FP32 op's own weight stays FP32
            if init.data_type == TensorProto.FLOAT:
                array = numpy_helper.to_array(init)
                rounded = (clamp_to_fp16(array) if init.name in masks else array.astype(np.float16)).astype(np.float32)
                graph.initializer[index].CopyFrom(numpy_helper.from_array(rounded, init.name))

    initializer_names = {i.name for i in graph.initializer}
    nodes = []
    renames: dict[str, str] = {}
    if top:  # graph inputs: feed the rounded copy to every consumer (bodies read them by name)
        for value in graph.input:
            if value.name in initializer_names or value.type.tensor_type.elem_type != TensorProto.FLOAT:
                continue
            nodes += _cast_pair(helper, TensorProto, value.name, value.name + SUFFIX_HALF + "_in",
                                value.name + "__rounded", f"fp16sim/{value.name}")
            renames[value.name] = value.name + "__rounded"
    kept_outputs: dict[str, str] = {}  # an FP32 op's output -> the FP16 copy the FP16 ops read
    for node in graph.node:
        new_node = onnx.NodeProto()
        new_node.CopyFrom(node)
        for i, name in enumerate(new_node.input):
            if name in renames:
                new_node.input[i] = renames[name]
            elif name in kept_outputs and node.name not in keep:
                new_node.input[i] = kept_outputs[name]  # the boundary into an FP16 op rounds, as on a device
        for attr in new_node.attribute:
            bodies = [attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)
            for body in bodies:
                if renames:
                    _rename_reads(body, renames)
                _round_graph(body, float_types, untyped, top=False, counter=counter, keep=keep)
        if node.name in keep:
            nodes.append(new_node)
            for i, name in enumerate(node.output):
                if name and float_types.get(name, False):
                    counter[0] += 1
                    kept_outputs[name] = name + SUFFIX_HALF + "_kept"
                    nodes += _cast_pair(helper, TensorProto, name, name + SUFFIX_HALF + "_keptcast",
                                        kept_outputs[name], f"fp16sim/{node.name or name}/{i}/{counter[0]}")
            continue
        if node.op_type == "Constant" and not node.domain:
            # Round the value where it is stored, as for initializers: behind a Cast pair it would stop
            # being a constant, and ops that must see their constant inputs (Resize's empty ``scales``
            # beside ``sizes``, Reshape's shape) would no longer load.
            _round_constant(new_node, clamp=bool(node.output) and node.output[0] in masks)
            nodes.append(new_node)
            continue
        if node.op_type == "ConstantOfShape" and not node.domain and node.output and node.output[0] in masks:
            _round_constant(new_node, clamp=True)  # the fill value of a mask: clamped like a stored constant
        pairs = []
        for i, name in enumerate(node.output):
            if name and name not in float_types:
                untyped.append(name)
            if name and float_types.get(name, False):
                new_node.output[i] = name + SUFFIX_RAW
                # Node names repeat in some exports (OpenVINO's "F0::anon"); a counter keeps ours unique.
                counter[0] += 1
                pairs += _cast_pair(helper, TensorProto, name + SUFFIX_RAW, name + SUFFIX_HALF, name,
                                    f"fp16sim/{node.name or name}/{i}/{counter[0]}")
        nodes.append(new_node)
        nodes += pairs
    del graph.node[:]
    graph.node.extend(nodes)


def _round_constant(node, clamp: bool = False) -> None:
    """Round a Constant (or ConstantOfShape) node's float value (``value`` tensor, ``value_float(s)``)
    to FP16, in place; ``clamp``: finite values beyond ±65504 become ±65504, not ±inf."""
    from onnx import TensorProto, numpy_helper

    from studio.core.fp16_graph import clamp_to_fp16

    def half(values) -> np.ndarray:
        values = np.asarray(values, dtype=np.float32)
        return (clamp_to_fp16(values) if clamp else values.astype(np.float16)).astype(np.float32)

    with np.errstate(over="ignore"):
        for attr in node.attribute:
            if attr.name == "value" and attr.t.data_type == TensorProto.FLOAT:
                attr.t.CopyFrom(numpy_helper.from_array(half(numpy_helper.to_array(attr.t)), attr.t.name))
            elif attr.name == "value_float":
                attr.f = float(half(attr.f))
            elif attr.name == "value_floats":
                attr.floats[:] = [float(v) for v in half(attr.floats)]


def _rename_reads(graph, renames: dict[str, str]) -> None:
    """Make a body read the rounded copies of the outer graph's inputs (unless it shadows them)."""
    from onnx import AttributeProto

    own = {v.name for v in graph.input} | {i.name for i in graph.initializer}
    active = {k: v for k, v in renames.items() if k not in own}
    if not active:
        return
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in active:
                node.input[i] = active[name]
        for attr in node.attribute:
            for body in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
                _rename_reads(body, active)


def subgraph_ops(model: onnx.ModelProto) -> tuple[int, list[str]]:
    """(ops inside sub-graph bodies at any depth, names of the top-level nodes that hold them)."""
    from onnx import AttributeProto

    def count(graph) -> int:
        total = 0
        for node in graph.node:
            for attr in node.attribute:
                for body in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
                    total += len(body.node) + count(body)
        return total

    holders, total = [], 0
    for index, node in enumerate(model.graph.node):
        inside = 0
        for attr in node.attribute:
            for body in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
                inside += len(body.node) + count(body)
        if inside:
            holders.append(node.name or f"{node.op_type}_{index}")
            total += inside
    return total, holders


def _cast_pair(helper, TensorProto, source: str, half: str, out: str, prefix: str) -> list:
    return [helper.make_node("Cast", [source], [half], name=f"{prefix}/to_fp16", to=TensorProto.FLOAT16),
            helper.make_node("Cast", [half], [out], name=f"{prefix}/to_fp32", to=TensorProto.FLOAT)]


def _float_tensors(model: onnx.ModelProto) -> dict[str, bool]:
    """Tensor name -> True when shape inference says it is FP32 (sub-graph bodies included)."""
    import onnx
    from onnx import AttributeProto, TensorProto

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - inference is best effort; fall back to declared types
        inferred = model
    types: dict[str, bool] = {}

    def collect(graph) -> None:
        for value in list(graph.value_info) + list(graph.output) + list(graph.input):
            types[value.name] = value.type.tensor_type.elem_type == TensorProto.FLOAT
        for node in graph.node:
            for attr in node.attribute:
                for body in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
                    collect(body)

    collect(inferred.graph)
    return types
