"""Generated models of the kinds that broke on real exports (deterministic, built with onnx.helper).

* ``paddle_style_model``: weights in Constant nodes, scalar (rank-0) Constants read by Clip and
  Div, a dynamic batch — as PaddlePaddle's paddle2onnx writes them (PP-OCR det/rec/cls).
* ``shape_if_model``: an If whose condition is ``Shape(x)[0] == 1`` and whose other branch does
  not fit a batch of 1 — the PyTorch-exported pattern of silero-vad.
* ``value_if_model``: the same branches chosen by an input's value (a flag), not by a shape.
* ``overflow_if_model``: an If whose branch overflows FP16 inside (x * 1000 / 1000).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def _model(graph, opset: int = 13) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _const(name: str, array: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], name=f"{name}_node", value=numpy_helper.from_array(array, name))


def paddle_style_model(seed: int = 0) -> onnx.ModelProto:
    """x[N,3,16,16] -> Conv -> BN -> Clip(0, 6 as scalar Constants) -> Div(scalar) -> Conv -> Sigmoid."""
    rng = np.random.default_rng(seed)
    consts = [
        _const("w1", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)),
        _const("b1", rng.normal(0, 0.1, 8).astype(np.float32)),
        _const("bn_s", rng.normal(1, 0.1, 8).astype(np.float32)),
        _const("bn_b", rng.normal(0, 0.1, 8).astype(np.float32)),
        _const("bn_m", rng.normal(0, 0.1, 8).astype(np.float32)),
        _const("bn_v", rng.uniform(0.5, 1.5, 8).astype(np.float32)),
        _const("clip_min", np.array(0.0, np.float32)),   # rank 0, as Paddle writes them
        _const("clip_max", np.array(6.0, np.float32)),
        _const("six", np.array(6.0, np.float32)),
        _const("w2", (rng.standard_normal((2, 8, 1, 1)) * 0.3).astype(np.float32)),
    ]
    nodes = consts + [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], name="bn"),
        helper.make_node("Clip", ["bn", "clip_min", "clip_max"], ["clip"], name="relu6"),
        helper.make_node("Div", ["clip", "six"], ["div"], name="div"),
        helper.make_node("Conv", ["div", "w2"], ["c2"], name="conv2"),
        helper.make_node("Sigmoid", ["c2"], ["y"], name="sigmoid"),
    ]
    graph = helper.make_graph(nodes, "paddle", [helper.make_tensor_value_info("x", F, ["p2o.DynamicDimension.0", 3, 16, 16])],
                              [helper.make_tensor_value_info("y", F, ["p2o.DynamicDimension.0", 2, 16, 16])])
    return _model(graph, 11)


def _branches(tag: str):
    """then: batch of 1 -> Squeeze + Unsqueeze (identity); else: split the batch in two halves and add them."""
    then = helper.make_graph(
        [helper.make_node("Squeeze", ["x", "axis0"], [f"{tag}_sq"], name=f"{tag}/squeeze"),
         helper.make_node("Unsqueeze", [f"{tag}_sq", "axis0"], [f"{tag}_then_out"], name=f"{tag}/unsqueeze")],
        f"{tag}_then", [], [helper.make_tensor_value_info(f"{tag}_then_out", F, [None, 4])])
    other = helper.make_graph(
        [helper.make_node("Split", ["x", "halves"], [f"{tag}_a", f"{tag}_b"], name=f"{tag}/split", axis=0),
         helper.make_node("Add", [f"{tag}_a", f"{tag}_b"], [f"{tag}_else_out"], name=f"{tag}/add")],
        f"{tag}_else", [], [helper.make_tensor_value_info(f"{tag}_else_out", F, [None, 4])])
    return then, other


def shape_if_model() -> onnx.ModelProto:
    """x[N,4] -> If(Shape(x)[0] == 1) -> *2 -> y. With N fixed at 1 the else branch cannot split N=1 in 2."""
    then, other = _branches("b")
    nodes = [
        _const("axis0", np.array([0], np.int64)),
        _const("halves", np.array([1, 1], np.int64)),
        _const("zero", np.array(0, np.int64)),
        _const("one", np.array(1, np.int64)),
        _const("two", np.array(2.0, np.float32)),
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="gather", axis=0),
        helper.make_node("Equal", ["batch", "one"], ["is_one"], name="equal"),
        helper.make_node("If", ["is_one"], ["picked"], name="batch_if", then_branch=then, else_branch=other),
        helper.make_node("Mul", ["picked", "two"], ["y"], name="mul"),
    ]
    graph = helper.make_graph(nodes, "shape_if", [helper.make_tensor_value_info("x", F, ["N", 4])],
                              [helper.make_tensor_value_info("y", F, [None, 4])])
    return _model(graph)


def value_if_model() -> onnx.ModelProto:
    """Like :func:`shape_if_model`, but a bool input ``flag`` picks the branch (not resolvable)."""
    then, other = _branches("v")
    nodes = [
        _const("axis0", np.array([0], np.int64)),
        _const("halves", np.array([1, 1], np.int64)),
        helper.make_node("If", ["flag"], ["y"], name="flag_if", then_branch=then, else_branch=other),
    ]
    graph = helper.make_graph(nodes, "value_if", [helper.make_tensor_value_info("x", F, ["N", 4]),
                                                  helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", F, [None, 4])])
    return _model(graph)


def overflow_if_model() -> onnx.ModelProto:
    """x[1,8] -> If(flag): then x*1000/1000 (overflows FP16 for |x| > 65.5), else x -> Relu -> y."""
    then = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["big"], name="then/mul"),
         helper.make_node("Div", ["big", "k"], ["back"], name="then/div")],
        "then", [], [helper.make_tensor_value_info("back", F, [1, 8])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["same"], name="else/id")], "else", [],
                              [helper.make_tensor_value_info("same", F, [1, 8])])
    nodes = [
        _const("k", np.array(1000.0, np.float32)),
        helper.make_node("If", ["flag"], ["picked"], name="scale_if", then_branch=then, else_branch=other),
        helper.make_node("Relu", ["picked"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(nodes, "overflow_if", [helper.make_tensor_value_info("x", F, [1, 8]),
                                                     helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", F, [1, 8])])
    return _model(graph)


def ort_run(model_or_path, feeds: dict) -> list[np.ndarray]:
    """The model's outputs from a plain ONNX Runtime session (the independent reference)."""
    import onnxruntime as ort

    source = model_or_path.SerializeToString() if isinstance(model_or_path, onnx.ModelProto) else str(model_or_path)
    return ort.InferenceSession(source, providers=["CPUExecutionProvider"]).run(None, feeds)


def overflow_loop_model() -> onnx.ModelProto:
    """x[4] -> Loop 3 times: v * 1000 / 1000 (overflows FP16 inside the body for |v| > 65.5) -> y."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body/cond"),
         helper.make_node("Mul", ["v_in", "k"], ["v_big"], name="body/mul"),
         helper.make_node("Div", ["v_big", "k"], ["v_out"], name="body/div")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v_in", F, [4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", F, [4])])
    inits = [numpy_helper.from_array(np.array(3, np.int64), "n"), numpy_helper.from_array(np.array(True), "c"),
             numpy_helper.from_array(np.array(1000.0, np.float32), "k")]
    graph = helper.make_graph([helper.make_node("Loop", ["n", "c", "x"], ["y"], name="loop", body=body)], "loop",
                              [helper.make_tensor_value_info("x", F, [4])], [helper.make_tensor_value_info("y", F, [4])],
                              initializer=inits)
    return _model(graph)
