"""`studio info` must not call a damaged file valid: a truncated ONNX model is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from studio.core import formats
from studio.core.errors import UserError

REPO = Path(__file__).resolve().parents[2]


def _model(path: Path) -> Path:
    w = numpy_helper.from_array(np.arange(4096, dtype=np.float32).reshape(64, 64), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def _info(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio", "info", str(path)], capture_output=True, text=True,
                          cwd=REPO, timeout=60)


def test_an_intact_model_is_valid(tmp_path):
    proc = _info(_model(tmp_path / "m.onnx"))
    assert proc.returncode == 0 and "ONNX model [onnx]" in proc.stdout


def test_a_truncated_model_is_refused_with_the_missing_size(tmp_path):
    data = _model(tmp_path / "m.onnx").read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    proc = _info(cut)
    assert proc.returncode == 1
    assert "Truncated ONNX model" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr
    # the number of missing bytes is the framing's, checked here against the file sizes
    missing = len(data) - len(data) // 2
    shown = int(proc.stdout.split("needs ")[1].split(" more")[0].replace(",", ""))
    assert 0 < shown <= missing


@pytest.mark.parametrize("cut", [10, 40, 200, 1000, 8000, -1])
def test_every_cut_is_refused(tmp_path, cut):
    data = _model(tmp_path / "m.onnx").read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[:cut])
    try:
        detected = formats.detect(path)
    except UserError:
        return  # already refused by the sniff
    with pytest.raises(UserError):
        formats.verify(detected)
