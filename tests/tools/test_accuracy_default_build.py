"""``studio accuracy precision --target fp16`` searches on builds with the fusion passes off (every op
keeps an output to compare); the set found is then judged on the build with the converter's
default passes, the one a user converts and the latency table times. A fusion that merges a kept
op into one that is not kept (MatMul + Add -> Gemm under the MatMul's name) makes the set fail
there: the JSON, report.md and the CLI say so instead of claiming a pass."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _gemm_overflow(path):
    """x @ W reaches 60000 (fits FP16), + bias 10000 overflows it, * 1e-3 brings it back to 70."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["mm_out"], name="mm"),
         helper.make_node("Add", ["mm_out", "b"], ["add_out"], name="add"),
         helper.make_node("Mul", ["add_out", "s"], ["y"], name="scale")],
        "gemm_overflow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(np.full((8, 8), 7500.0, np.float32), "W"),
         numpy_helper.from_array(np.full((8,), 10000.0, np.float32), "b"),
         numpy_helper.from_array(np.array(1e-3, np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def _precision(model, out, tmp_path, *extra):
    np.save(tmp_path / "x.npy", np.ones((4, 8), np.float32))
    return subprocess.run([sys.executable, "-m", "studio", "accuracy", "precision", str(model), "-o", str(out),
                           "--target", "fp16", "--input", f"x={tmp_path / 'x.npy'}", *extra],
                          capture_output=True, text=True, timeout=300)


def test_a_set_that_a_fusion_breaks_is_reported_failing_on_the_default_build(tmp_path, studio_home):
    model = tmp_path / "gemm_overflow.onnx"
    _gemm_overflow(model)
    done = _precision(model, tmp_path / "set", tmp_path, "--no-latency", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert "add" in data["keep_fp32"] and "mm" not in data["keep_fp32"]  # passes with the fusion passes off
    assert data["verified_on_default_build"] is False
    check = data["default_build_check"]
    assert check["outputs"]["y"]["verdict"] != "passes" and check["outputs"]["y"]["target_nonfinite"] == 32
    assert [f["pass"] for f in check["fusions_on_kept_ops"]] == ["MatMulAddFusion"]
    converted = onnx.load(check["model"])  # the default-pass build: the MatMul and the Add are one Gemm
    assert [n.op_type for n in converted.graph.node if n.op_type in ("Gemm", "MatMul")] == ["Gemm"]
    assert "FAILS on the build with the converter's default passes" in done.stderr
    assert "--pass MatMulAddFusion=off" in done.stderr and "add mm to the set" in done.stderr
    report = (tmp_path / "set" / "report.md").read_text()
    assert "**The set FAILS on the build with the converter's default passes" in report
    assert json.loads((tmp_path / "set" / "precision.json").read_text())["verified_on_default_build"] is False


def test_the_text_output_and_the_table_do_not_claim_a_pass(tmp_path, studio_home):
    model = tmp_path / "gemm_overflow.onnx"
    _gemm_overflow(model)
    done = _precision(model, tmp_path / "set", tmp_path, "--budget", "0.2")
    assert done.returncode == 0, done.stderr
    assert "the set FAILS on the build with the converter's default passes" in done.stdout
    found = next(line for line in done.stdout.splitlines() if line.strip().startswith("found set"))
    assert "FAILS on this build" in found and "): passes" not in found
    table = (tmp_path / "set" / "report.md").read_text()
    assert "| found set | **fails on this build**" in table
