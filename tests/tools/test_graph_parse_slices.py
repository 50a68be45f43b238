"""ONNX parsed in slices (and inferred in a worker process) is exactly what onnx.load gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.errors import UserError
from studio.tools.graph import onnx_parse
from studio.tools.graph.onnx_reader import read_onnx
from studio.tools.graph.synthetic import write_synthetic


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    return write_synthetic(tmp_path_factory.mktemp("m") / "syn.onnx", 3000)


def test_sliced_parse_equals_onnx_load(model_path, monkeypatch):
    import onnx

    monkeypatch.setattr(onnx_parse, "SLICE_BYTES", 4096)
    sliced = onnx_parse.load_proto(model_path)
    assert sliced.SerializeToString() == onnx.load(str(model_path), load_external_data=False).SerializeToString()
    assert len(sliced.graph.node) >= 3000


def test_truncated_model_is_the_same_user_error(model_path, tmp_path, monkeypatch):
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(model_path.read_bytes()[:-777])
    with pytest.raises(UserError) as sliced:
        read_onnx(cut)
    monkeypatch.setattr(onnx_parse, "INCREMENTAL", False)
    with pytest.raises(UserError) as whole:
        read_onnx(cut)
    assert sliced.value.what.split(":")[0] == whole.value.what.split(":")[0] == "Cannot decode the ONNX model"


def test_shape_inference_in_a_worker_equals_in_process(model_path, monkeypatch):
    monkeypatch.setattr(onnx_parse, "INFER_IN_WORKER_NODES", 10**9)
    here = read_onnx(model_path)
    monkeypatch.setattr(onnx_parse, "INFER_IN_WORKER_NODES", 0)
    there = read_onnx(model_path)
    shapes = {name: (v.shape, v.dtype) for name, v in here.main.values.items()}
    assert shapes == {name: (v.shape, v.dtype) for name, v in there.main.values.items()}
    assert sum(v.shape is not None for v in here.main.values.values()) > 3000
    assert here.warnings == there.warnings
