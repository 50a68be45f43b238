"""Gains: severity from measured gains, a measured slowdown reverses the advice, estimates say so;
the interleaved A/B behind them; the fusion plan and the size change of a fix."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.advisor.model import Finding
from advisor_helpers import mish_cnn, session_ratio


def _measured(ratio: float, significant: bool, base: float = 100.0) -> dict:
    change = {"verdict": "no significant change" if not significant else "faster" if ratio < 1 else "slower",
              "significant": significant, "ratio": ratio, "change_pct": (ratio - 1) * 100,
              "base_median_ms": base, "new_median_ms": base * ratio}
    return {"lever": "fix:X", "label": "the fix X", "change": change, "describe": change["verdict"]}


def _finding(**kw) -> Finding:
    base = dict(id="r", title="T", severity="high", category="c", evidence=[], recommendation="Do X.",
                gain_ms=20.0, cost_ms=20.0, fix="ConvBnFusion")
    base.update(kw)
    return Finding(**base)


def test_judge_takes_severity_from_measured_gains_only():
    from studio.tools.advisor.gains import judge

    faster, slower, same, estimate = (_finding(measurement=_measured(0.9, True)), _finding(measurement=_measured(1.3, True)),
                                      _finding(measurement=_measured(1.01, False)), _finding())
    accuracy = _finding(gain_ms=None, cost_ms=None, fix=None)  # not a time: its rule's severity stands
    judge([faster, slower, same, estimate, accuracy])
    # 10 % faster on a 100 ms baseline: a measured 10 ms gain, high (>= 5 %)
    assert faster.gain_basis == "measured" and faster.gain_ms == pytest.approx(10.0) and faster.severity == "high"
    # slower: the advice is reversed, the fix no longer offered, nothing saved
    assert slower.severity == "low" and slower.fix is None and slower.gain_ms is None
    assert slower.recommendation.startswith("Keep") and "30 % slower" in slower.title
    assert same.severity == "low" and same.gain_ms == 0.0 and "no significant difference" in same.evidence[-1]
    # 20 ms estimated on any step would be high; an estimate rates medium at most and says why
    assert estimate.gain_basis == "estimate" and estimate.severity == "medium" and "not measured" in estimate.evidence[-1]
    assert accuracy.severity == "high" and accuracy.gain_basis is None


def test_summary_and_verdict_tell_measured_from_estimated():
    from studio.tools.advisor.gains import judge
    from studio.tools.advisor.model import Report
    from studio.tools.advisor.perf_report import verdict

    report = Report(findings=judge([_finding(title="A", measurement=_measured(0.9, True)),
                                    _finding(title="B", gain_ms=40.0, fix=None)]))
    summary = report.summary()
    assert summary["measured_gain_ms"] == pytest.approx(10.0) and summary["estimated_gain_ms"] == pytest.approx(40.0)
    assert "biggest win: A (saves 10.00 ms per step, measured A/B)" in verdict({}, report.findings)
    only_estimate = judge([_finding(title="B", gain_ms=40.0, fix=None)])
    assert verdict({}, only_estimate).startswith("Worth a look") and "not measured" in verdict({}, only_estimate)


def test_interleaved_ab_finds_a_real_difference_and_none_where_there_is_none():
    from studio.core import ab

    rng = np.random.default_rng(0)
    same = run_job(ab.interleaved(lambda: 10 + rng.normal(0, 0.5), lambda: 10 + rng.normal(0, 0.5), budget_s=2))
    assert same.verdict == "no significant change" and same.low <= 1.0 <= same.high
    slower = run_job(ab.interleaved(lambda: 10 + rng.normal(0, 0.5), lambda: 12 + rng.normal(0, 0.5), budget_s=2))
    assert slower.verdict == "slower" and slower.ratio == pytest.approx(1.2, rel=0.03)
    # independent: the ratio of the medians of what was drawn is inside the interval
    assert slower.low <= 1.2 <= slower.high or abs(slower.ratio - 1.2) < 0.02


def _interleaved_ratio(a_path, b_path) -> float:
    import onnxruntime as ort

    a, b = (ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]) for p in (a_path, b_path))
    return session_ratio(a, b, {"input": np.random.default_rng(3).random((1, 3, 128, 128), dtype=np.float32)})


def test_a_fix_that_helps_is_measured_and_rated_by_its_measurement(tmp_path):
    """A CNN with decomposed Mish: the advisor tries Mish -> LeakyRelu on a copy and times it against
    the original; the gain and the severity are that measurement's."""
    from studio.tools.advisor.engine import advise
    from studio.tools.advisor.fixes import apply_fixes
    from studio.tools.advisor.model import severity_for
    from studio.tools.profiler.local_run import profile_model

    model = mish_cnn(tmp_path / "mish.onnx", channels=32, size=128)
    run_job(profile_model(model, tmp_path / "p", iterations=5, warmup=1))
    report = run_job(advise(profile=tmp_path / "p", msprof=False, measure_budget_s=6))
    mish = next(f for f in report.findings if f.id == "decomposed-mish")
    change = mish.measurement["change"]
    assert mish.gain_basis == "measured" and mish.measurement["lever"] == "fix:MishToLeakyRelu"
    swapped = run_job(apply_fixes(model, tmp_path / "swapped.onnx", ["MishToLeakyRelu"], allow_accuracy_change=True))
    independent = _interleaved_ratio(model, swapped.output)
    print(f"Mish -> LeakyRelu: A/B {change['describe'] if 'describe' in change else change['verdict']} "
          f"ratio {change['ratio']:.3f}; independent {independent:.3f}")
    assert change["verdict"] == "faster" and independent < 1.0
    assert mish.gain_ms == pytest.approx(change["base_median_ms"] - change["new_median_ms"])
    assert mish.severity == severity_for(mish.gain_ms, change["base_median_ms"])
    assert report.measurements["fix:MishToLeakyRelu"]["change"] == change


