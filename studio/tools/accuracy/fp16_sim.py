"""FP16 simulation on a CPU: what an FP16 device would compute, overflow included.

ONNX Runtime's CPU provider runs an "FP16" model in FP32 behind inserted Casts, so FP16 overflow
never shows (measured: inf in a side-cast dump, finite network output). This module instead
rewrites an FP32 model so that

* every float initializer is rounded to FP16 (values beyond ±65504 become ±inf, as on a device);
* every float graph input and every float node output goes through ``Cast(to=FLOAT16)`` then
  ``Cast(to=FLOAT)`` before anything reads it.

Each op still computes in FP32, then its result is rounded to FP16 precision and range — the
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


def simulate_fp16(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """A copy of ``model`` that rounds weights and every float tensor through FP16.

    Returns the model and the node outputs left unrounded because shape inference could not
    tell their type (custom ops, for example) — the caller reports them.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    float_types = _float_tensors(model)

    with np.errstate(over="ignore"):
        for index, init in enumerate(graph.initializer):
            if init.data_type == TensorProto.FLOAT:
                array = numpy_helper.to_array(init)
                rounded = array.astype(np.float16).astype(np.float32)
                graph.initializer[index].CopyFrom(numpy_helper.from_array(rounded, init.name))

    initializer_names = {i.name for i in graph.initializer}
    nodes, untyped = [], []
    # Graph inputs: feed the rounded copy to every consumer.
    renames: dict[str, str] = {}
    for value in graph.input:
        if value.name in initializer_names or value.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        nodes += _cast_pair(helper, TensorProto, value.name, value.name + SUFFIX_HALF + "_in",
                            value.name + "__rounded", f"fp16sim/{value.name}")
        renames[value.name] = value.name + "__rounded"
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in renames:
                node.input[i] = renames[name]
        new_node = onnx.NodeProto()
        new_node.CopyFrom(node)
        pairs = []
        for i, name in enumerate(node.output):
            if name and name not in float_types:
                untyped.append(name)
            if name and float_types.get(name, False):
                new_node.output[i] = name + SUFFIX_RAW
                pairs += _cast_pair(helper, TensorProto, name + SUFFIX_RAW, name + SUFFIX_HALF, name,
                                    f"fp16sim/{node.name or name}/{i}")
        nodes.append(new_node)
        nodes += pairs
    del graph.node[:]
    graph.node.extend(nodes)
    return model, untyped


def _cast_pair(helper, TensorProto, source: str, half: str, out: str, prefix: str) -> list:
    return [helper.make_node("Cast", [source], [half], name=f"{prefix}/to_fp16", to=TensorProto.FLOAT16),
            helper.make_node("Cast", [half], [out], name=f"{prefix}/to_fp32", to=TensorProto.FLOAT)]


def _float_tensors(model: onnx.ModelProto) -> dict[str, bool]:
    """Tensor name -> True when shape inference says it is FP32."""
    import onnx
    from onnx import TensorProto

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - inference is best effort; fall back to declared types
        inferred = model
    types = {}
    for value in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        types[value.name] = value.type.tensor_type.elem_type == TensorProto.FLOAT
    return types
