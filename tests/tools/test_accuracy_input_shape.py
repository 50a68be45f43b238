"""``studio accuracy reduce`` and ``precision`` size a model's dynamic dims with ``--input-shape``
as every other command does (before, they had no way to be told, and refused such a model). The
verdicts are checked with numpy's FP16 and the repro's own ONNX Runtime run."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

SCALE = 1000.0


@pytest.fixture
def dynamic_overflow(tmp_path):
    """x [1, n] -> ones of x's shape * 1000 ("scale") -> squared ("square", 1e6: beyond FP16's
    65504) -> * 1e-6 ("shrink"). The values do not depend on the random data, only on its size."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("ConstantOfShape", ["shape"], ["ones"], name="ones",
                              value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])),
             helper.make_node("Mul", ["ones", "k"], ["big"], name="scale"),
             helper.make_node("Mul", ["big", "big"], ["sq"], name="square"),
             helper.make_node("Mul", ["sq", "small"], ["y"], name="shrink")]
    inits = [helper.make_tensor("k", TensorProto.FLOAT, [], [SCALE]),
             helper.make_tensor("small", TensorProto.FLOAT, [], [1e-6])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path = tmp_path / "dyn.onnx"
    onnx.save(model, str(path))
    return path


def _studio(*argv):
    return subprocess.run([sys.executable, "-m", "studio", *argv], capture_output=True, text=True, timeout=300)


def test_reduce_sizes_a_dynamic_input_and_the_repro_overflows_in_numpy(dynamic_overflow, tmp_path):
    out = tmp_path / "repro"
    refused = _studio("accuracy", "reduce", str(dynamic_overflow), "-o", str(out), "--json")
    assert refused.returncode == 2 and "dynamic dimension" in refused.stderr and "--input-shape x" in refused.stderr
    done = _studio("accuracy", "reduce", str(dynamic_overflow), "-o", str(out), "--input-shape", "x=1,8", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["first_op"] == "square"
    big = np.load(out / "inputs.npz")["big"]
    np.testing.assert_array_equal(big, np.full((1, 8), SCALE, np.float32))  # the size given, not a guess
    with np.errstate(over="ignore"):
        assert np.isinf(big.astype(np.float16) * big.astype(np.float16)).all()
    # the repro's golden output is its own FP32 run in ONNX Runtime
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(np.load(out / "golden_outputs.npz")["sq"], session.run(["sq"], {"big": big})[0],
                               rtol=1e-6)


def test_precision_sizes_a_dynamic_input_and_keeps_what_numpy_says_overflows(dynamic_overflow, tmp_path):
    out = tmp_path / "precision"
    done = _studio("accuracy", "precision", str(dynamic_overflow), "-o", str(out), "--input-shape", "x:1,6",
                   "--no-latency", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    # numpy FP16: 1000 fits, its square (the output of "square", the input of "shrink") does not
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the cast's overflow is what is checked
        square, rounded = np.float16(SCALE) * np.float16(SCALE), np.float16(np.float32(SCALE) ** 2)
    assert np.isfinite(np.float16(SCALE)) and np.isinf(square) and np.isinf(rounded)
    assert sorted(data["keep_fp32"]) == ["shrink", "square"]
    # every one of the 6 values the given size makes goes non-finite before
    assert data["outputs_before"]["y"].startswith("6 value(s) non-finite")
    assert data["outputs_after"]["y"] == "passes"
