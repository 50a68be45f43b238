"""The report: JSON keys the CLI promises, self-contained HTML, Markdown; the closed loop."""

from __future__ import annotations

import json

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.advisor import write_report
from studio.tools.advisor.engine import advise
from advisor_helpers import mish_cnn, small_model


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from studio.tools.profiler.local_run import profile_model

    folder = tmp_path_factory.mktemp("rep")
    model = mish_cnn(folder / "m.onnx")
    run_job(profile_model(model, folder / "p", iterations=4, warmup=1))
    return run_job(advise(model=model, profile=folder / "p", device="Ascend 310"))


def test_json_has_the_promised_keys(report, tmp_path):
    data = json.loads(write_report(report, tmp_path / "r.json").read_text())
    assert {"findings", "roofline", "summary"} <= set(data)
    for f in data["findings"]:
        assert {"id", "source", "severity", "title", "evidence", "gain_ms", "recommendation", "nodes"} <= set(f)
    for p in data["roofline"]:
        assert {"name", "op_type", "flops", "bytes", "time_us", "bound"} <= set(p)
    assert data["summary"]["device"] == "Ascend 310"
    assert data["summary"]["by_severity"]["high"] == sum(f["severity"] == "high" for f in data["findings"])


def test_html_is_self_contained(report, tmp_path):
    html = write_report(report, tmp_path / "r.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "<circle" in html
    assert "http://" not in html.replace("http://www.w3.org", "") and "<script src" not in html
    assert "Decomposed Mish" in html


def test_markdown(report, tmp_path):
    md = write_report(report, tmp_path / "r.md").read_text()
    assert md.startswith("# Model Performance Report") and "### High" in md and "## Roofline" in md


def test_unknown_format(report, tmp_path):
    from studio.core.errors import UserError

    with pytest.raises(UserError, match="Unknown report format"):
        write_report(report, tmp_path / "r.txt")


def test_closed_loop_makes_the_mish_model_faster_and_reports_cosine(tmp_path):
    import onnxruntime as ort

    from studio.tools.advisor.loop import closed_loop
    from studio.tools.profiler.local_inputs import make_inputs

    model = mish_cnn(tmp_path / "mish.onnx", size=128)
    result = run_job(closed_loop(model, tmp_path / "fixed.onnx", ["ConvBnFusion", "MishToLeakyRelu"],
                                 allow_accuracy_change=True, iterations=15, warmup=2, work=tmp_path / "work"))
    assert result.applied.swapped and len(result.applied.swapped) == 3
    assert [f["pass"] for f in result.applied.fusions].count("ConvBnFusion") == 3
    assert result.applied.nodes_after == 16 - 3 - 6  # 3 BN folded, 3 x (Softplus, Tanh, Mul) -> LeakyRelu
    assert result.after_ms["p50"] < result.before_ms["p50"]  # Softplus was the dearest op by far
    # independent cosine of the one output, same seeded input
    s0 = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    s1 = ort.InferenceSession(str(tmp_path / "fixed.onnx"), providers=["CPUExecutionProvider"])
    feeds = make_inputs(s0, {}, 0)
    a, b = (s.run(None, feeds)[0].astype(np.float64).ravel() for s in (s0, s1))
    cosine = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    (out,) = result.outputs
    assert out["output"] == "pool" and out["cosine"] == pytest.approx(cosine, abs=1e-5)
    from studio.tools.accuracy.metrics import Thresholds, compare_arrays

    # The verdict is the accuracy engine's thresholds (cosine and the error metrics) on the same input.
    violations = Thresholds().violations(compare_arrays(a, b))
    assert out["passed"] == (not violations) and out["violations"] == violations


def test_exact_fixes_keep_the_numbers(tmp_path):
    from studio.tools.advisor.loop import compare_outputs
    from studio.tools.advisor.fixes import apply_fixes

    model = mish_cnn(tmp_path / "m.onnx")
    applied = run_job(apply_fixes(model, tmp_path / "f.onnx", ["ConvBnFusion"]))
    assert applied.nodes_after == applied.nodes_before - 3 and not applied.swapped
    (out,) = compare_outputs(model, tmp_path / "f.onnx")
    assert out["passed"] and out["cosine"] > 0.99999


def test_accuracy_changing_fix_needs_the_tick(tmp_path):
    from studio.core.errors import UserError
    from studio.tools.advisor.fixes import apply_fixes

    model = mish_cnn(tmp_path / "m.onnx")
    with pytest.raises(UserError, match="changes the model's numbers"):
        run_job(apply_fixes(model, tmp_path / "f.onnx", ["MishToLeakyRelu"]))
    with pytest.raises(UserError, match="overwrite"):
        run_job(apply_fixes(model, model, ["ConvBnFusion"]))


def test_closed_loop_on_a_dynamic_model_asks_for_sizes_and_uses_the_profiles_shapes(tmp_path):
    from studio.core.errors import UserError
    from studio.tools.advisor.loop import closed_loop
    from studio.tools.profiler.local_run import profile_model

    model = small_model(tmp_path / "dyn.onnx", "matmul_add", dynamic=True)
    with pytest.raises(UserError, match="dynamic dimensions") as info:
        run_job(closed_loop(model, tmp_path / "fixed.onnx", ["MatMulAddFusion"], iterations=2, warmup=1,
                            work=tmp_path / "w0"))
    assert "--input-shape x=" in info.value.fix and not (tmp_path / "fixed.onnx").exists()
    # A profile made at batch 4: the loop measures both models at that size, never at a guessed 1.
    run_job(profile_model(model, tmp_path / "base", 2, 1, shapes={"x": [4, 32]}))
    result = run_job(closed_loop(model, tmp_path / "fixed.onnx", ["MatMulAddFusion"], baseline=tmp_path / "base",
                                 work=tmp_path / "w1"))
    used = json.loads((tmp_path / "w1" / "after" / "studio_profile.json").read_text())["inputs"]
    assert used["x"]["shape"] == [4, 32] and result.outputs[0]["passed"]
