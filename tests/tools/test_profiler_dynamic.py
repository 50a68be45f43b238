"""Dynamic input dims: never set to 1 silently; the shapes used are recorded; the latency is the
model's, checked against a plain ONNX Runtime timing loop; failed runs leave nothing behind."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ort_peer import plain_ort_ms

from profiler_helpers import dynamic_detector

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.profiler.loader import open_profile
from studio.tools.profiler.local_inputs import model_inputs, parse_shape_specs
from studio.tools.profiler.local_run import profile_model

@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    return dynamic_detector(tmp_path_factory.mktemp("dyn") / "det.onnx")


def test_dynamic_dims_without_a_size_stop_with_input_axis_and_option(detector, tmp_path):
    out = tmp_path / "prof"
    with pytest.raises(UserError) as info:
        run_job(profile_model(detector, out, 2, 0))
    text = str(info.value)
    assert "input 'x'" in text and "axis 0 (N)" in text and "axis 2 (H)" in text and "axis 3 (W)" in text
    assert "axis 1" not in text  # 3 channels are fixed
    assert "--input-shape x=?,3,?,?" in text and "--input x=FILE.npy" in text
    assert not out.exists()  # a failed run leaves no folder (and no ort_*.json) behind
    with pytest.raises(UserError):
        run_job(profile_model(detector, tmp_path / "new" / "deeper" / "prof", 2, 0))
    assert not (tmp_path / "new").exists()


def test_shapes_given_are_used_recorded_and_timed_like_plain_onnxruntime(detector, tmp_path):
    shape = [1, 3, 192, 192]
    before = plain_ort_ms(detector, shape, 6)  # the peer, before and after (the machine is shared)
    result = run_job(profile_model(detector, tmp_path / "prof", 6, 2, shapes={"x": shape}))
    assert result.inputs["x"].shape == shape and result.inputs["x"].dtype == "float32"
    assert "1×3×192×192" in result.report()
    summary = json.loads((tmp_path / "prof" / "studio_profile.json").read_text())
    assert summary["inputs"]["x"]["shape"] == shape
    assert summary["facts"]["input x"].startswith("1×3×192×192 float32")
    trace = run_job(open_profile(tmp_path / "prof", use_cache=False))
    assert trace.facts["input x"].startswith("1×3×192×192")  # shown in the Summary tab
    # the ORT profile saw the same shape on the first conv
    raw = json.loads((tmp_path / "prof" / "onnxruntime_profile.json").read_text())
    first_inputs = [list(e["args"]["input_type_shape"][0].values())[0] for e in raw
                    if e.get("cat") == "Node" and e["args"].get("input_type_shape")]
    assert shape in first_inputs
    after = plain_ort_ms(detector, shape, 6)
    ours = result.latency()["p50"]
    print(f"dynamic detector 1x3x192x192: studio p50 {ours:.2f} ms, plain ORT {before:.2f} / {after:.2f} ms")
    assert 0.2 * min(before, after) < ours < 5 * max(before, after)  # same order of magnitude
    tiny = plain_ort_ms(detector, [1, 3, 1, 1], 6)
    assert ours > 5 * tiny  # what "dynamic dims = 1" would have reported is far off


def test_bad_shapes_say_what_is_wrong(detector, tmp_path):
    with pytest.raises(UserError, match="has 3 dims; the input has 4"):
        run_job(profile_model(detector, tmp_path / "a", 1, 0, shapes={"x": [1, 64, 64]}))
    with pytest.raises(UserError, match="axis 1 is fixed at 3 in the model, not 4"):
        run_job(profile_model(detector, tmp_path / "b", 1, 0, shapes={"x": [1, 4, 64, 64]}))
    with pytest.raises(UserError, match="no input named image"):
        run_job(profile_model(detector, tmp_path / "c", 1, 0, shapes={"image": [1, 3, 64, 64]}))
    for bad in (["x=1,3,a,4"], ["x"], ["x=1,0,3"]):
        with pytest.raises(UserError, match="--input-shape"):
            parse_shape_specs(bad)
    assert parse_shape_specs(["x=1,3,640,640", "s="]) == {"x": [1, 3, 640, 640], "s": []}
    # ATC's spelling, as `studio convert --input-shape` takes it
    assert parse_shape_specs(["x:1,3,64,64;input:0:1,8"]) == {"x": [1, 3, 64, 64], "input:0": [1, 8]}
    assert not any(tmp_path.glob("*/ort_*.json"))


def test_an_input_file_sets_the_shape(detector, tmp_path):
    data = tmp_path / "x.npy"
    np.save(data, np.zeros((2, 3, 32, 48), np.float32))
    result = run_job(profile_model(detector, tmp_path / "prof", 1, 0, inputs={"x": data}))
    assert result.inputs["x"].shape == [2, 3, 32, 48] and str(data) in result.inputs["x"].source


def test_model_inputs_read_without_a_session(detector):
    (spec,) = model_inputs(detector)
    assert spec.name == "x" and spec.dims == ["N", 3, "H", "W"] and spec.dynamic_axes == [0, 2, 3]


def test_failed_runs_leave_no_ort_files_and_no_raw_cpp_text(detector, tmp_path):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    out = tmp_path / "existing"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(UserError) as info:
        run_job(profile_model(empty, out, 1, 0))
    text = str(info.value)
    assert "holds no ONNX graph" in text and "[ONNXRuntimeError]" not in text and "onnxruntime_src" not in text
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]  # the user's folder, as it was
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.zeros((1, 5, 8, 8), np.float32))  # 5 channels where the conv wants 3
    with pytest.raises(UserError, match="size 5 on axis 1; the model expects 3") as info:  # refused before a run
        run_job(profile_model(detector, out, 1, 0, inputs={"x": wrong}))
    assert "onnxruntime_src" not in str(info.value)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_make_inputs_keeps_its_plain_feeds_result(detector):
    """Other engines (the advisor's output check) take make_inputs' feeds dict as before."""
    import onnxruntime as ort

    from studio.tools.profiler.local_inputs import make_inputs

    session = ort.InferenceSession(str(detector), providers=["CPUExecutionProvider"])
    feeds = make_inputs(session, {}, 0, {"x": [1, 3, 8, 8]})
    assert isinstance(feeds, dict) and feeds["x"].shape == (1, 3, 8, 8)
    with pytest.raises(UserError, match="dynamic dimensions"):
        make_inputs(session, {}, 0)
