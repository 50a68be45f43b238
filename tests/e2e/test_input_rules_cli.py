"""One rule per input problem, said the same by every command that runs a model.

A given array of another element type is cast with a warning naming both types, or refused; a
given array fixes its input's shape (no --input-shape needed); a missing external data file is
named with its size and tensor; a declared output shape that differs from the real one is flagged
once, without ONNX Runtime's per-run warnings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]


def _studio(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "studio", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd, stdin=subprocess.DEVNULL)
    assert "Traceback (most recent call last)" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    return proc


def _save(model: onnx.ModelProto, path: Path, **kwargs) -> Path:
    model.ir_version = 8
    onnx.save(model, str(path), **kwargs)
    return path


@pytest.fixture(scope="module")
def dynamic_model(tmp_path_factory) -> Path:
    """x[N,8] float @ W[8,4] -> y[N,4], N dynamic."""
    w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "dyn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [w])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
                 tmp_path_factory.mktemp("rules") / "dyn.onnx")


def _runs(model: Path, tmp: Path, *extra: str) -> dict[str, subprocess.CompletedProcess]:
    """Every command that runs ``model`` here, with the same input options."""
    return {
        "profile run": _studio("profile", "run", model, "-o", tmp / "p", "--iterations", "2", "--warmup", "0", *extra),
        "bench": _studio("bench", model, "--loop", "2", "--warmup", "0", *extra),
        "dump": _studio("dump", model, "-o", tmp / "d", *extra),
        "fp16-check": _studio("fp16-check", model, "-o", tmp / "f", *extra),
        "convert": _studio("convert", model, "-o", tmp / "c.onnx", "--validate", *extra),
    }


def test_an_integer_array_for_a_float_input_is_refused_everywhere(dynamic_model, tmp_path):
    ids = tmp_path / "x_int64.npy"
    np.save(ids, np.arange(24, dtype=np.int64).reshape(3, 8))
    for command, proc in _runs(dynamic_model, tmp_path, "--input", f"x={ids}").items():
        assert proc.returncode != 0, f"{command} ran on an int64 array for a float32 input:\n{proc.stdout}"
        assert "The array for input 'x' is int64; the model takes float32" in proc.stderr, (command, proc.stderr)
    assert not (tmp_path / "c.onnx").exists()  # refused before anything was written


def test_a_float64_array_is_cast_with_a_warning_naming_both_types(dynamic_model, tmp_path):
    data = tmp_path / "x_f64.npy"
    np.save(data, np.random.default_rng(0).random((3, 8)))
    for command, proc in _runs(dynamic_model, tmp_path, "--input", f"x={data}").items():
        assert proc.returncode == 0, (command, proc.stderr)
        text = proc.stdout + proc.stderr
        assert "input 'x': float64 array cast to float32" in text, (command, text)


def test_a_given_file_fixes_its_inputs_shape_in_every_command(dynamic_model, tmp_path):
    data = tmp_path / "x.npy"
    np.save(data, np.ones((5, 8), np.float32))
    for command, proc in _runs(dynamic_model, tmp_path, "--input", f"x={data}").items():
        assert proc.returncode == 0, f"{command} demanded more than the file:\n{proc.stderr}"
    converted = onnx.load(str(tmp_path / "c.onnx"))
    assert [d.dim_value for d in converted.graph.input[0].type.tensor_type.shape.dim] == [5, 8]
    report = json.loads((tmp_path / "c.report.json").read_text())
    assert report["validation"]["inputs"]["x"]["shape"] == [5, 8]
    assert any("fixed to [5, 8] by its --input file" in w for w in report["warnings"])
    clash = _studio("convert", dynamic_model, "-o", tmp_path / "c2.onnx", "--input", f"x={data}",
                    "--input-shape", "x=4,8")
    assert clash.returncode != 0 and "has shape (5, 8), but --input" in clash.stderr and "says (4, 8)" in clash.stderr


def test_missing_external_data_is_diagnosed_once_the_same_everywhere(tmp_path):
    weights = numpy_helper.from_array(np.ones((64, 32), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "ext",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])], [weights])
    model = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "ext.onnx",
                  save_as_external_data=True, location="ext.weights", size_threshold=0)
    (tmp_path / "ext.weights").unlink()
    said = "external data file 'ext.weights' (8,192 bytes, for tensor 'w') not found next to the model"
    runs = _runs(model, tmp_path)
    runs["advise"] = _studio("advise", "--model", model)
    for command, proc in runs.items():
        assert proc.returncode != 0, f"{command} went on without the weights:\n{proc.stdout}"
        assert said in proc.stderr, (command, proc.stderr)
        for wrong in ("truncated", "OM models cannot run", "tensorprotoutils", "verdict"):
            assert wrong not in proc.stdout + proc.stderr, (command, wrong)


def test_a_wrong_declared_output_shape_is_flagged_once(tmp_path):
    # declared [1, seqlen, 6]; Transpose returns [T, 1, 6] (a recognizer's [T, N, C] logits)
    graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], name="t", perm=[1, 0, 2])], "decl",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "T", 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seqlen", 6])])
    model = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "decl.onnx")
    flag = "output 'y': the model declares shape [1, seqlen, 6], ONNX Runtime returned [4, 1, 6]"
    size = ("--input-shape", "x=1,4,6")
    bench = _studio("bench", model, "--loop", "20", "--warmup", "5", *size)
    assert bench.returncode == 0, bench.stderr
    text = bench.stdout + bench.stderr
    assert text.count(flag) == 1 and "VerifyOutputSizes" not in text  # was 25 ORT warnings and no flag
    profile = _studio("profile", "run", model, "-o", tmp_path / "p", "--iterations", "5", *size)
    assert (profile.stdout + profile.stderr).count(flag) == 1
    warnings = json.loads((tmp_path / "p" / "studio_profile.json").read_text())["warnings"]
    assert len(warnings) == 1 and flag in warnings[0]
    dump = _studio("dump", model, "-o", tmp_path / "d", *size)
    assert (dump.stdout + dump.stderr).count(flag) == 1
    assert any(flag in w for w in json.loads((tmp_path / "d" / "manifest.json").read_text())["warnings"])
