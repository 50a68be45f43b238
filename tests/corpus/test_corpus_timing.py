"""Judgments made from timings, on real models of the corpus: a voice-activity detector (silero_vad:
sub-millisecond, 25 nested If subgraphs) and small classifiers. Each number is checked against a
computation of its own: a plain onnxruntime loop, ONNX Runtime's own profile events, an
alternating loop of two models."""

from __future__ import annotations

import json

import numpy as np
import pytest
from corpus_helpers import ok_or_refused, studio
from ort_peer import plain_ab_ratio, plain_ort_feeds_ms

from studio.tools.corpus import manifest
from studio.tools.corpus.fetch import model_path
from studio.tools.corpus.inputs import make_inputs, write_inputs
from timing_helpers import (
    measured_kernels,
    op_self_time_per_run,
    read_csv,
    self_time_by_type,
    stalled_copy,
)

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def _model(corpus_root, tmp_path_factory, model_id: str):
    entry = manifest.entry(model_id)
    path = model_path(entry, corpus_root)
    arrays = make_inputs(entry, path)
    files = write_inputs(arrays, tmp_path_factory.mktemp(f"{model_id}_inputs"))
    return path, arrays, [f"--input={name}={file}" for name, file in files.items()]


@pytest.fixture(scope="module")
def vad(corpus_root, tmp_path_factory):
    """silero_vad, its real inputs (16 kHz rate, zero state) and one profile of 30 iterations."""
    path, arrays, inputs = _model(corpus_root, tmp_path_factory, "silero_vad")
    folder = tmp_path_factory.mktemp("vad") / "profile"
    run = json.loads(ok_or_refused(studio("profile", "run", path, "-o", folder, "--iterations", "30", "--warmup",
                                          "3", "--json", *inputs)).stdout)
    return path, arrays, inputs, folder, run


def test_vad_latency_is_that_of_bare_runs_in_every_report(vad):
    path, arrays, _, folder, run = vad
    plain = plain_ort_feeds_ms(path, arrays, 500)
    bare = run["latency_ms"]["p50"]
    print(f"silero_vad: plain onnxruntime loop p50 {plain:.4f} ms; studio profile run p50 {bare:.4f} ms")
    assert 0.5 < bare / plain < 2.0  # the profiled runs are several times the plain loop
    profiled = run["profiled_latency_ms"]["p50"]
    print(f"silero_vad: profiled runs p50 {profiled:.4f} ms, overhead {run['profiler_overhead']:+.0%}")
    assert profiled > 2 * bare
    # the overhead: alternating rounds of profiled runs and runs of a session without the profiler
    rounds = [np.median(on) / np.median(off) for on, off in zip(run["overhead_on_ms"], run["overhead_off_ms"])]
    assert len(rounds) == 5 and run["profiler_overhead"] == pytest.approx(np.exp(np.mean(np.log(rounds))) - 1)
    assert run["overhead_change"]["significant"] and run["overhead_change"]["ratio_low"] > 2
    saved = json.loads((folder / "studio_profile.json").read_text())
    assert saved["latency_ms"] == run["latency_ms"] and saved["profiled_latency_ms"] == run["profiled_latency_ms"]
    assert "profiler overhead" in saved["facts"]
    report = json.loads(ok_or_refused(studio("advise", "--profile", folder, "--no-msprof-analyze", "--json")).stdout)
    perf = report["performance"]
    assert perf["step_ms"] == pytest.approx(bare, abs=1e-4)
    assert perf["device_ms"] <= perf["step_ms"] + 1e-9  # op time never exceeds the step


def test_vad_op_times_are_self_times_and_a_stall_stays_apart(vad, tmp_path):
    *_, folder, run = vad
    report = json.loads(ok_or_refused(studio("advise", "--profile", folder, "--no-msprof-analyze", "--json")).stdout)
    perf = report["performance"]
    # independent: ONNX Runtime's own kernel events of the 30 measured runs, self time by hand
    raw = op_self_time_per_run(folder)
    nested_counted_twice = sum(k["dur"] for k in measured_kernels(folder)) / 30
    print(f"silero_vad op time per run: kernels summed {nested_counted_twice:.1f} us (If bodies twice), "
          f"self times {sum(raw.values()):.1f} us; advisor: {perf['device_ms'] * 1000:.1f} us of op time in a "
          f"{perf['step_ms'] * 1000:.1f} us step")
    assert perf["device_ms"] <= perf["step_ms"] + 1e-9
    assert sum(raw.values()) < nested_counted_twice
    scale = min(1.0, perf["step_ms"] * 1000 / sum(raw.values()))
    for row in perf["top_ops"]:
        assert row["ms"] * 1000 == pytest.approx(raw[row["name"]] * scale, abs=0.06)
    # a 15 ms stall of one Shape run (median a few us) is an outlier, not the top op. The profile
    # was taken on a real, possibly busy machine: its own stalls are outliers too, so the injected
    # one is made longer than all of theirs together (it must still come first, and alone be new).
    rows = read_csv(folder / "op_summary.csv")
    shape = next(r["Op Name"] for r in rows if r["OP Type"] == "Shape")
    own_stalls_us = sum(o["ms"] for o in perf.get("outliers", [])) * 1000
    stalled = stalled_copy(folder, tmp_path / "stalled", shape, max(15000.0, 2 * own_stalls_us))
    hit = json.loads(ok_or_refused(studio("advise", "--profile", stalled, "--no-msprof-analyze", "--json")).stdout)
    assert hit["performance"]["top_ops"][0]["name"] == perf["top_ops"][0]["name"] != shape
    assert hit["performance"]["outliers"][0]["name"] == shape
    assert [f["id"] for f in hit["findings"]] == [f["id"] for f in report["findings"]]
    assert hit["performance"]["device_ms"] <= hit["performance"]["step_ms"] + 1e-9


