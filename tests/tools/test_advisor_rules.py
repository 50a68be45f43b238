"""Each advisor rule on a case that fires and one that does not (generated models, real fixtures)."""

from __future__ import annotations

import csv
import json

import pytest

from advisor_helpers import host_sleep_trace, mish_cnn, op_summary_csv, profiled_mish, small_model

from studio.core.jobs import run_job
from studio.core.serial import to_json
from studio.tools.advisor.context import Context
from studio.tools.advisor.engine import advise
from studio.tools.advisor.model import RooflinePoint


def ids(report) -> set[str]:
    return {f.id for f in report.findings}


def by_id(report, rule_id):
    return next(f for f in report.findings if f.id == rule_id)


@pytest.fixture(scope="module")
def mish_profile(tmp_path_factory):
    return profiled_mish(tmp_path_factory.mktemp("mish"), iterations=6)


def test_mish_finding_gain_is_the_profiled_chain_time(mish_profile):
    model, profile = mish_profile
    report = run_job(advise(profile=profile, msprof=False, measure=False))  # the rule's estimate, not measured
    assert report.model_path == str(model)  # taken from the local profile
    mish = by_id(report, "decomposed-mish")
    assert mish.fix == "MishToLeakyRelu" and mish.changes_accuracy
    assert len(mish.nodes) == 9
    # independent: the op_summary.csv the run wrote, summed by hand per iteration, a run 5x its
    # op's median (and 50 us above it: a stall of this shared machine) counted as the median, then
    # scaled as the report states (only ever down, so the op times fit in the bare step)
    import numpy as np

    with (profile / "op_summary.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    runs: dict[str, list[float]] = {}
    for r in rows:
        runs.setdefault(r["Op Name"], []).append(float(r["Task Duration(us)"]))
    per_name = {}
    for name, durs in runs.items():
        med = float(np.median(durs))
        per_name[name] = sum(med if d >= 5 * med and d - med >= 50 else d for d in durs) / 6
    summary = json.loads((profile / "studio_profile.json").read_text())
    step = summary["latency_ms"]["p50"]
    scale = report.performance["op_time_scale"]
    total = sum(per_name.values()) / 1000
    assert scale == pytest.approx(min(1.0, step / total), rel=1e-5)
    chain = sum(v for k, v in per_name.items() if "/mish/softplus" in k or "/mish/tanh" in k) / 1000 * scale
    assert mish.gain_ms == pytest.approx(chain, rel=1e-5)
    assert mish.gain_ms > 0
    assert report.performance["step_ms"] == pytest.approx(step, abs=1e-4)  # the bare median latency
    share = mish.gain_ms / step
    # an estimate rates medium at most: high needs the change measured
    assert mish.gain_basis == "estimate" and "minus one element-wise pass" in mish.gain_method
    assert mish.severity == ("medium" if share >= 0.03 else "low")


def test_no_mish_finding_on_relu_model(tmp_path):
    report = run_job(advise(model=mish_cnn(tmp_path / "relu.onnx", mish=False), msprof=False))
    assert "decomposed-mish" not in ids(report)
    assert "fusion-conv-bn" in ids(report)  # Conv+BN pairs still there
    assert len(by_id(report, "fusion-conv-bn").nodes) == 6


@pytest.mark.parametrize("spec, rule, fires", [
    ("conv_add", "fusion-conv-add", True), ("matmul_add", "fusion-matmul-add", True),
    ("plain_relu", "fusion-conv-add", False), ("plain_relu", "fusion-matmul-add", False),
    ("conv_add_last_axis", "fusion-conv-add", False),
    ("gelu", "decomposed-gelu", True), ("layernorm", "decomposed-layernorm", True),
    ("plain_relu", "decomposed-gelu", False), ("plain_relu", "decomposed-layernorm", False),
])
def test_pattern_rules(tmp_path, spec, rule, fires):
    report = run_job(advise(model=small_model(tmp_path / f"{spec}.onnx", spec), msprof=False))
    assert (rule in ids(report)) is fires
    if rule == "decomposed-layernorm" and fires:
        assert len(by_id(report, rule).nodes) == 7
    if rule == "decomposed-gelu" and fires:
        assert len(by_id(report, rule).nodes) == 5


@pytest.mark.parametrize("spec, rule, fix", [("conv_add", "fusion-conv-add", "ConvAddFusion"),
                                             ("matmul_add", "fusion-matmul-add", "MatMulAddFusion"),
                                             ("conv_add_last_axis", None, "ConvAddFusion")])
def test_fusion_findings_agree_with_the_converter(tmp_path, spec, rule, fix):
    """What a fusion finding promises is what the converter's pass then does."""
    from studio.tools.advisor.fixes import apply_fixes

    model = small_model(tmp_path / f"{spec}.onnx", spec)
    report = run_job(advise(model=model, msprof=False))
    promised = len(by_id(report, rule).nodes) // 2 if rule else 0
    applied = run_job(apply_fixes(model, tmp_path / "fixed.onnx", [fix]))
    assert sum(f["pass"] == fix for f in applied.fusions) == promised


def test_format_conversions_on_pytorch_npu_fixture(ascend_fixtures):
    report = run_job(advise(profile=ascend_fixtures / "pytorch_npu", msprof=False))
    f = by_id(report, "format-conversions")
    # independent: kernel_details.csv summed with the csv module
    with (ascend_fixtures / "pytorch_npu" / "kernel_details.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    trans = sum(float(r["Duration(us)"]) for r in rows if r["Type"] in ("TransData", "Transpose", "TransposeD"))
    steps = len({r["Step Id"] for r in rows}) if "Step Id" in rows[0] else 1
    assert f.cost_ms == pytest.approx(trans / steps / 1000, rel=1e-6)
    assert any("TransData" in e for e in f.evidence)
    assert "dynamic-shapes-ops" in ids(report)  # OP State = dynamic in the fixture


def test_no_format_conversion_without_transposes(tmp_path):
    report = run_job(advise(model=mish_cnn(tmp_path / "m.onnx"), msprof=False))
    assert "format-conversions" not in ids(report)


def test_ai_cpu_rule(tmp_path):
    fires = op_summary_csv(tmp_path / "op_summary.csv", [
        ("conv1", "Conv2D", "AI_CORE", 400.0), ("nms", "NonMaxSuppressionV3", "AI_CPU", 250.0, "FLOAT;INT64"),
        ("cast", "Cast", "AI_CPU", 30.0, "DOUBLE")])
    report = run_job(advise(profile=fires, msprof=False))
    f = by_id(report, "ai-cpu-ops")
    assert f.cost_ms == pytest.approx(0.28)
    assert set(f.nodes) == {"nms", "cast"} and any("DOUBLE/INT64" in e for e in f.evidence)
    assert f.severity == "medium"  # 280 of 680 us, but an estimate: high needs a measured gain
    assert f.gain_basis == "estimate" and any("not measured" in e for e in f.evidence)
    (tmp_path / "q").mkdir()
    quiet = op_summary_csv(tmp_path / "q" / "op_summary.csv", [
        ("conv1", "Conv2D", "AI_CORE", 400.0), ("tiny", "Where", "AI_CPU", 5.0)])  # longest AI CPU < 20 us
    assert "ai-cpu-ops" not in ids(run_job(advise(profile=quiet, msprof=False)))


def test_cpu_fallback_rule(tmp_path):
    mixed = op_summary_csv(tmp_path / "op_summary.csv", [
        ("conv", "Conv", "CUDAExecutionProvider", 100.0), ("nms", "NonMaxSuppression", "CPUExecutionProvider", 40.0)])
    f = by_id(run_job(advise(profile=mixed, msprof=False)), "cpu-fallback")
    assert f.nodes == ["nms"] and f.cost_ms == pytest.approx(0.04)
    (tmp_path / "cpu").mkdir()
    only_cpu = op_summary_csv(tmp_path / "cpu" / "op_summary.csv", [
        ("conv", "Conv", "CPUExecutionProvider", 100.0), ("nms", "NonMaxSuppression", "CPUExecutionProvider", 40.0)])
    assert "cpu-fallback" not in ids(run_job(advise(profile=only_cpu, msprof=False)))


def test_dynamic_shape_model_rule(tmp_path):
    assert "dynamic-shapes-model" in ids(run_job(advise(model=small_model(tmp_path / "d.onnx", "conv_add", dynamic=True), msprof=False)))
    assert "dynamic-shapes-model" not in ids(run_job(advise(model=small_model(tmp_path / "s.onnx", "conv_add"), msprof=False)))


def test_top_op_and_long_tail(tmp_path):
    rows = [("big_matmul", "MatMul", "AI_CORE", 1000.0)] + [(f"tiny{i}", "Add", "AI_VECTOR_CORE", 8.0) for i in range(40)]
    report = run_job(advise(profile=op_summary_csv(tmp_path / "op_summary.csv", rows), msprof=False))
    top = by_id(report, "top-op")
    assert top.nodes == ["big_matmul"] and top.cost_ms == pytest.approx(1.0)
    tail = by_id(report, "long-tail")
    assert len(tail.nodes) == 40 and tail.cost_ms == pytest.approx(0.32)
    (tmp_path / "even").mkdir()
    even = [(f"op{i}", "Conv2D", "AI_CORE", 100.0) for i in range(10)]
    report = run_job(advise(profile=op_summary_csv(tmp_path / "even" / "op_summary.csv", even), msprof=False))
    assert not {"top-op", "long-tail"} & ids(report)


def test_tiny_batch_rule(tmp_path):
    from studio.tools.advisor.rules import tiny_batch
    from studio.tools.graph.reader import read_model

    def ctx_for(batch):
        path = small_model(tmp_path / f"b{batch}.onnx", "conv_add", batch=batch)
        points = [RooflinePoint("conv", "Conv", 1e6, 1e4, 90.0, "latency-bound"),
                  RooflinePoint("add", "Add", 1e3, 1e4, 10.0, "memory-bound")]
        return Context(model=read_model(path), model_path=path, roofline=points)

    found = tiny_batch.check(ctx_for(1))
    assert found and found[0].id == "tiny-batch" and found[0].cost_ms == pytest.approx(0.09)
    assert tiny_batch.check(ctx_for(4)) == []


def test_host_gap_finds_the_sleep(tmp_path):
    report = run_job(advise(profile=host_sleep_trace(tmp_path / "sleep.json", 5.0), msprof=False))
    gap = by_id(report, "host-gap")
    assert gap.severity == "medium"  # the idle time is an estimate of the gain: high needs it measured
    assert gap.gain_basis == "estimate" and "idle time" in gap.gain_method
    assert report.performance["verdict"].startswith("Worth a look")
    (t0, t1), = gap.time_ranges
    # independent: the gap is from the end of kernel 19 to the start of kernel 20 (us in the file)
    events = json.loads((tmp_path / "sleep.json").read_text())["traceEvents"]
    kernels = sorted((e for e in events if e.get("pid") == 1 and e["ph"] == "X"), key=lambda e: e["ts"])
    gaps = [(b["ts"] - (a["ts"] + a["dur"])) for a, b in zip(kernels, kernels[1:])]
    assert (t1 - t0) / 1e3 == pytest.approx(max(gaps), abs=1e-3)
    assert gap.gain_ms == pytest.approx(max(gaps) / 1000, rel=1e-6)
    assert any("create stream" in e for e in gap.evidence)
    assert any("sleeping or blocked" in e and "aclrtCreateStream" in e for e in gap.evidence)


def test_host_gap_without_host_data_says_so(ascend_fixtures):
    report = run_job(advise(profile=ascend_fixtures / "msprof" / "op_summary_legacy_header.csv", msprof=False))
    gaps = [f for f in report.findings if f.id == "host-gap"]
    assert gaps and all(any("no host data" in e for e in f.evidence) for f in gaps)
    assert not any("sleeping" in e for f in gaps for e in f.evidence)


def test_no_host_gap_without_a_sleep(tmp_path):
    report = run_job(advise(profile=host_sleep_trace(tmp_path / "busy.json", 0.0001), msprof=False))
    assert "host-gap" not in ids(report)


def test_model_load_rule(tmp_path):
    events = [{"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "CANN"}},
              {"ph": "X", "name": "aclmdlLoadFromFile", "pid": 2, "tid": 1, "ts": 0, "dur": 800_000},
              {"ph": "X", "name": "aclmdlExecute", "pid": 2, "tid": 1, "ts": 800_010, "dur": 100_000}]
    (tmp_path / "load.json").write_text(json.dumps(events))
    f = by_id(run_job(advise(profile=tmp_path / "load.json", msprof=False)), "model-load")
    assert f.cost_ms == pytest.approx(800.0)
    assert "model-load" not in ids(run_job(advise(profile=host_sleep_trace(tmp_path / "s.json"), msprof=False)))


def test_fp16_overflow_from_an_accuracy_result(tmp_path):
    from studio.tools.accuracy.fp16_check import csv_path, fp16_check_job

    model = small_model(tmp_path / "scale.onnx", "scale_relu")
    run_job(fp16_check_job(model, tmp_path / "g", tmp_path / "t"))
    report = run_job(advise(accuracy=csv_path(tmp_path / "g"), msprof=False))
    f = by_id(report, "accuracy-fp16-overflow")
    assert f.severity == "high" and f.nodes == ["scale"]
    # independent: x * 1e5 with the profiler's seeded input exceeds the FP16 range
    assert any("65504" in e or "inf" in e for e in f.evidence)

    calm = small_model(tmp_path / "calm.onnx", "plain_relu")
    run_job(fp16_check_job(calm, tmp_path / "g2", tmp_path / "t2"))
    report = run_job(advise(accuracy=csv_path(tmp_path / "g2"), msprof=False))
    assert not any(i.startswith("accuracy-") for i in ids(report))


def test_bench_and_accuracy_json_inputs(tmp_path):
    from studio.core.errors import UserError
    from studio.tools.accuracy.fp16_check import fp16_check_job

    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"latency_ms": {"mean": 12.5, "p50": 12.0}, "throughput_per_s": 80.0}))
    report = run_job(advise(bench=bench, msprof=False))
    # the median is the step (a stall in a few runs moves the mean, not it)
    assert report.performance["step_ms"] == 12.0 and report.performance["throughput_per_s"] == pytest.approx(1000 / 12, abs=1e-3)
    ais = tmp_path / "ais.json"
    ais.write_text(json.dumps({"NPU_compute_time": {"mean": 3.2}}))
    assert run_job(advise(bench=ais, msprof=False)).performance["step_ms"] == 3.2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"nothing": 1}))
    with pytest.raises(UserError, match="No latency"):
        run_job(advise(bench=bad, msprof=False))
    result = run_job(fp16_check_job(small_model(tmp_path / "s.onnx", "scale_relu"), tmp_path / "g", tmp_path / "t"))
    (tmp_path / "cmp.json").write_text(json.dumps(to_json(result)))
    report = run_job(advise(accuracy=tmp_path / "cmp.json", msprof=False))
    assert by_id(report, "accuracy-fp16-overflow").nodes == ["scale"]
    with pytest.raises(UserError, match="Nothing to advise on"):
        run_job(advise())


def test_ops_the_comparison_could_not_see_reach_the_report(tmp_path):
    """A comparison that could not dump inside If bodies must not read as accurate in the advice."""
    import numpy as np
    import onnx
    from studio.tools.accuracy.fp16_check import csv_path, fp16_check_job
    from trust_models import overflow_if_model

    model = tmp_path / "if.onnx"
    onnx.save(overflow_if_model(), model)
    inputs = {"x": np.full((1, 8), 1.0, np.float32), "flag": np.array(True)}  # no overflow: only the gap
    run_job(fp16_check_job(model, tmp_path / "g", tmp_path / "t", inputs=inputs))
    report = run_job(advise(accuracy=csv_path(tmp_path / "g"), msprof=False))
    f = by_id(report, "accuracy-not-covered")
    assert f.severity == "medium" and "not dumped" in " ".join(f.evidence) + f.recommendation
