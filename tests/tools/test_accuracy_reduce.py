"""``studio accuracy reduce``: the first op that goes wrong in FP16, cut out with FP32 tensors at the
cut, shrunk to the fewest ops that still fail — and the repro checked to fail alone, by Studio's
own dump and compare and by a plain numpy FP16 computation."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.accuracy.reduce import reduce_fp16
from studio.tools.demo.journeys import build_fp16_frontend, frames_with_silence


@pytest.fixture
def frontend(tmp_path):
    path = tmp_path / "fp16_frontend.onnx"
    onnx.save(build_fp16_frontend(), path)
    return path


def test_overflow_reduces_to_the_square_that_overflows(frontend, tmp_path):
    result = run_job(reduce_fp16(frontend, tmp_path / "repro"))
    assert (result.first_op, result.ops, result.inputs) == ("power/real_sq", ["power/real_sq"], ["dft/real"])
    assert result.model_ops == 9 and result.target_runs <= 4
    # numpy: the saved cut input squared in FP16 overflows, in FP32 it does not
    real = np.load(tmp_path / "repro" / "inputs.npz")["dft/real"]
    with np.errstate(over="ignore"):
        assert np.isinf(real.astype(np.float16) * real.astype(np.float16)).any()
    assert np.isfinite(real.astype(np.float32) ** 2).all()
    golden = np.load(tmp_path / "repro" / "golden_outputs.npz")["power/real_sq"]
    np.testing.assert_allclose(golden, real * real, rtol=1e-6)


def test_underflow_names_the_op_whose_output_is_lost(frontend, tmp_path):
    result = run_job(reduce_fp16(frontend, tmp_path / "repro", inputs={"frames": frames_with_silence()}))
    assert result.ops == ["log/log"] and result.inputs == ["log/add_floor"]
    assert any("underflow" in n and "log/add_floor (Add)" in n for n in result.notes)
    report = (tmp_path / "repro" / "report.md").read_text()
    assert "underflow" in report and "studio dump model.onnx" in report


def test_the_repro_fails_alone_with_the_commands_it_writes(frontend, tmp_path):
    out = tmp_path / "repro"
    done = subprocess.run([sys.executable, "-m", "studio", "accuracy", "reduce", str(frontend), "-o", str(out),
                           "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["repro_ops"] == 1
    inputs = np.load(out / "inputs.npz")
    flags = [f"{name}={out / 'inputs' / (name.replace('/', '_') + '.npy')}" for name in inputs.files]
    for folder, extra in (("fp32", []), ("fp16", ["--fp16-sim"])):
        cmd = [sys.executable, "-m", "studio", "dump", str(out / "model.onnx"), "-o", str(out / folder), *extra]
        for flag in flags:
            cmd += ["--input", flag]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    compared = subprocess.run([sys.executable, "-m", "studio", "compare", str(out / "fp32"), str(out / "fp16"),
                               "--json"], capture_output=True, text=True, timeout=300)
    data = json.loads(compared.stdout)
    assert data["passed"] is False
    failing = [r["name"] for r in data["rows"] if not r["pass"]]
    assert failing == ["power/real_sq"]  # the cut's input passes (rounded only), the square fails


def test_a_model_that_passes_is_not_reduced(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, tmp_path / "ok.onnx")
    with pytest.raises(UserError, match="outputs pass"):
        run_job(reduce_fp16(tmp_path / "ok.onnx", tmp_path / "repro"))
    assert not (tmp_path / "repro").exists()


def test_a_deep_cause_needs_its_ancestors(tmp_path):
    """x * 300 -> * 300 overflows only after both muls: neither alone (fed FP32 at the cut) is the whole
    story once the first is fed its golden output — the reduction keeps what is needed, no more."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])
    k = helper.make_tensor("k", TensorProto.FLOAT, [], [300.0])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("Mul", ["a", "k"], ["b"], name="mul1"),
             helper.make_node("Mul", ["b", "k"], ["c"], name="mul2"),
             helper.make_node("Sigmoid", ["c"], ["y"], name="sigmoid")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [k]), opset_imports=[helper.make_opsetid("", 13)],
                              ir_version=8)
    onnx.save(model, tmp_path / "deep.onnx")
    feeds = {"x": np.full((1, 16), 2.0, np.float32)}
    with pytest.raises(UserError, match="outputs pass"):  # sigmoid(inf) = 1 = sigmoid(360000): the output passes
        run_job(reduce_fp16(tmp_path / "deep.onnx", tmp_path / "r", inputs=feeds))
