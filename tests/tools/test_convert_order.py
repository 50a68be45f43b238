"""Models whose nodes are written out of topological order (paddle2onnx does it) convert: the
converter sorts them, stably, says so, and the result computes what ONNX Runtime computes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from studio.core.jobs import run_job
from studio.tools.convert.options import ConvertOptions
from studio.tools.convert.convert import convert_model
from studio.tools.convert.passes.order import is_sorted, sort_nodes


def _unsorted_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [  # "relu" reads "a", which "abs" writes two nodes later
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
        helper.make_node("Neg", ["x"], ["n"], name="neg"),
        helper.make_node("Abs", ["n"], ["a"], name="abs"),
        helper.make_node("Add", ["b", "n"], ["y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_sort_is_stable_and_leaves_sorted_graphs_alone():
    model = _unsorted_model()
    assert not is_sorted(model.graph)
    assert sort_nodes(model.graph)
    assert [n.name for n in model.graph.node] == ["neg", "abs", "relu", "add"]
    onnx.checker.check_model(model)
    assert not sort_nodes(model.graph)  # already sorted: untouched


def test_outer_reads_of_a_body_are_dependencies():
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, [1])
    then_out = helper.make_tensor_value_info("t", TensorProto.FLOAT, [1])
    branch = helper.make_graph([helper.make_node("Identity", ["k"], ["t"])], "b", [], [then_out])
    nodes = [helper.make_node("If", ["c"], ["o"], then_branch=branch, else_branch=branch, name="if"),
             helper.make_node("Constant", [], ["k"], name="k", value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.0]))]
    model = helper.make_model(helper.make_graph(nodes, "g", [cond], [out]), opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    assert not is_sorted(model.graph)
    assert sort_nodes(model.graph)
    assert [n.name for n in model.graph.node] == ["k", "if"]


def test_convert_sorts_says_so_and_keeps_the_numbers(tmp_path):
    source = tmp_path / "unsorted.onnx"
    onnx.save(_unsorted_model(), source)
    out = tmp_path / "out.onnx"
    report = run_job(convert_model(ConvertOptions(model=source, output=out)))
    assert any("topological order" in w for w in report.warnings)
    converted = onnx.load(out)
    assert is_sorted(converted.graph)
    feed = {"x": np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)}
    expected = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(expected, np.abs(-feed["x"]) - feed["x"], rtol=1e-6)  # relu(|-x|) + (-x)
