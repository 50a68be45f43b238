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
