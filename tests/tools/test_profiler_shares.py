"""Op statistics: self time, the run's own ranges left out; compare per iteration. Checked against
independent sums over ONNX Runtime's raw profile JSON."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from profiler_helpers import conv_exp_matmul, write_trace

from studio.core.jobs import run_job
from studio.tools.profiler import stats
from studio.tools.profiler.compare import compare, iterations
from studio.tools.profiler.loader import open_profile
from studio.tools.profiler.local_run import profile_model
from studio.core.serial import to_json


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """Conv -> Exp -> MatMul -> Tanh, big enough that kernels take measurable time."""
    return conv_exp_matmul(tmp_path_factory.mktemp("m") / "m.onnx", channels=8, size=64, tanh=True)


def load(path):
    return run_job(open_profile(path, use_cache=False))


def raw_kernels(folder) -> list[dict]:
    events = json.loads((folder / "onnxruntime_profile.json").read_text())
    return [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]


def test_op_stats_match_an_independent_sum_over_the_raw_ort_json(model, tmp_path):
    run_job(profile_model(model, tmp_path / "p", 5, 2))
    trace = load(tmp_path / "p")
    rows = {s.name: s for s in stats.by_name(trace)}
    # the run's own ranges are not ops
    for wrapper in ("model_run", "SequentialExecutor::Execute", "session_initialization", "iteration 1",
                    "warm-up 1", "create session"):
        assert wrapper not in rows
    # independent: ORT's raw JSON, summed in plain Python
    totals, counts = defaultdict(float), defaultdict(int)
    for e in raw_kernels(tmp_path / "p"):
        node = e["name"][:-len("_kernel_time")]
        totals[node] += e["dur"]
        counts[node] += 1
    grand = sum(totals.values())
    assert set(rows) == set(totals)
    for node, total in totals.items():
        assert rows[node].count == counts[node]
        assert rows[node].total_us == pytest.approx(total, abs=1e-6)
        assert rows[node].self_us == pytest.approx(total, abs=1e-6)  # kernels have no children
        assert rows[node].share == pytest.approx(total / grand, rel=1e-9)
    assert sum(s.share for s in rows.values()) == pytest.approx(1.0)
    # the timeline's colours: ops by share, wrappers grey (NaN), never red for wrappers only
    share = stats.share_by_name_id(trace)
    names = trace.names
    assert np.isnan(share[names.index("model_run")]) and np.isnan(share[names.index("SequentialExecutor::Execute")])
    top = max(rows.values(), key=lambda s: s.share)
    assert share[names.index(top.name)] == pytest.approx(top.share) and top.share >= 1 / len(rows)
    wrappers = {w.name: w for w in stats.wrappers(trace)}
    assert wrappers["model_run"].count == 7 and wrappers["iteration 1"].count == 1


def test_self_time_subtracts_nested_children(tmp_path):
    events = [
        {"ph": "X", "name": "layer", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "name": "matmul", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10, "dur": 50},
        {"ph": "X", "name": "gemm", "cat": "kernel", "pid": 1, "tid": 1, "ts": 15, "dur": 30},
        {"ph": "X", "name": "add", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 70, "dur": 20},
        {"ph": "X", "name": "ProfilerStep#1", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": 0, "dur": 110},
    ]
    trace = load(write_trace(tmp_path / "t.json", events))
    rows = {s.name: s for s in stats.by_name(trace)}
    assert "ProfilerStep#1" not in rows
    expected_self = {"layer": 100 - 50 - 20, "matmul": 50 - 30, "gemm": 30, "add": 20}
    for name, value in expected_self.items():
        assert rows[name].self_us == pytest.approx(value)
        assert rows[name].share == pytest.approx(value / 100)  # self times add up to the layer's 100 us
    assert rows["layer"].total_us == pytest.approx(100)


def test_compare_is_per_iteration_when_iteration_counts_differ(model, tmp_path):
    run_job(profile_model(model, tmp_path / "a", 12, 2))
    run_job(profile_model(model, tmp_path / "b", 6, 2))
    base, new = load(tmp_path / "a"), load(tmp_path / "b")
    assert iterations(base).count == 12 and iterations(new).count == 6
    result = compare(base, new)
    assert result.base_iterations == 12 and result.new_iterations == 6
    # independent: per op, the raw kernels of the measured runs (after the warm-ups) / iterations
    for folder, its, attr in ((tmp_path / "a", 12, "base_per_iter_us"), (tmp_path / "b", 6, "new_per_iter_us")):
        events = json.loads((folder / "onnxruntime_profile.json").read_text())
        runs = sorted((e for e in events if e["name"] == "model_run"), key=lambda e: e["ts"])[-its:]
        lo, hi = runs[0]["ts"], runs[-1]["ts"] + runs[-1]["dur"]
        per_op = defaultdict(float)
        for e in raw_kernels(folder):
            if lo <= e["ts"] < hi:
                per_op[e["name"][:-len("_kernel_time")]] += e["dur"] / its
        for row in result.ops:
            assert getattr(row, attr) == pytest.approx(per_op[row.name], abs=1e-6)
        assert getattr(result, attr) == pytest.approx(sum(per_op.values()), abs=1e-6)
    # the op time ratio is per iteration (op totals over 12 and 6 iterations would differ ~2x for the same
    # model), of the medians over the iterations; a speed-up is claimed only where the latency's verdict is
    medians = []
    for folder, its in ((tmp_path / "a", 12), (tmp_path / "b", 6)):
        events = json.loads((folder / "onnxruntime_profile.json").read_text())
        runs = sorted((e for e in events if e["name"] == "model_run"), key=lambda e: e["ts"])[-its:]
        kernels = raw_kernels(folder)
        medians.append(np.median([sum(e["dur"] for e in kernels if r["ts"] <= e["ts"] < r["ts"] + r["dur"])
                                  for r in runs]))
    assert result.op_time_ratio == pytest.approx(medians[1] / medians[0])
    if result.change is None or not result.change.significant:
        assert result.speedup is None and "not a speed-up" in str(result)
    assert result.base_per_iter_us == pytest.approx(result.base_total_us / 12)
    assert result.new_per_iter_us == pytest.approx(result.new_total_us / 6)
    assert all(row.only_in is None for row in result.ops)
    summary = json.loads((tmp_path / "a" / "studio_profile.json").read_text())
    assert result.base_latency_ms == pytest.approx(summary["latency_ms"]["mean"], rel=0.05, abs=0.05)
    assert result.latency_change_pct == pytest.approx(
        (result.new_latency_ms - result.base_latency_ms) / result.base_latency_ms * 100)
    text = str(result)
    assert "iterations: 12 -> 6" in text and "latency per iteration" in text


def test_one_sided_rows_are_marked_not_green(tmp_path):
    base = [{"ph": "X", "name": n, "pid": 1, "tid": 1, "ts": i * 10, "dur": 5} for i, n in enumerate(["a", "b"])]
    new = [{"ph": "X", "name": n, "pid": 1, "tid": 1, "ts": i * 10, "dur": 5} for i, n in enumerate(["a", "c"])]
    result = compare(load(write_trace(tmp_path / "b.json", base)), load(write_trace(tmp_path / "n.json", new)))
    rows = {r.name: r for r in result.ops}
    assert rows["b"].status == "only in base" and rows["c"].status == "only in new" and rows["a"].status == "both"
    for name in ("b", "c"):
        assert rows[name].delta_pct is None and rows[name].speedup is None
    assert "only in base" in str(result) and "only in new" in str(result)
    assert {r["status"] for r in to_json(result)["ops"]} == {"both", "only in base", "only in new"}


def test_compare_says_when_the_inputs_differ(tmp_path):
    from profiler_helpers import dynamic_detector

    model = dynamic_detector(tmp_path / "det.onnx")
    run_job(profile_model(model, tmp_path / "a", 1, 0, shapes={"x": [1, 3, 64, 64]}))
    run_job(profile_model(model, tmp_path / "b", 1, 0, shapes={"x": [1, 3, 32, 32]}))
    result = compare(load(tmp_path / "a"), load(tmp_path / "b"))
    assert result.input_changes == ["x: 1×3×64×64 float32 -> 1×3×32×32 float32"]
    assert "inputs differ: x: 1×3×64×64" in str(result)
