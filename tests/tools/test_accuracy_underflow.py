"""FP16 underflow is told apart from overflow, and the op named is the one whose output underflows.

The models show the mechanism on the two patterns real exports hold: a log-energy
``Log(var + 1e-10)`` and a LayerNorm-style ``x / Sqrt(var + 1e-10)``. A silent (all-zero) or
constant frame has variance 0, so the epsilon is all that keeps the result finite; FP16 has
nothing below 6e-8 and stores 1e-10 as 0.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from studio.core.jobs import run_job
from studio.tools.accuracy.fp16_check import csv_path, fp16_check_job
from studio.tools.accuracy.report_csv import read_csv
from studio.tools.convert.convert import convert_model
from studio.tools.convert.options import ConvertOptions

OVERFLOW, UNDERFLOW = "fp16_overflow", "fp16_underflow"  # finding types


def _frames() -> np.ndarray:
    x = np.random.default_rng(0).standard_normal((1, 4, 64)).astype(np.float32)
    x[0, 1] = 0.0   # a silent frame (padding)
    x[0, 3] = 0.25  # a constant frame
    return x


def _variance_nodes() -> list:
    return [helper.make_node("ReduceMean", ["x"], ["mean"], name="mean", axes=[2], keepdims=1),
            helper.make_node("Sub", ["x", "mean"], ["centred"], name="centre"),
            helper.make_node("Mul", ["centred", "centred"], ["sq"], name="square"),
            helper.make_node("ReduceMean", ["sq"], ["var"], name="variance", axes=[2], keepdims=1),
            helper.make_node("Add", ["var", "eps"], ["var_eps"], name="add_eps")]


def _save(path, nodes, out_shape, extra_inits=()):
    inits = [numpy_helper.from_array(np.array(1e-10, np.float32), "eps"), *extra_inits]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def log_energy_model(path):
    """y = 0.5 * Log(var + 1e-10) per frame."""
    nodes = _variance_nodes() + [helper.make_node("Log", ["var_eps"], ["logvar"], name="log"),
                                 helper.make_node("Mul", ["logvar", "half"], ["y"], name="scale")]
    return _save(path, nodes, [1, 4, 1], [numpy_helper.from_array(np.array(0.5, np.float32), "half")])


def layer_norm_model(path):
    """y = (x - mean) / Sqrt(var + 1e-10): the Div blows up, the Sqrt's input underflowed first."""
    nodes = _variance_nodes() + [helper.make_node("Sqrt", ["var_eps"], ["std"], name="std"),
                                 helper.make_node("Div", ["centred", "std"], ["y"], name="normalise")]
    return _save(path, nodes, [1, 4, 64])


@pytest.mark.parametrize(("build", "reader", "via"), [(log_energy_model, "log", "add_eps"),
                                                       (layer_norm_model, "normalise", "std")])
def test_fp16_check_calls_an_underflow_an_underflow_and_names_the_op_that_makes_it(tmp_path, build, reader, via):
    model = build(tmp_path / "m.onnx")
    golden, target = tmp_path / "fp32", tmp_path / "fp16"
    result = run_job(fp16_check_job(model, golden, target, inputs={"x": _frames()}))
    types = [f.type for f in result.findings]
    assert UNDERFLOW in types and OVERFLOW not in types, [f.message for f in result.findings]
    finding = next(f for f in result.findings if f.type == UNDERFLOW)
    # Named: the Add whose output (1e-10 in FP32) is 0 in FP16 — not the reader that shows inf/NaN.
    assert finding.name == "add_eps"
    assert "1e-10 -> 0" in finding.message and f"op {reader} " in finding.message
    keep = "add_eps,log" if reader == "log" else "add_eps,std,normalise"
    assert f"--keep-fp32 {keep}" in finding.message
    row = next(r for r in result.rows if r.name == reader)
    assert row.underflow["op"] == "add_eps" and row.underflow["via"] == via and row.underflow["elements"] == 2
    # The table read back tells the same.
    again = read_csv(csv_path(golden))
    (back,) = [f for f in again.findings if f.type == UNDERFLOW]
    assert back.message.split(" in all.")[0] == finding.message.split(" in all.")[0]
    assert next(r for r in again.rows if r.name == reader).underflow == row.underflow


@pytest.mark.parametrize(("build", "readers"), [(log_energy_model, ["log"]),
                                                 (layer_norm_model, ["std", "normalise"])])
def test_the_advised_keep_list_fixes_the_conversion_and_keeping_the_readers_alone_does_not(tmp_path, build, readers):
    model = build(tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", _frames())
    check = run_job(fp16_check_job(model, tmp_path / "fp32", tmp_path / "fp16", inputs={"x": _frames()}))
    advised = next(r.underflow["chain"] for r in check.rows if r.underflow)
    assert advised == ["add_eps", *readers]

    def validation(keep: list[str]) -> dict:
        return run_job(convert_model(ConvertOptions(model=model, output=tmp_path / f"{'_'.join(keep) or 'none'}.onnx",
                                                    output_type="FP16", keep_fp32_ops=keep,
                                                    validate_inputs={"x": tmp_path / "x.npy"}))).validation

    assert not validation([])["passed"]
    assert not validation(readers)["passed"]  # what an overflow verdict pointed at: still inf/NaN
    fixed = validation(advised)
    assert fixed["passed"] and fixed["fp16_overflow_total"] == 0, fixed
