"""Judgments made from timings, on generated models that show each mechanism: the latency of a
profiled run is measured with the profiler off, statistics leave warm-ups out, the advisor's op
times are robust self times that fit in the step, and comparisons report a confidence interval."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from ort_peer import plain_ab_ratio, plain_ort_feeds_ms

from studio.core.jobs import run_job
from studio.core.serial import to_json
from studio.tools.advisor.engine import advise
from studio.tools.profiler import stats
from studio.tools.profiler.loader import open_profile
from studio.tools.profiler.local_run import profile_model
from timing_helpers import (
    if_model,
    op_self_time_per_run,
    positive_input,
    read_csv,
    self_time_by_type,
    stalled_copy,
    tiny_chain,
)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chain")
    return tiny_chain(folder / "chain.onnx")


@pytest.fixture(scope="module")
def if_profile(tmp_path_factory):
    """The If model profiled with 4 iterations after 3 warm-ups, on an input taking the then-branch."""
    folder = tmp_path_factory.mktemp("if")
    model, x = if_model(folder / "if.onnx"), positive_input(folder / "x.npy")
    run_job(profile_model(model, folder / "profile", iterations=4, warmup=3, inputs={"x": x}))
    return model, folder / "profile"


def test_profile_run_latency_is_that_of_runs_without_the_profiler(chain, tmp_path):
    result = run_job(profile_model(chain, tmp_path / "p", iterations=40, warmup=5))
    feeds = {"x": np.random.default_rng(0).random((1, 16), dtype=np.float64).astype(np.float32)}
    plain = plain_ort_feeds_ms(chain, feeds, 300)  # independent: a bare onnxruntime loop
    bare, profiled = result.latency()["p50"], result.profiled_latency()["p50"]
    print(f"80 tiny ops: studio p50 {bare:.4f} ms, profiled {profiled:.4f} ms, plain loop {plain:.4f} ms")
    assert 0.5 < bare / plain < 2.0  # with the profiler on it is several times the plain loop
    assert profiled > 2 * bare
    # the overhead: alternating rounds, the geometric mean of their ratios of medians (on / off)
    on, off = result.overhead_on_ms, result.overhead_off_ms
    assert len(on) == len(off) == 5 and sum(map(len, on)) == 40 and [len(r) for r in on] == [len(r) for r in off]
    logs = np.log([np.median(a) / np.median(b) for a, b in zip(on, off)])
    assert result.overhead == pytest.approx(np.exp(logs.mean()) - 1)
    assert result.overhead_change.significant and result.overhead_change.low - 1 > 1.0  # several times slower
    text = result.report()
    assert "profiler off" in text and "profiler on" in text and "profiler overhead" in text
    assert "read their shares, not their absolute times" in text  # the op times are inflated, said so
    saved = json.loads((tmp_path / "p" / "studio_profile.json").read_text())
    assert saved["latency_ms"]["p50"] == pytest.approx(bare) and len(saved["latencies_ms"]) == 40
    assert saved["profiled_latency_ms"]["p50"] == pytest.approx(profiled) and len(saved["profiled_latencies_ms"]) == 40
    assert saved["profiler_overhead"] == pytest.approx(result.overhead)
    assert "profiler off" in saved["facts"]["latency mean / p50 / p90 / p99"]
    assert saved["facts"]["profiler overhead"].startswith(f"{result.overhead:+.0%}")
    # the advisor's step is the bare latency
    report = run_job(advise(profile=tmp_path / "p", msprof=False))
    assert report.performance["step_ms"] == pytest.approx(bare, abs=1e-4)
    assert report.performance["profiled_step_ms"] == pytest.approx(profiled, abs=1e-4)


def test_statistics_count_the_measured_iterations_and_agree_with_op_statistic(if_profile):
    _, folder = if_profile
    trace = run_job(open_profile(folder, use_cache=False))
    data = stats.summary(trace)
    assert {row["count"] for row in data["by_name"]} == {4}  # 4 iterations, not 4 + 3 warm-ups
    assert data["measured"]["warmup_left_out"] and "3 warm-up(s) left out" in data["measured"]["note"]
    assert {row["count"] for row in stats.summary(trace, include_warmup=True)["by_name"]} == {7}
    # independent: ONNX Runtime's own kernel events of the measured runs, self time by hand, by type
    by_type, share_by_type = self_time_by_type(folder, data["by_name"])
    grand = sum(by_type.values())
    table = {r["OP Type"]: r for r in read_csv(folder / "op_statistic.csv")}
    for op_type, own in by_type.items():
        assert float(table[op_type]["Ratio(%)"]) == pytest.approx(own / grand * 100, abs=2e-3)
        assert float(table[op_type]["Self Time(us)"]) == pytest.approx(own, abs=2e-3)
        assert share_by_type[op_type] == pytest.approx(own / grand * 100, abs=1e-6)
    assert sum(float(r["Ratio(%)"]) for r in table.values()) == pytest.approx(100, abs=0.01)
    assert float(table["If"]["Ratio(%)"]) < float(table["If"]["Total Time(us)"]) / grand * 100  # nested left out


def test_advisor_op_times_are_self_times_that_fit_in_the_step(if_profile):
    _, folder = if_profile
    report = run_job(advise(profile=folder, msprof=False))
    perf = report.performance
    assert perf["device_ms"] <= perf["step_ms"] + 1e-9
    summary = json.loads((folder / "studio_profile.json").read_text())
    assert perf["step_ms"] == pytest.approx(summary["latency_ms"]["p50"], abs=1e-4)
    # independent: the If's own time per iteration (its kernels' minus the branch's kernels inside)
    raw = op_self_time_per_run(folder)
    scale = min(1.0, perf["step_ms"] * 1000 / sum(raw.values()))
    shares = {row["name"]: row["share"] for row in perf["top_ops"]}
    for row in perf["top_ops"]:
        assert row["ms"] * 1000 == pytest.approx(raw[row["name"]] * scale, abs=0.06)  # ms kept to 4 decimals
    assert shares["branch"] == pytest.approx(raw["branch"] / sum(raw.values()), abs=1e-4)


def test_a_stall_is_an_outlier_shown_apart_never_the_top_op(if_profile, tmp_path):
    _, folder = if_profile
    stalled = stalled_copy(folder, tmp_path / "stalled", "sum", 15000.0)  # a 3 us op, once 15 ms
    clean = run_job(advise(profile=folder, msprof=False))
    hit = run_job(advise(profile=stalled, msprof=False))
    assert hit.performance["top_ops"][0]["name"] == clean.performance["top_ops"][0]["name"] != "sum"
    assert [f.id for f in hit.findings] == [f.id for f in clean.findings]
    # The stalled run counts as the op's median run: its own time is unknowable, so the op's time
    # per step may move by (median - that run's clean time) / runs, and the shares with it; never more.
    runs = [float(r["Task Duration(us)"]) for r in read_csv(folder / "op_summary.csv") if r["Op Name"] == "sum"]
    slack_ms = (max(runs) - min(runs)) / len(runs) / 1000 + 1e-4  # + the 4 decimals ms are kept to
    stalled_op = {r["name"]: r for r in hit.performance["top_ops"]}.get("sum")
    clean_op = {r["name"]: r for r in clean.performance["top_ops"]}.get("sum")
    if stalled_op is not None and clean_op is not None:
        assert stalled_op["ms"] == pytest.approx(clean_op["ms"], abs=slack_ms)  # its typical run, not the stall
    device = clean.performance["device_ms"]
    top_share = hit.performance["top_ops"][0]["share"]
    assert top_share == pytest.approx(clean.performance["top_ops"][0]["share"], abs=top_share * slack_ms / device + 1e-4)
    assert _without_numbers(hit.performance["verdict"]) == _without_numbers(clean.performance["verdict"])
    outliers = hit.performance["outliers"]
    assert outliers[0]["name"] == "sum" and outliers[0]["runs"] == 1 and outliers[0]["ms"] > 15
    assert any("sum" in note and "outlier" in note for note in hit.notes)
    assert hit.performance["device_ms"] <= hit.performance["step_ms"] + 1e-9


def _without_numbers(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?", "N", text)


def test_profile_compare_of_one_model_profiled_twice_is_no_significant_change(chain, tmp_path):
    from studio.tools.bench.ab_run import ab_models
    from studio.tools.profiler.compare import compare, rerun_plan

    for name in ("a", "b"):
        run_job(profile_model(chain, tmp_path / name, iterations=30, warmup=3))
    base, new = (run_job(open_profile(tmp_path / n, use_cache=False)) for n in ("a", "b"))
    result = compare(base, new)
    assert result.change is not None and result.samples_how == "runs timed with the profiler off"
    assert result.change.base_n == result.change.new_n == 30
    plan = rerun_plan(base, new)
    assert not isinstance(plan, str), plan
    change = run_job(ab_models(*plan, budget_s=4.0))
    result.judge_rerun(plan, change)
    assert result.change is change and "timed again here, interleaved" in result.samples_how
    print(change.describe())
    assert change.rounds >= 3 and change.stopped
    assert not change.significant or abs(change.change_pct) < 3, change.describe()
    data = to_json(result)
    assert data["latency_change"]["verdict"] == change.verdict and "ratio_low" in data["latency_change"]
    assert "latency: " in str(result) and "CI" in str(result)


def test_interleaved_ab_finds_a_fourfold_model_slower(chain, tmp_path):
    from studio.tools.bench.ab_run import Side, ab_models

    longer = tiny_chain(tmp_path / "longer.onnx", ops=320)
    change = run_job(ab_models(Side(chain), Side(longer), budget_s=3.0))
    # independent: a plain loop alternating both models
    feeds = {"x": np.random.default_rng(0).random((1, 16), dtype=np.float64).astype(np.float32)}
    ratio = plain_ab_ratio(chain, longer, feeds)
    print(f"80 vs 320 tiny ops: {change.describe()}; plain alternating loop ratio {ratio:.3f}")
    assert change.significant and change.verdict == "slower" and change.low > 2.0
    assert change.low * 0.9 <= ratio <= change.high * 1.1


def test_closed_loop_judges_the_speed_up_with_an_interleaved_ab(tmp_path):
    from studio.tools.advisor.loop import closed_loop
    from advisor_helpers import mish_cnn

    model = mish_cnn(tmp_path / "m.onnx")
    result = run_job(closed_loop(model, tmp_path / "fixed.onnx", ["ConvBnFusion"], work=tmp_path / "work",
                                 iterations=10, warmup=2, budget_s=4.0))
    change = result.change
    assert change is not None and change.rounds >= 3
    assert result.speedup == pytest.approx(change.speedup)
    data = to_json(result)
    assert data["change"]["verdict"] in ("faster", "slower", "no significant change")
    assert "CI" in str(result) and data["change"]["stopped"]
    # independent: the two models alternated in a plain loop; their ratio lies in (about) the interval.
    # It runs after the A/B, so a burst of load in between can move it alone: up to three tries, each
    # able to agree (a biased A/B misses every time).
    x = np.random.default_rng(0).random((1, 3, 96, 96), dtype=np.float64).astype(np.float32)
    low, high = change.low * 0.9, change.high * 1.1
    for _ in range(3):
        ratio = float(np.median([plain_ab_ratio(model, tmp_path / "fixed.onnx", {"input": x}, pairs=100)
                                 for _ in range(3)]))
        if low <= ratio <= high:
            break
    print(f"closed loop: {change.describe()}; plain alternating loop ratio {ratio:.3f}")
    assert low <= ratio <= high


def _iterations_trace(path, ops: dict[str, list[float]]):
    """A Chrome trace of ``iteration N`` ranges, each running the ops one after the other (durations in us)."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Runtime"}}]
    t = 0.0
    for i in range(len(next(iter(ops.values())))):
        durations = {name: round(values[i], 3) for name, values in ops.items()}  # whole ns, as the reader keeps
        events.append({"ph": "X", "name": f"iteration {i + 1}", "pid": 1, "tid": 1, "ts": t,
                       "dur": sum(durations.values()) + 2})
        at = t + 1
        for name, dur in durations.items():
            events.append({"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": at, "dur": dur})
            at += dur
        t = at + 10
    path.write_text(json.dumps(events))
    return path


