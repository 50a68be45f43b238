"""QDQ models keep their quantisation nodes through the local conversion: folding
DequantizeLinear(int8 weights) into float weights would make ONNX Runtime run float kernels and
change the numbers the quantised model computes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from studio.core.jobs import run_job
from studio.tools.convert.convert import convert_model
from studio.tools.convert.options import ConvertOptions


def _qdq_conv(path):
    rng = np.random.default_rng(3)
    weights = rng.integers(-127, 128, size=(8, 3, 3, 3), dtype=np.int8)
    inits = [numpy_helper.from_array(weights, "w_q"), numpy_helper.from_array(np.float32(0.02), "w_scale"),
             numpy_helper.from_array(np.int8(0), "w_zero"), numpy_helper.from_array(np.float32(0.05), "x_scale"),
             numpy_helper.from_array(np.uint8(128), "x_zero"), numpy_helper.from_array(np.float32(0.1), "y_scale"),
             numpy_helper.from_array(np.uint8(128), "y_zero")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["x_q"], name="qx"),
             helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero"], ["x_dq"], name="dqx"),
             helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["w_dq"], name="dqw"),
             helper.make_node("Conv", ["x_dq", "w_dq"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "y_scale", "y_zero"], ["c_q"], name="qy"),
             helper.make_node("DequantizeLinear", ["c_q", "y_scale", "y_zero"], ["y"], name="dqy")]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)


def test_fp32_conversion_keeps_dequantize_nodes_and_the_numbers(tmp_path):
    source, out = tmp_path / "qdq.onnx", tmp_path / "out.onnx"
    _qdq_conv(source)
    report = run_job(convert_model(ConvertOptions(model=source, output=out)))
    kept = [n.op_type for n in onnx.load(out).graph.node]
    assert kept.count("DequantizeLinear") == 3 and kept.count("QuantizeLinear") == 2, kept
    assert not any(f["pass"] == "ConstantFolding" for f in report.fusions if "dqw" in str(f))
    feed = {"x": np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    expected = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    np.testing.assert_array_equal(got, expected)
