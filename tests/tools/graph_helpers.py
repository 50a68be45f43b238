"""Small ONNX models with the features the graph reader must handle (shared by graph tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def feature_model(folder: Path, external: bool = True) -> Path:
    """A model with an If (two subgraphs), a Loop body, a local function, dynamic dims, external data."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    weight = numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(8, 8), "dense/weight")
    then_g = helper.make_graph([helper.make_node("Relu", ["h"], ["then_out"], name="then/relu")], "then_branch",
                               [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Sigmoid", ["h"], ["else_out"], name="else/sigmoid")], "else_branch",
                               [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, None)])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="body/cond"),
         helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"], name="body/add")],
        "loop_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, None)])
    func = helper.make_function("custom", "Swish", ["X"], ["Y"],
                                [helper.make_node("Sigmoid", ["X"], ["s"]), helper.make_node("Mul", ["X", "s"], ["Y"])],
                                [helper.make_opsetid("", 17)])
    trip = numpy_helper.from_array(np.array(2, dtype=np.int64), "trip")
    nodes = [
        helper.make_node("MatMul", ["x", "dense/weight"], ["h"], name="dense/matmul"),
        helper.make_node("If", ["cond"], ["branch"], name="gate/if", then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["trip", "cond", "branch"], ["looped"], name="repeat/loop", body=body),
        helper.make_node("Swish", ["looped"], ["y"], name="head/swish", domain="custom"),
    ]
    graph = helper.make_graph(nodes, "features", [x, cond], [y], [weight, trip])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)],
                              functions=[func], producer_name="graph-tests")
    helper.set_model_props(model, {"author": "tests"})
    path = folder / "features.onnx"
    if external:
        onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location="features.weights", size_threshold=0)
    else:
        onnx.save(model, str(path))
    return path


def residual_scopes_model(folder: Path, blocks: int = 1100) -> Path:
    """A deep residual net whose nodes are named ``block{i}/conv1`` ...: more than 1,000 scope groups
    side by side at the top level (the graph is split into sections that hold them)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.full((4, 4, 3, 3), 0.01, dtype=np.float32), "w")
    nodes, x = [], "image"
    for i in range(blocks):
        s = f"block{i}"
        nodes += [helper.make_node("Conv", [x, "w"], [f"{s}/c1"], name=f"{s}/conv1", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"{s}/c1"], [f"{s}/r1"], name=f"{s}/relu1"),
                  helper.make_node("Conv", [f"{s}/r1", "w"], [f"{s}/c2"], name=f"{s}/conv2", pads=[1, 1, 1, 1]),
                  helper.make_node("Add", [f"{s}/c2", x], [f"{s}/out"], name=f"{s}/add")]
        x = f"{s}/out"
    graph = helper.make_graph(nodes, "deep_residual", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                                     [1, 4, 8, 8])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 4, 8, 8])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "deep_residual.onnx"
    onnx.save(model, str(path))
    return path


def constant_weights_model(folder: Path, blocks: int = 40) -> Path:
    """Like a PaddlePaddle export: every weight is a ``Constant`` node (no initializers), nodes are named
    ``p2o.Conv.0`` (no scopes) and the input is dynamic ``[N,3,H,W]`` with Paddle's dim names."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    nodes = []
    count = [0]

    def const(array: np.ndarray) -> str:
        name = f"p2o.Constant.{count[0]}"
        count[0] += 1
        nodes.append(helper.make_node("Constant", [], [name], name=name,
                                      value=numpy_helper.from_array(array.astype(np.float32), name + ".value")))
        return name

    x, channels = "x", 3
    for i in range(blocks):
        w = const(rng.standard_normal((8, channels, 3, 3)) * 0.1)
        b = const(rng.standard_normal(8) * 0.1)
        nodes.append(helper.make_node("Conv", [x, w, b], [f"conv{i}"], name=f"p2o.Conv.{i}", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Mul", [f"conv{i}", const(np.array(0.5))], [f"mul{i}"], name=f"p2o.Mul.{i}"))
        nodes.append(helper.make_node("Add", [f"mul{i}", const(np.array([0.1]))], [f"add{i}"], name=f"p2o.Add.{i}"))
        nodes.append(helper.make_node("Relu", [f"add{i}"], [f"relu{i}"], name=f"p2o.Relu.{i}"))
        x, channels = f"relu{i}", 8
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="p2o.GlobalAveragePool.0"))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="p2o.Flatten.0"))
    nodes.append(helper.make_node("MatMul", ["flat", const(rng.standard_normal((8, 10)))], ["logits"],
                                  name="p2o.MatMul.0"))
    dims = ["p2o.DynamicDimension.0", 3, "p2o.DynamicDimension.1", "p2o.DynamicDimension.2"]
    graph = helper.make_graph(nodes, "Model from PaddlePaddle.",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["p2o.DynamicDimension.3", 10])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)], producer_name="PaddlePaddle")
    model.ir_version = 7
    path = folder / "paddle_like.onnx"
    onnx.save(model, str(path))
    return path