def test_fusions_follow_the_converter_through_a_mul_then_add(tmp_path):
    """Conv -> Mul(per channel) -> Add(per channel): the Add folds only once the Mul has; the advisor
    reports both, as the converter folds them."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from studio.tools.advisor.engine import advise
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((1, 8, 1, 1)).astype(np.float32), "scale"),
             numpy_helper.from_array(rng.standard_normal((1, 8, 1, 1)).astype(np.float32), "shift")]
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                               helper.make_node("Mul", ["c", "scale"], ["m"], name="mul"),
                               helper.make_node("Add", ["m", "shift"], ["a"], name="add"),
                               helper.make_node("Relu", ["a"], ["y"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    path = tmp_path / "affine.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    report = run_job(advise(model=path, msprof=False))
    found = {f.fix: f.nodes for f in report.findings if f.id.startswith("fusion-")}
    converted = run_job(convert_model(ConvertOptions(model=path, output=tmp_path / "c.onnx")))
    assert found == {"ConvMulFusion": ["conv", "mul"], "ConvAddFusion": ["conv", "add"]}
    assert {f["pass"]: f["nodes"] for f in converted.fusions if f["pass"].endswith("Fusion")} == found


def test_a_conversion_that_grows_the_model_says_which_pass_and_how_much(tmp_path):
    """A 1 KB file whose 4 MB weight is computed by ConstantOfShape: constant folding stores it."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from studio.tools.advisor.fixes import apply_fixes

    shape = numpy_helper.from_array(np.array([1024, 1024], np.int64), "wshape")
    fill = helper.make_tensor("v", TensorProto.FLOAT, [1], [0.001])
    graph = helper.make_graph([helper.make_node("ConstantOfShape", ["wshape"], ["w"], name="gen", value=fill),
                               helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1024])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 1024])], [shape])
    path = tmp_path / "light.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    applied = run_job(apply_fixes(path, tmp_path / "out.onnx", ["MatMulAddFusion"]))
    assert applied.passes == {"ConstantFolding": 1}  # the asked-for fusion found nothing; the clean-up ran
    assert applied.size_before == path.stat().st_size and applied.size_after == (tmp_path / "out.onnx").stat().st_size
    assert applied.size_after > 4 * 1024 * 1024
    assert "also ran ConstantFolding x1" in applied.describe() and "MatMulAddFusion x0" in applied.describe()
    assert applied.warnings and "ConstantFolding x1 added 4.2 MB" in applied.warnings[0]
