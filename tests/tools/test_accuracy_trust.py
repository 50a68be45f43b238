"""Accuracy verdicts that agree with their counts, FP16 simulation inside sub-graphs, honest labels."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import pytest

from accuracy_helpers import write_npy_dump
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.accuracy.advisor import CONSISTENT, NOT_COVERED, OVERFLOW, THRESHOLDS
from studio.tools.accuracy.compare import compare_dumps
from studio.tools.accuracy.dumpset import MODE_LABELS, load_dump
from studio.tools.accuracy.fp16_check import fp16_check_job
from studio.tools.accuracy.local_dump import dump_model
from studio.tools.accuracy.metrics import Thresholds, compare_arrays
from studio.tools.accuracy.report_csv import read_csv
from trust_models import overflow_if_model, paddle_style_model


def test_fp16_simulation_reaches_inside_if_bodies_and_says_what_is_not_dumped(tmp_path):
    model = tmp_path / "if.onnx"
    onnx.save(overflow_if_model(), model)
    inputs = {"x": np.full((1, 8), 100.0, np.float32), "flag": np.array(True)}
    result = run_job(fp16_check_job(model, tmp_path / "g", tmp_path / "t", inputs=inputs))
    out = load_dump(tmp_path / "t")
    y = next(e for e in out.entries if e.tensor == "y")
    # 100 * 1000 = 1e5 overflows FP16 inside the then branch: inf on an FP16 device.
    assert np.isinf(out.load(y)).all()
    golden = load_dump(tmp_path / "g")
    np.testing.assert_array_equal(golden.load(next(e for e in golden.entries if e.tensor == "y")), inputs["x"])
    types = [f.type for f in result.findings]
    assert OVERFLOW in types and NOT_COVERED in types and CONSISTENT not in types
    gap = next(f for f in result.findings if f.type == NOT_COVERED)
    assert "3 op(s) inside the bodies of 1 If/Loop/Scan node(s) (scale_if)" in gap.message  # then 2, else 1
    assert "FP16 simulation was applied inside them" in gap.message
    assert result.summary().endswith("3 op(s) inside If/Loop/Scan bodies not dumped")
    overflow = next(f for f in result.findings if f.type == OVERFLOW)
    # scale_if's output is not a model output: the finding calls it an op; y is the output it reaches.
    assert "first at op scale_if (row" in overflow.message and "reaches model output y (op relu)" in overflow.message


def test_a_model_without_subgraphs_has_nothing_uncovered(tmp_path):
    model = tmp_path / "p.onnx"
    onnx.save(paddle_style_model(), model)
    result = run_job(fp16_check_job(model, tmp_path / "g", tmp_path / "t", shapes={"x": [1, 3, 16, 16]}))
    assert result.uncovered == {} and NOT_COVERED not in [f.type for f in result.findings]


def test_empty_tensors_are_not_failures(tmp_path):
    tensors = [("op0", np.ones((2, 3), np.float32)), ("empty", np.zeros((0, 4), np.float32))]
    golden = write_npy_dump(tmp_path / "g", tensors)
    target = write_npy_dump(tmp_path / "t", tensors)
    result = run_job(compare_dumps(golden, target))
    empty = next(r for r in result.rows if r.name == "empty")
    assert empty.status == "empty" and empty.passed is None and bool(result)
    assert result.summary() == "1 tensors compared, 1 pass, 0 fail, 1 empty on both sides"
    assert [f.type for f in result.findings] == [CONSISTENT]


def test_no_consistent_verdict_after_a_failure(tmp_path):
    # The only compared tensor is all zero on one side: cosine cannot be computed, the row fails.
    golden = write_npy_dump(tmp_path / "g", [("op0", np.ones(8, np.float32))])
    target = write_npy_dump(tmp_path / "t", [("op0", np.zeros(8, np.float32))])
    result = run_job(compare_dumps(golden, target))
    assert result.summary() == "1 tensors compared, 0 pass, 1 fail"
    assert [f.type for f in result.findings] == [THRESHOLDS]
    assert all("All 0" not in f.message and "consistent" not in f.message for f in result.findings)
    assert "cannot be judged by cosine" in result.findings[0].message


def test_other_metric_failures_are_reported_when_cosine_passes(tmp_path):
    y = np.linspace(1, 2, 1000).astype(np.float32)
    golden = write_npy_dump(tmp_path / "g", [("op0", y)])
    target = write_npy_dump(tmp_path / "t", [("op0", y * 1.1)])  # cosine 1, rel. euclidean 0.1
    result = run_job(compare_dumps(golden, target))
    row = result.rows[0]
    assert row.metrics.cosine > 0.9999 and row.violations == ["rel_euclidean"]
    (finding,) = result.findings
    assert finding.type == THRESHOLDS and "rel_euclidean 0.1" in finding.message


def test_golden_max_is_never_nan_when_infs_do_not_match(tmp_path):
    g = np.array([1.0, -3.0, 2.0, 0.5], np.float32)
    t = np.array([1.0, np.inf, 2.0, 0.5], np.float32)
    m = compare_arrays(g, t)
    assert m.golden_absmax == 3.0 and m.target_absmax == math.inf and m.target_nonfinite == 1
    golden = write_npy_dump(tmp_path / "g", [("op0", g)])
    target = write_npy_dump(tmp_path / "t", [("op0", t)])
    result = run_job(compare_dumps(golden, target))
    assert "golden |max| = 3" in result.findings[0].message and "nan" not in result.findings[0].message


def test_csv_read_back_tells_the_same_inf_counts(tmp_path):
    g = np.linspace(-1, 1, 64).astype(np.float32)
    t = g.copy()
    t[[1, 5, 9]] = np.inf
    golden = write_npy_dump(tmp_path / "g", [("op0", g)])
    target = write_npy_dump(tmp_path / "t", [("op0", t)])
    result = run_job(compare_dumps(golden, target))
    result.write_csv(tmp_path / "r.csv")
    again = read_csv(tmp_path / "r.csv")
    assert result.rows[0].metrics.target_nonfinite == again.rows[0].metrics.target_nonfinite == 3
    assert result.findings[0].message == again.findings[0].message
    assert "3 inf/NaN value(s)" in again.findings[0].message


def test_cosine_threshold_outside_minus_one_to_one_is_refused():
    with pytest.raises(UserError, match="outside -1..1"):
        Thresholds(cosine=2)
    with pytest.raises(UserError):
        Thresholds(cosine=float("nan"))
    assert Thresholds(cosine=-1).cosine == -1


def test_a_converted_fp16_model_is_not_labelled_an_fp32_run(tmp_path):
    from studio.core.jobs import run_job as run
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions

    src = tmp_path / "p.onnx"
    onnx.save(paddle_style_model(), src)
    run(convert_model(ConvertOptions(model=src, output=tmp_path / "p16.onnx", output_type="FP16",
                                     input_shape="x:1,3,16,16")))
    dump = load_dump(run_job(dump_model(tmp_path / "p16.onnx", tmp_path / "d")))
    assert dump.mode == "fp16" and MODE_LABELS[dump.mode].startswith("ONNX Runtime run of an FP16 model")
    plain = load_dump(run_job(dump_model(src, tmp_path / "e", shapes={"x": [1, 3, 16, 16]})))
    assert plain.mode == "fp32" and MODE_LABELS[plain.mode] == "ONNX Runtime FP32 run"
    assert json.loads((tmp_path / "d" / "manifest.json").read_text())["mode"] == "fp16"


def test_integer_tensors_are_not_fp16_overflows_and_repeated_node_names_are_fine(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    big = numpy_helper.from_array(np.array([2**63 - 1], np.int64), "end")
    nodes = [  # Constants share one name, as OpenVINO's exports write them ("F0::anon")
        helper.make_node("Constant", [], ["end_c"], name="anon", value=big),  # Slice's "to the end"
        helper.make_node("Constant", [], ["two"], name="anon", value=numpy_helper.from_array(np.array(2.0, np.float32))),
        helper.make_node("Constant", [], ["half"], name="anon", value=numpy_helper.from_array(np.array(0.5, np.float32))),
        helper.make_node("Slice", ["x", "start", "end_c"], ["s"], name="slice"),
        helper.make_node("Mul", ["s", "two"], ["m"], name="mul"),
        helper.make_node("Mul", ["m", "half"], ["y"], name="mul2"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5])],
                              initializer=[numpy_helper.from_array(np.array([1], np.int64), "start")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    result = run_job(fp16_check_job(path, tmp_path / "g", tmp_path / "t"))
    assert OVERFLOW not in [f.type for f in result.findings]
    assert [f.type for f in result.findings] == [CONSISTENT]


def test_onnx_runtime_errors_reach_the_user_without_cpp_text(tmp_path):
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph)
    model.ir_version = 99
    path = tmp_path / "future.onnx"
    onnx.save(model, path)
    with pytest.raises(UserError) as caught:
        run_job(dump_model(path, tmp_path / "d"))
    assert "Unsupported model IR version: 99" in caught.value.what
    assert "onnxruntime_src" not in caught.value.what and "::" not in caught.value.what


def test_repeated_op_names_keep_their_own_tensors_and_pair_by_tensor_name(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    values = [np.full(3, v, np.float32) for v in (1.0, 2.0, 3.0)]
    nodes = [helper.make_node("Constant", [], [f"c{i}"], name="anon", value=numpy_helper.from_array(v))
             for i, v in enumerate(values)]
    nodes += [helper.make_node("Sum", ["x", "c0", "c1", "c2"], ["y"], name="sum")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    dump = load_dump(run_job(dump_model(path, tmp_path / "a")))
    constants = [e for e in dump.entries if e.op_name == "anon"]
    assert len({e.locator for e in constants}) == 3  # three files, none overwritten
    for entry, value in zip(constants, values):
        np.testing.assert_array_equal(dump.load(entry), value)
    run_job(dump_model(path, tmp_path / "b", seed=1))
    result = run_job(compare_dumps(tmp_path / "a", tmp_path / "b"))
    anon = [r for r in result.rows if r.name == "anon"]
    assert [(r.golden.tensor, r.target.tensor) for r in anon] == [("c0", "c0"), ("c1", "c1"), ("c2", "c2")]
    assert all(r.passed for r in anon) and "one side" not in result.summary()


def test_fp16_simulation_reaches_inside_loop_bodies(tmp_path):
    from trust_models import overflow_loop_model

    model = tmp_path / "loop.onnx"
    onnx.save(overflow_loop_model(), model)
    result = run_job(fp16_check_job(model, tmp_path / "g", tmp_path / "t",
                                    inputs={"x": np.full(4, 100.0, np.float32)}))
    target = load_dump(tmp_path / "t")
    assert np.isinf(target.load(next(e for e in target.entries if e.tensor == "y"))).all()
    overflow = next(f for f in result.findings if f.type == OVERFLOW)
    assert "first at op loop (row 1, Loop — its output y is a model output)" in overflow.message
    assert result.uncovered["subgraph_ops"] == 3 and result.uncovered["subgraph_nodes"] == ["loop"]


def test_a_comparison_read_back_from_csv_still_says_what_was_not_covered(tmp_path):
    model = tmp_path / "if.onnx"
    onnx.save(overflow_if_model(), model)
    inputs = {"x": np.full((1, 8), 1.0, np.float32), "flag": np.array(True)}  # no overflow: only the gap remains
    result = run_job(fp16_check_job(model, tmp_path / "g", tmp_path / "t", inputs=inputs))
    assert [f.type for f in result.findings] == [NOT_COVERED]
    result.write_csv(tmp_path / "r.csv")
    again = read_csv(tmp_path / "r.csv")
    assert [f.type for f in again.findings] == [NOT_COVERED] and again.uncovered == result.uncovered
