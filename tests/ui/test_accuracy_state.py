"""The Accuracy panel's state without Qt: the dump queue, the comparison on screen, the header and
findings texts, the graph overlay and which input sizes to ask for, on a real comparison of two
ONNX Runtime dumps."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from studio.core.jobs import run_job
from studio.ops.compare_models import pair_folder
from studio.ui.panels.accuracy import state as st
from studio.ui.panels.accuracy.on_engine import compare_models_job


def chain(path: Path, bias: float) -> Path:
    """x[1, 8] -> Add(b) -> Relu -> Mul(2) -> y, with every bias ``bias`` (opset 17)."""
    b = helper.make_tensor("b", TensorProto.FLOAT, [8], [bias] * 8)
    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Mul", ["r", "two"], ["y"], name="mul")]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [b, two])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """A comparison whose target adds 3.0 where the golden adds 0.1: "add" is where it goes wrong."""
    folder = tmp_path_factory.mktemp("acc")
    golden, target = chain(folder / "g.onnx", 0.1), chain(folder / "t.onnx", 3.0)
    result = run_job(compare_models_job(golden, target, folder / "dumps", None))
    return folder, result


def test_two_dumps_make_a_pair_and_a_lone_one_waits(tmp_path):
    state = st.AccuracyState()
    state.result = object()  # an old comparison on screen
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert state.queue_dump(a) is None and state.result is None and state.pending == [a]
    assert "<b>a</b>" in state.waiting_text() and "second dump" in state.waiting_text()
    assert state.golden_read_text(a, "FP32 <run>").count("FP32 &lt;run&gt;") == 1  # escaped
    assert state.golden_read_text(b, "x") is None  # not the one waiting
    assert state.queue_dump(a) is None and state.pending == [a]  # the same folder twice is one
    assert state.queue_dump(b) == (a, b) and state.pending == []
    assert state.queue_dump(c) is None
    state.clear()
    assert state.pending == [] and state.waiting_text() == "<b>Accuracy</b> — compare two runs op by op"


def test_a_shown_comparison_knows_its_dumps_and_what_can_run_on_it(compared):
    folder, result = compared
    state = st.AccuracyState()
    assert not state.can_remap() and not state.can_reduce_fp16()
    state.show(result)  # as read from a CSV: the rows' folders still exist, so they are the pair
    assert state.last_pair == (Path(result.golden), Path(result.target))
    assert state.last_pair[0].is_relative_to(folder / "dumps")
    assert state.can_remap() and state.can_reduce_fp16()  # it fails: the FP16 tools can narrow it down
    assert state.waiting_text() is None and state.golden_read_text(folder, "x") is None
    gone = st.AccuracyState()
    gone.show(dataclasses.replace(result, golden=str(folder / "gone"), target=str(folder / "gone too")))
    assert gone.last_pair is None  # the folders are not there: nothing to compare again
    given = (folder / "g", folder / "t")
    gone.show(result, given)
    assert gone.last_pair == given
    passing = dataclasses.replace(result, rows=[row for row in result.rows if row.passed is not False])
    assert passing and not result
    gone.show(passing, given)
    assert gone.can_remap() and not gone.can_reduce_fp16()  # nothing fails: nothing to narrow down


def test_texts_overlay_and_graph_target(compared):
    _, result = compared
    header = st.sources_text(result)
    assert header.startswith("Golden: <b>golden</b>") and "Target: <b>target</b>" in header
    findings = st.findings_text(result)
    assert findings.count("<div>") == len(result.findings) > 0 and "add" in findings
    first = st.first_finding_row(result)
    assert first == next(f.row for f in result.findings if f.row is not None)
    found = st.verdicts(result, lambda row: f"cos {row.metrics.cosine:.3f}")
    assert found.side == "target" and found.model == Path(result.model)
    assert found.verdicts["add"] == "fail" and set(found.values) == set(found.verdicts) == set(found.labels)
    assert found.labels["add"].startswith("cos ")
    model, name = st.graph_target(result, None, found.side, found.model)  # no row: the first failing one
    assert model == found.model and name == next(r for r in result.rows if r.passed is False).target.op_name
    assert st.finding_colour("nonexistent kind") == "#d29922"


def test_only_sizes_no_model_fixes_are_asked_for():
    asked = [("x", ["N", 8], "float32"), ("mask", [1, 8], "int64"), ("y", [1, 4], "float32")]
    # "x" is dynamic but the converted model fixes it; "mask" is an integer input: its values are asked
    shapes, left = st.plan_inputs(asked, {"x": [2, 8]})
    assert shapes == {"x": [2, 8]} and [entry[0] for entry in left] == ["mask", "y"]
    # only float inputs, every dynamic dim known: nothing to ask
    assert st.plan_inputs([asked[0], asked[2]], {"x": [2, 8]}) == ({"x": [2, 8]}, [])
    # a known shape of the wrong rank is not taken
    shapes, left = st.plan_inputs([asked[0]], {"x": [8]})
    assert shapes == {} and left == [asked[0]]


def test_one_cache_folder_per_pair_of_models(tmp_path):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    one = pair_folder(a, b, tmp_path)
    assert one == pair_folder(a, b, tmp_path) and one.parent == tmp_path / "accuracy"
    assert one.name.startswith("b-") and one != pair_folder(b, b, tmp_path)
