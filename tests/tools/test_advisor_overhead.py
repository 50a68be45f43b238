"""The advisor states the profiler's overhead only as the profile measured it, with repeats."""

from __future__ import annotations

from types import SimpleNamespace

from studio.tools.advisor import optable, perf_report


def _report(local: dict) -> dict:
    table = optable.OpTable()
    optable._step_time(SimpleNamespace(tables={}), table, local)
    ctx = SimpleNamespace(ops=table, step_ms=table.step_ms, roofline=[], bench_path=None, model=None)
    return perf_report.performance(ctx, None, [])


def test_one_pair_of_phases_gives_no_overhead_and_repeats_give_theirs():
    # One profiled phase 5.7x the bare one on a loaded machine: a ratio of two samples, not stated.
    single = _report({"latency_ms": {"p50": 1.0}, "profiled_latency_ms": {"p50": 5.7}, "iterations": 10})
    assert "profiler_overhead" not in single and single["profiled_step_ms"] == 5.7
    change = {"ratio": 1.14, "low": 0.71, "high": 1.83, "verdict": "no significant change", "rounds": 5}
    measured = _report({"latency_ms": {"p50": 1.0}, "profiled_latency_ms": {"p50": 5.7}, "iterations": 10,
                        "profiler_overhead": 0.14, "profiler_overhead_change": change})
    assert measured["profiler_overhead"] == 0.14 and measured["profiler_overhead_change"] == change
