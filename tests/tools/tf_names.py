"""Models renamed as tf2onnx names them: every node ``model_1/X/BiasAdd;model_1/X/Conv2D`` and every
tensor that name with ``:0`` (the ``;`` of a fused TensorFlow op, the ``:`` of an output index)."""

from __future__ import annotations

import onnx


def tf_name(name: str) -> str:
    """The tf2onnx-style tensor name for ``name``."""
    return f"model_1/{name}/BiasAdd;model_1/{name}/Conv2D:0"


def tf_node(name: str) -> str:
    """The tf2onnx-style node name for ``name``."""
    return f"model_1/{name}/BiasAdd;model_1/{name}/Conv2D"


def tf_style(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with every tensor and node renamed tf2onnx's way (graph unchanged otherwise)."""
    graph = model.graph
    for value in [*graph.input, *graph.output, *graph.value_info]:
        value.name = tf_name(value.name)
    for tensor in graph.initializer:
        tensor.name = tf_name(tensor.name)
    for node in graph.node:
        node.name = tf_node(node.name)
        node.input[:] = [tf_name(i) if i else i for i in node.input]
        node.output[:] = [tf_name(o) if o else o for o in node.output]
    return model


def dynamic_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with axis 0 of its inputs and outputs left open (``N``)."""
    for value in [*model.graph.input, *model.graph.output]:
        dim = value.type.tensor_type.shape.dim[0]
        dim.Clear()
        dim.dim_param = "N"
    return model
