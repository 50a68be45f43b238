"""Dumping, FP16 simulation, matching, the advisor and the result object, on generated models."""

from __future__ import annotations

import json

import numpy as np
import pytest
from accuracy_helpers import chain_model, write_npu_dump, write_npy_dump

from studio.core import formats
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.accuracy.compare import compare_dumps
from studio.tools.accuracy.dumpset import load_dump
from studio.tools.accuracy.local_dump import dump_model
from studio.tools.accuracy.matching import load_mapping
from studio.tools.accuracy.report_csv import read_csv
from studio.core.serial import to_json


def _dump(model, out, **kw):
    return run_job(dump_model(model, out, **kw))


def test_dump_writes_every_tensor_with_a_manifest(tmp_path):
    model = chain_model(tmp_path / "m.onnx")
    out = _dump(model, tmp_path / "d", seed=3)
    assert formats.detect(out).format.id == "dump_dir"
    dump = load_dump(out)
    assert dump.mode == "fp32" and dump.inputs == ["x"] and dump.graph_outputs == ["prob"]
    names = [e.op_name for e in dump.entries]
    assert names[:4] == ["x", "block0/mul", "block0/add", "block0/relu"] and names[-1] == "head/softmax"
    assert [e.order for e in dump.entries] == list(range(len(names)))
    relu = dump.entries[3]
    assert (relu.op_type, relu.index, relu.shape, relu.dtype) == ("Relu", 0, (1, 4, 8, 8), "float32")
    x = dump.load(dump.entries[0])
    np.testing.assert_array_equal(x, np.random.default_rng(3).standard_normal((1, 4, 8, 8)).astype(np.float32))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"]["x"]["source"] == "random, seed 3"


def test_dynamic_dims_must_be_given(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save(model, str(tmp_path / "dyn.onnx"))
    with pytest.raises(UserError) as info:
        _dump(tmp_path / "dyn.onnx", tmp_path / "d")
    assert "'x'" in info.value.what and "batch" in info.value.what and "--input x=" in info.value.fix
    out = _dump(tmp_path / "dyn.onnx", tmp_path / "d", inputs={"x": np.ones((2, 3), np.float32)})
    assert load_dump(out).entries[1].shape == (2, 3)


def test_injected_error_is_the_first_problem_node(tmp_path):
    golden = _dump(chain_model(tmp_path / "g.onnx"), tmp_path / "gd")
    target = _dump(chain_model(tmp_path / "t.onnx", bias_error=(1, 3.0)), tmp_path / "td")
    result = run_job(compare_dumps(golden, target))
    assert not result
    finding = result.findings[0]
    assert finding.type == "problem_node" and finding.name == "block1/add"
    assert "block1/add" in finding.message and "cosine" in finding.message
    first_fail = next(r for r in result.rows if r.passed is False)
    assert first_fail.name == "block1/add"
    assert all(r.passed for r in result.rows[:first_fail.index])


def test_transient_error_is_a_single_point_error(tmp_path):
    rng = np.random.default_rng(1)
    tensors = [(f"op{i}", rng.standard_normal((4, 16)).astype(np.float32)) for i in range(6)]
    broken = list(tensors)
    broken[2] = ("op2", -tensors[2][1])  # wrong at op2 only; op3 onwards agree again
    golden = write_npy_dump(tmp_path / "g", tensors)
    target = write_npy_dump(tmp_path / "t", broken)
    result = run_job(compare_dumps(golden, target))
    assert [f.type for f in result.findings] == ["single_point_error"]
    assert result.findings[0].name == "op2" and "recovers" in result.findings[0].message


def test_fp16_simulation_reports_overflow(tmp_path):
    model = chain_model(tmp_path / "big.onnx", scales=(1.0, 300.0, 300.0, 1.0))
    golden = _dump(model, tmp_path / "fp32")
    target = _dump(model, tmp_path / "fp16", fp16_sim=True)
    assert load_dump(target).mode == "fp16-sim"
    assert load_dump(target).info["fp16_sim_unrounded"] == []
    result = run_job(compare_dumps(golden, target))
    overflow = result.findings[0]
    assert overflow.type == "fp16_overflow"
    assert overflow.name in ("block1/mul", "block1/add", "block1/relu", "block2/mul")
    assert "65504" in overflow.message or "inf" in overflow.message
    assert "FP16 simulation" in str(result)


def test_fp16_simulation_rounds_but_stays_close_in_range(tmp_path):
    model = chain_model(tmp_path / "m.onnx")
    result = run_job(compare_dumps(_dump(model, tmp_path / "a"), _dump(model, tmp_path / "b", fp16_sim=True)))
    assert result and [f.type for f in result.findings] == ["consistent"]
    relu = next(r for r in result.rows if r.name == "block2/relu")
    assert 0 < relu.metrics.max_abs_err < 1e-2


def test_mapping_pairs_a_fused_op_with_the_last_original(tmp_path):
    rng = np.random.default_rng(2)
    a, b, c = (rng.standard_normal(32).astype(np.float32) for _ in range(3))
    golden = write_npy_dump(tmp_path / "g", [("conv", a), ("bn", b), ("relu", c)])
    target = write_npy_dump(tmp_path / "t", [("conv_bn_fused", b), ("relu", c), ("cast_inserted", c)])
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"node_mapping": {"conv_bn_fused": ["conv", "bn"]}}))
    result = run_job(compare_dumps(golden, target, mapping=load_mapping(report)))
    by_name = {r.name: r for r in result.rows}
    assert by_name["conv_bn_fused"].golden.op_name == "bn" and by_name["conv_bn_fused"].passed
    assert by_name["conv"].status == "fused" and "conv_bn_fused" in by_name["conv"].note
    assert by_name["cast_inserted"].status == "target only"
    assert [r.name for r in result.rows] == ["conv", "conv_bn_fused", "relu", "cast_inserted"]
    without = run_job(compare_dumps(golden, target))
    assert {r.status for r in without.rows if r.name in ("conv", "bn")} == {"golden only"}


