"""Dumps take any tensor name (tf2onnx's 300-character ``;``-joined scope paths) and never leave a
half-written folder behind."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from studio.core.errors import Cancelled
from studio.core.jobs import CancelToken, run_job
from studio.tools.accuracy.dumpset import load_dump
from studio.tools.accuracy.fp16_check import fp16_check_job
from studio.tools.accuracy.local_dump import dump_model


def _tf2onnx_names(tmp_path, blocks: int = 6):
    """A chain whose node and tensor names join six scope paths with ';', as tf2onnx names fused ops."""
    nodes, previous = [], "x"
    for i in range(blocks):
        name = ";".join(f"StatefulPartitionedCall/model/block_{i}/conv2d_{j}/BiasAdd" for j in range(6))
        nodes.append(helper.make_node("Relu" if i % 2 else "Sigmoid", [previous], [name], name=name))
        previous = name
    graph = helper.make_graph(nodes, "tf", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "tf2onnx.onnx"
    onnx.save(model, str(path))
    return path, [n.name for n in nodes]


def test_any_name_is_dumped_under_a_short_file_name_and_kept_in_the_manifest(tmp_path):
    model, names = _tf2onnx_names(tmp_path)
    assert min(len(n) for n in names) > 300
    out = run_job(dump_model(model, tmp_path / "dump"))
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == len(names) + 2  # every op output, the input, the manifest
    assert max(len(f.encode()) for f in files) <= 140  # a file name may hold 255 bytes
    manifest = json.loads((out / "manifest.json").read_text())
    assert [t["op_name"] for t in manifest["tensors"][1:]] == names  # the real names, not the file's
    dump = load_dump(out)
    assert [e.op_name for e in dump.entries][1:] == names
    assert all(dump.load(e).shape == (1, 4) for e in dump.entries)


def test_fp16_check_compares_the_long_names(tmp_path):
    model, names = _tf2onnx_names(tmp_path)
    result = run_job(fp16_check_job(model, tmp_path / "g", tmp_path / "t"))
    assert {row.name for row in result.rows} >= set(names)


def test_a_cancelled_dump_leaves_nothing_half_written(tmp_path):
    model, _ = _tf2onnx_names(tmp_path, blocks=40)
    mine = tmp_path / "existing"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    for out in (tmp_path / "new", mine):
        cancel = CancelToken()

        def stop_while_saving(progress, cancel=cancel):
            if "saving" in progress.message:
                cancel.cancel()  # some tensors are on disk by now

        with pytest.raises(Cancelled):
            run_job(dump_model(model, out, cancel=cancel), cancel=cancel, on_progress=stop_while_saving)
    assert not (tmp_path / "new").exists()  # the folder the dump made is gone again
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]  # the user's folder, as it was
    np.testing.assert_equal(len(list(tmp_path.glob("**/*.npy"))), 0)
