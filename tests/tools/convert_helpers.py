"""Small generated models for the converter's tests (deterministic seeds, built with onnx.helper)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, outputs, inits, opset: int = 13) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


def conv_bn_model(size: int = 32, channels: int = 3, batch: int | str = 1, seed: int = 0,
                  constants_as_nodes: bool = False) -> onnx.ModelProto:
    """image -> Conv(3x3) -> BatchNormalization -> Relu -> Conv(1x1) -> out.

    With ``constants_as_nodes`` every weight is a Constant node (as Paddle exports them).
    """
    rng = np.random.default_rng(seed)
    arrays = {
        "conv/weight": rng.standard_normal((8, channels, 3, 3)).astype(np.float32) * 0.3,
        "conv/bias": rng.normal(0, 0.1, 8).astype(np.float32),
        "bn/scale": rng.normal(1, 0.1, 8).astype(np.float32),
        "bn/bias": rng.normal(0, 0.1, 8).astype(np.float32),
        "bn/mean": rng.normal(0, 0.1, 8).astype(np.float32),
        "bn/var": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "head/weight": rng.standard_normal((4, 8, 1, 1)).astype(np.float32) * 0.3,
    }
    nodes = [
        helper.make_node("Conv", ["image", "conv/weight", "conv/bias"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv", "bn/scale", "bn/bias", "bn/mean", "bn/var"], ["bn"],
                         name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["relu"], name="relu"),
        helper.make_node("Conv", ["relu", "head/weight"], ["out"], name="head"),
    ]
    inits = []
    if constants_as_nodes:
        nodes = [helper.make_node("Constant", [], [name], name=f"const_{name}",
                                  value=numpy_helper.from_array(array, name)) for name, array in arrays.items()] + nodes
    else:
        inits = [numpy_helper.from_array(array, name) for name, array in arrays.items()]
    inputs = [helper.make_tensor_value_info("image", TensorProto.FLOAT, [batch, channels, size, size])]
    outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, [batch, 4, size, size])]
    return _model(nodes, inputs, outputs, inits)


def affine_chain_model(seed: int = 1) -> onnx.ModelProto:
    """Conv -> Mul(per-channel) -> Add(per-channel) -> Identity -> Relu, plus a Shape chain to fold."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(rng.standard_normal((6, 3, 3, 3)).astype(np.float32) * 0.3, "w"),
        numpy_helper.from_array(rng.uniform(0.5, 2, (6, 1, 1)).astype(np.float32), "scale"),
        numpy_helper.from_array(rng.normal(0, 0.5, (1, 6, 1, 1)).astype(np.float32), "shift"),
        numpy_helper.from_array(np.array([0], np.int64), "zero_axis"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Mul", ["c", "scale"], ["m"], name="mul"),
        helper.make_node("Add", ["m", "shift"], ["a"], name="add"),
        helper.make_node("Identity", ["a"], ["i"], name="identity"),
        helper.make_node("Relu", ["i"], ["r"], name="relu"),
        # Shape -> Gather -> Unsqueeze -> Concat -> Reshape: folds to a constant target shape
        helper.make_node("Shape", ["r"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero_axis"], ["n"], name="gather", axis=0),
        helper.make_node("Constant", [], ["minus1"], name="minus1", value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("Concat", ["n", "minus1"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["r", "target"], ["y"], name="reshape"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    return _model(nodes, inputs, outputs, inits)


def run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    """Run a model with ONNX Runtime on CPU."""
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)