def outer_scope_if_model(folder: Path) -> Path:
    """Like silero-vad: inputs ``input`` and ``state`` are read only inside If bodies, one of which holds
    a nested If (so a node two levels down exists); ``sr`` picks the branch."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    f = TensorProto.FLOAT
    st = [2, "batch", 16]
    inner_then = helper.make_graph([helper.make_node("Tanh", ["state"], ["deep_out"], name="decoder/deep_tanh")],
                                   "inner_then", [], [helper.make_tensor_value_info("deep_out", f, st)])
    inner_else = helper.make_graph([helper.make_node("Sigmoid", ["state"], ["deep_out2"], name="decoder/deep_sig")],
                                   "inner_else", [], [helper.make_tensor_value_info("deep_out2", f, st)])
    then_g = helper.make_graph(
        [helper.make_node("Constant", [], ["half"], name="half", value=numpy_helper.from_array(np.array(0.5, np.float32))),
         helper.make_node("Mul", ["input", "half"], ["scaled"], name="encoder/scale"),
         helper.make_node("ReduceMean", ["state"], ["flag_f"], name="decoder/mean", keepdims=0),
         helper.make_node("Greater", ["flag_f", "half"], ["flag"], name="decoder/flag"),
         helper.make_node("If", ["flag"], ["inner"], name="decoder/If", then_branch=inner_then, else_branch=inner_else),
         helper.make_node("ReduceSum", ["scaled"], ["out_t"], name="head/sum", keepdims=0)],
        "then_branch", [], [helper.make_tensor_value_info("out_t", f, []), helper.make_tensor_value_info("inner", f, st)])
    else_g = helper.make_graph(
        [helper.make_node("ReduceMax", ["input"], ["out_e"], name="head/max", keepdims=0),
         helper.make_node("Identity", ["state"], ["state_e"], name="state/keep")],
        "else_branch", [], [helper.make_tensor_value_info("out_e", f, []), helper.make_tensor_value_info("state_e", f, st)])
    nodes = [helper.make_node("Constant", [], ["rate"], name="rate", value=numpy_helper.from_array(np.array(16000, np.int64))),
             helper.make_node("Equal", ["sr", "rate"], ["is16k"], name="Equal_0"),
             helper.make_node("If", ["is16k"], ["output", "stateN"], name="If_0", then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "vad_like",
                              [helper.make_tensor_value_info("input", f, ["batch", "samples"]),
                               helper.make_tensor_value_info("state", f, [2, "batch", 16]),
                               helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
                              [helper.make_tensor_value_info("output", f, []), helper.make_tensor_value_info("stateN", f, st)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    model.ir_version = 8
    path = folder / "vad_like.onnx"
    onnx.save(model, str(path))
    return path
