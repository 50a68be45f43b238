"""`--input-shape` reads the same in every command that runs or sizes a model: NAME=dims and ATC's name:dims."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def _studio(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def dynamic_model(tmp_path_factory) -> Path:
    """x[N,8] @ W[8,4] + b -> y[N,4], N dynamic."""
    rng = np.random.default_rng(1)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"), helper.make_node("Add", ["m", "b"], ["y"], name="add")],
        "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("shape") / "dyn.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("spelling", ["--input-shape=x=3,8", "--input_shape=x:3,8"])
def test_every_command_takes_both_forms(dynamic_model, tmp_path, spelling):
    runs = {
        "profile": _studio("profile", "run", str(dynamic_model), "-o", str(tmp_path / "p"), "--iterations", "2",
                           "--warmup", "0", spelling),
        "bench": _studio("bench", str(dynamic_model), "--loop", "2", "--json", spelling),
        "fp16-check": _studio("fp16-check", str(dynamic_model), "-o", str(tmp_path / "f"), spelling),
        "dump": _studio("dump", str(dynamic_model), "-o", str(tmp_path / "d"), spelling),
        "macs": _studio("graph", "macs", str(dynamic_model), spelling),
        "convert": _studio("convert", str(dynamic_model), "-o", str(tmp_path / "c.onnx"), spelling),
    }
    for name, run in runs.items():
        assert run.returncode == 0, f"{name}: {run.stderr}"
    used = json.loads((tmp_path / "p" / "studio_profile.json").read_text())["inputs"]["x"]["shape"]
    assert used == [3, 8]
    fixed = onnx.load(str(tmp_path / "c.onnx"))
    assert [d.dim_value for d in fixed.graph.input[0].type.tensor_type.shape.dim] == [3, 8]
    # 3 x 8 x 4 multiply-adds for the MatMul, counted at the given batch
    assert "96" in runs["macs"].stdout.replace(",", "")


def test_a_nameless_entry_says_how_to_write_it(dynamic_model, tmp_path):
    run = _studio("fp16-check", str(dynamic_model), "-o", str(tmp_path / "f"), "--input-shape", "=3,8")
    assert run.returncode == 2 and "no input name" in run.stderr and "Traceback" not in run.stderr