def test_npu_dump_against_npy_golden_through_original_op_names(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 20, 4, 4)).astype(np.float32)
    golden = write_npy_dump(tmp_path / "g", [("conv1", x)])
    npu = tmp_path / "npu" / "20260101000000" / "0" / "m" / "1" / "0"
    write_npu_dump(npu, "Conv2D", "conv1_fused_bn", [(x, 3)], [((x * 1.001).astype(np.float16), 3)],
                   original_op="conv1")
    result = run_job(compare_dumps(golden, tmp_path / "npu"))
    row = next(r for r in result.rows if r.golden and r.target)
    assert row.how == "original op" and row.passed and result.target_mode == "npu"


def test_csv_round_trip_and_result_object(tmp_path):
    golden = _dump(chain_model(tmp_path / "g.onnx"), tmp_path / "gd")
    target = _dump(chain_model(tmp_path / "t.onnx", bias_error=(2, 3.0)), tmp_path / "td")
    result = run_job(compare_dumps(golden, target))
    csv_path = result.write_csv(tmp_path / "out" / "result.csv")
    assert formats.detect(csv_path).format.id == "compare_csv"
    header = csv_path.read_text().splitlines()[0].split(",")
    assert header[:5] == ["Index", "OpType", "NPUDump", "DataType", "GroundTruth"]
    back = read_csv(csv_path)
    assert [r.name for r in back.rows] == [r.name for r in result.rows]
    assert [r.passed for r in back.rows] == [r.passed for r in result.rows]
    assert back.rows[5].metrics.cosine == pytest.approx(result.rows[5].metrics.cosine)
    assert [f.type for f in back.findings] == [f.type for f in result.findings]
    assert back.rows[3].target_file.endswith(".npy")
    text = str(result)
    assert "problem_node" in text and "block2/add" in text
    data = to_json(result)
    row = data["rows"][1]
    for key in ("name", "op_type", "cosine", "max_abs_err", "mean_abs_err", "rmse", "max_rel_err",
                "mean_rel_err", "acc_rel_err", "rel_euclidean", "kl_div", "pass"):
        assert key in row
    json.dumps(data, allow_nan=False)


def test_bad_inputs_are_user_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError):
        load_dump(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.0.1700000000000000.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(UserError) as info:
        load_dump(bad)
    assert "a.0.1700000000000000.npy" in info.value.where
    with pytest.raises(UserError):
        load_mapping(tmp_path / "missing.json")


def test_converter_report_is_found_next_to_the_converted_model(tmp_path):
    from studio.tools.accuracy.matching import find_converter_report

    model = tmp_path / "net_fp16.onnx"
    model.write_bytes(b"")
    assert find_converter_report(model) is None
    (tmp_path / "report.json").write_text(json.dumps({"something": 1}))
    assert find_converter_report(model) is None
    report = tmp_path / "net_fp16.onnx.report.json"
    report.write_text(json.dumps({"node_mapping": {"a": ["b"]}}))
    assert find_converter_report(model) == report
    assert load_mapping(report) == {"a": ["b"]}


def test_different_network_input_is_reported_first(tmp_path):
    model = chain_model(tmp_path / "m.onnx")
    golden = _dump(model, tmp_path / "a", seed=1)
    target = _dump(model, tmp_path / "b", seed=2)  # other random input
    result = run_job(compare_dumps(golden, target))
    assert result.findings[0].type == "input_inconsistent" and result.findings[0].name == "x"
    assert "cosine" in result.findings[0].message


@pytest.mark.parametrize("attack", ["fifo", "escape", "absolute", "symlink_out"])
def test_a_manifest_reads_only_regular_files_inside_its_folder(tmp_path, attack):
    """A hand-edited manifest that names a FIFO (reading it blocks forever) or a file outside the
    dump folder is refused by `studio compare` at once, with the manifest and the tensor named."""
    import os
    import subprocess
    import sys

    model = chain_model(tmp_path / "m.onnx")
    golden = _dump(model, tmp_path / "golden", seed=1)
    target = _dump(model, tmp_path / "target", seed=1)
    outside = tmp_path / "secret.npy"
    np.save(outside, np.zeros(3, np.float32))
    manifest = json.loads((target / "manifest.json").read_text())
    entry = manifest["tensors"][2]
    if attack == "fifo":
        os.remove(target / entry["file"])
        os.mkfifo(target / entry["file"])
    elif attack == "escape":
        entry["file"] = "../secret.npy"
    elif attack == "absolute":
        entry["file"] = str(outside)
    else:
        os.remove(target / entry["file"])
        os.symlink(outside, target / entry["file"])
    (target / "manifest.json").write_text(json.dumps(manifest))
    done = subprocess.run([sys.executable, "-m", "studio", "compare", str(golden), str(target)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "manifest.json" in done.stderr and entry["tensor"] in done.stderr, done.stderr