def test_per_op_changes_come_with_an_interval_from_the_iterations(tmp_path):
    from scipy import stats as sps

    from studio.tools.profiler.compare import compare, row_judgement

    rng = np.random.default_rng(4)
    steady = {f"op_{k}": 10.0 + 3 * k for k in range(10)}  # unchanged ops: the spread between two profiles
    base_ops = {name: list(rng.normal(mean, 0.03 * mean, 12)) for name, mean in steady.items()}
    new_ops = {name: list(rng.normal(mean, 0.03 * mean, 12)) for name, mean in steady.items()}
    base_ops["op_a"], new_ops["op_a"] = list(rng.normal(10, 0.3, 12)), list(rng.normal(10, 0.3, 12))
    base_ops["op_a"][5] = 1000.0  # one stall: the mean per iteration grows tenfold, the median does not move
    base_ops["op_b"], new_ops["op_b"] = list(rng.normal(20, 0.5, 12)), list(rng.normal(30, 0.5, 12))
    base, new = _iterations_trace(tmp_path / "base.json", base_ops), _iterations_trace(tmp_path / "new.json", new_ops)
    result = compare(run_job(open_profile(base, use_cache=False)), run_job(open_profile(new, use_cache=False)))
    rows = {r.name: r for r in result.ops}
    assert rows["op_a"].delta_pct < -80 and rows["op_a"].significant is False  # the stall, not a change
    assert "no significant change" in row_judgement(rows["op_a"])
    assert rows["op_b"].significant and rows["op_b"].verdict == "slower"
    assert rows["op_b"].delta_pct_low < 50 < rows["op_b"].delta_pct_high  # beyond the common change (~0 %)
    assert [n for n, r in rows.items() if r.significant] == ["op_b"]
    # independent: op_b's p-value from its medians, their order-statistic intervals (ranks 3 and 10 of 12),
    # the rows' spread (1.4826 x MAD, at least 3 %) and Student's t with 5 degrees of freedom
    logs, var = {}, {}
    for name in rows:
        a, b = np.sort(json_durations(base, name)), np.sort(json_durations(new, name))
        logs[name] = np.log(np.median(b) / np.median(a))
        var[name] = sum(((x[9] - x[2]) / (2 * sps.norm.ppf(0.975)) / np.median(x)) ** 2 for x in (a, b))
    d = np.array(list(logs.values()))
    center, tau = np.median(d), max(np.log(1.03), sps.median_abs_deviation(d, scale="normal"))
    p = 2 * sps.t.sf(abs(logs["op_b"] - center) / np.sqrt(var["op_b"] + tau ** 2), 5)
    assert rows["op_b"].p_value == pytest.approx(p, rel=1e-6)
    assert "95 % CI" in str(result) and "false discovery rate" in str(result)


def json_durations(path, name: str) -> list[float]:
    return [e["dur"] / 1000 for e in json.loads(path.read_text()) if e.get("name") == name]