@pytest.mark.parametrize("model_id", ["resnet50_light", "silero_vad"])
def test_statistics_leave_the_warmups_out_and_agree_with_op_statistic(corpus_root, tmp_path_factory, model_id):
    path, _, inputs = _model(corpus_root, tmp_path_factory, model_id)
    folder = tmp_path_factory.mktemp(model_id) / "profile"
    ok_or_refused(studio("profile", "run", path, "-o", folder, "--iterations", "5", "--warmup", "3", *inputs))
    data = json.loads(ok_or_refused(studio("profile", "stats", folder, "--json", "--no-cache")).stdout)
    counted = {r["count"] for r in data["by_name"]}
    assert counted == {5}, counted  # not 8: the warm-ups are left out
    assert data["measured"]["warmup_left_out"]
    every = json.loads(ok_or_refused(studio("profile", "stats", folder, "--json", "--no-cache",
                                            "--include-warmup")).stdout)
    assert {r["count"] for r in every["by_name"]} == {8}
    top_all = max(every["by_name"], key=lambda r: r["share"])
    top = max(data["by_name"], key=lambda r: r["share"])
    print(f"{model_id}: top op with warm-ups {top_all['name']} {top_all['share']:.1%}; over the measured runs "
          f"{top['name']} {top['share']:.1%}")
    # independent: ONNX Runtime's kernel events of the measured runs, self time by hand, by op type
    by_type, share_by_type = self_time_by_type(folder, data["by_name"])
    grand = sum(by_type.values())
    table = {r["OP Type"]: float(r["Ratio(%)"]) for r in read_csv(folder / "op_statistic.csv")}
    for op_type, own in by_type.items():
        assert table[op_type] == pytest.approx(own / grand * 100, abs=2e-3)
        assert share_by_type[op_type] == pytest.approx(table[op_type], abs=2e-3)


def test_vad_profiled_twice_compares_as_no_significant_change(vad, tmp_path):
    path, _, inputs, first, _ = vad
    second = tmp_path / "again"
    ok_or_refused(studio("profile", "run", path, "-o", second, "--iterations", "30", "--warmup", "3", *inputs))
    # The same model on both sides. A 95 % interval calls a change now and then by construction,
    # and a burst of load beside the run (the other test worker) moved one try to "faster -5.7 %
    # (-10.2 % to -0.9 %)": up to three tries, as the closed loop's plain-loop cross-check has.
    for _try in range(3):
        rerun = json.loads(ok_or_refused(studio("profile", "compare", first, second, "--json")).stdout)
        change = rerun["latency_change"]
        print(f"silero_vad profiled twice: profiled iterations {rerun['base_per_iter_us']:.1f} -> "
              f"{rerun['new_per_iter_us']:.1f} us of op time; re-timed interleaved: {change['verdict']} "
              f"{change['change_pct']:+.1f} % ({change['change_pct_low']:+.1f} % to {change['change_pct_high']:+.1f} %)")
        assert rerun["latency_samples"] == "both models timed again here, interleaved, profiler off"
        assert change["rounds"] >= 3 and change["stopped"]
        if change["verdict"] == "no significant change":
            break
    assert change["verdict"] == "no significant change"
    samples = json.loads(ok_or_refused(studio("profile", "compare", first, second, "--json", "--no-rerun")).stdout)
    assert samples["latency_samples"] == "runs timed with the profiler off"
    assert samples["latency_change"]["caveat"] and samples["latency_change"]["base_n"] == 30


def test_apply_reports_the_speed_up_an_interleaved_ab_measures(corpus_root, tmp_path_factory):
    path, arrays, inputs = _model(corpus_root, tmp_path_factory, "ppocr_cls")
    work = tmp_path_factory.mktemp("apply")
    ok_or_refused(studio("profile", "run", path, "-o", work / "profile", "--iterations", "10", "--warmup", "2",
                         *inputs))
    fixed = work / "fixed.onnx"
    report = json.loads(ok_or_refused(studio("advise", "--profile", work / "profile", "--apply", "-o", fixed,
                                             "--no-msprof-analyze", "--json")).stdout)
    loop = report["loop"]
    change = loop["change"]
    assert change["rounds"] >= 3 and change["verdict"] in ("faster", "slower", "no significant change")
    assert loop["speedup"] == pytest.approx(change["speedup"])
    # independent: both alternated in a plain loop (the median of three: a single one moves ±10 % with
    # the load here). It runs after the A/B, so a burst of load in between can move it alone: up to
    # three tries, each able to agree. A real disagreement (a biased A/B) misses every time.
    low, high = change["ratio_low"] * 0.9, change["ratio_high"] * 1.1
    tries = []
    for _ in range(3):
        tries.append(float(np.median([plain_ab_ratio(path, fixed, arrays, pairs=200) for _ in range(3)])))
        if low <= tries[-1] <= high:
            break
    ratio = tries[-1]
    print(f"ppocr_cls {', '.join(loop['applied']['fixes'])}: profiles p50 {loop['before_ms']['p50']:.3f} -> "
          f"{loop['after_ms']['p50']:.3f} ms; A/B {change['verdict']} x{change['speedup']:.3f} "
          f"(x{change['speedup_low']:.3f} to x{change['speedup_high']:.3f}); plain alternating ratio {ratio:.3f}")
    assert low <= ratio <= high, f"plain alternating ratios {tries} outside the A/B's interval"
