"""The op rows of `profile compare`: two profiles of the same model flag no more rows than chance,
a real change of one op is still found, and too few iterations leave the rows unjudged. The
verdicts are recomputed here from ONNX Runtime's own kernel events with scipy."""

from __future__ import annotations

import json
import math
import shutil
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats as sps

from studio.core.jobs import run_job
from studio.tools.profiler.compare import compare
from studio.tools.profiler.loader import open_profile
from studio.tools.profiler.local_run import profile_model


def load(path):
    return run_job(open_profile(path, use_cache=False))


@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    """The demo SSD detector (35 op rows), profiled twice, nothing changed in between."""
    import onnx

    from studio.tools.demo.models import build_ssd_detector

    folder = tmp_path_factory.mktemp("reprofile")
    model = folder / "ssd_detector.onnx"
    onnx.save(build_ssd_detector(), model)
    for name in ("a", "b"):
        run_job(profile_model(model, folder / name, 20, 3))
    return folder


def per_iteration(folder) -> dict[str, np.ndarray]:
    """Each op's time in each measured iteration, from onnxruntime_profile.json (the last
    ``iterations`` model_run slices; an op's kernels in one iteration summed)."""
    events = json.loads((folder / "onnxruntime_profile.json").read_text())
    its = json.loads((folder / "studio_profile.json").read_text())["iterations"]
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])[-its:]
    times = defaultdict(lambda: np.zeros(its))
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            for i, r in enumerate(runs):
                if r["ts"] <= e["ts"] < r["ts"] + r["dur"]:
                    times[e["name"][:-len("_kernel_time")]][i] += e["dur"]
    return dict(times)


def lower_rank(n: int) -> int:
    """The 0-based rank of the lower bound of the median's 95 % interval: the largest k with
    P(Binomial(n, 1/2) <= k) <= 2.5 %."""
    k = int(sps.binom.ppf(0.025, n, 0.5))
    return k if sps.binom.cdf(k, n, 0.5) <= 0.025 else k - 1


def scipy_verdicts(base: dict[str, np.ndarray], new: dict[str, np.ndarray]) -> dict[str, float]:
    """The rule the output states, computed with scipy: medians with their order-statistic interval,
    the common change and the spread (1.4826 x MAD, at least 3 %) across the rows, Student's t with
    5 degrees of freedom; returns each row's p-value."""
    def median_sd(x):
        x = np.sort(x)
        m = np.median(x)
        lo, hi = x[lower_rank(x.size)], x[x.size - 1 - lower_rank(x.size)]
        return m, ((hi - lo) / (2 * sps.norm.ppf(0.975)) / m) ** 2 + 1 / 12 / m ** 2

    names, d, v = [], [], []
    for name in sorted(set(base) & set(new)):
        (ma, va), (mb, vb) = median_sd(base[name]), median_sd(new[name])
        names.append(name)
        d.append(math.log(mb / ma))
        v.append(va + vb)
    d, v = np.array(d), np.array(v)
    center = np.median(d)
    tau = max(math.log(1.03), sps.median_abs_deviation(d, scale="normal"))
    p = 2 * sps.t.sf(np.abs(d - center) / np.sqrt(v + tau ** 2), 5)
    return dict(zip(names, p))


def test_a_same_model_reprofile_flags_no_more_rows_than_chance_and_a_real_change_is_found(detector, tmp_path):
    base, new = load(detector / "a"), load(detector / "b")
    result = compare(base, new)
    both = [r for r in result.ops if r.only_in is None]
    flagged = [r.name for r in both if r.significant]
    print(f"same-model re-profile: {len(flagged)} of {len(both)} op rows flagged: {flagged}")
    assert len(both) >= 30
    assert len(flagged) <= 0.05 * len(both)
    # the verdicts are those of the stated rule, recomputed from ORT's raw events with scipy
    p = scipy_verdicts(per_iteration(detector / "a"), per_iteration(detector / "b"))
    assert set(p) == {r.name for r in both}
    for row in both:
        assert row.p_value == pytest.approx(p[row.name], rel=1e-4, abs=1e-9), row.name
    expected = set(np.array(sorted(p))[sps.false_discovery_control([p[n] for n in sorted(p)]) <= 0.05])
    assert set(flagged) == expected
    assert result.op_rule.judged == len(both) and result.op_rule.flagged == len(flagged)
    text = str(result)
    assert "false discovery rate (Benjamini-Hochberg)" in text and f"{len(flagged)} of {len(both)} rows" in text
    # the op time per iteration is a figure: a speed-up only where the latency's verdict says so
    op_line = next(line for line in text.splitlines() if line.startswith("op time per iteration"))
    assert ("(speed-up x" in op_line) == bool(result.speedup)
    if not result.change.significant:
        assert result.speedup is None and "not a speed-up" in op_line

    # a real change: one op ten times as fast in a copy of the baseline, judged against the baseline, is
    # flagged, alone (shortened, not lengthened: a longer kernel would overlap the next one and nest it). The
    # op: the steadiest of the larger half. Ten times, not three: with another test run beside this one its
    # per-iteration interval was half its median wide, and a 3x change then had p = 0.0016, above the
    # false-discovery threshold of one row in 35 (0.05 / 35)
    per = per_iteration(detector / "a")
    larger = sorted(both, key=lambda r: r.base_per_iter_us)[len(both) // 2:]
    target = min(larger, key=lambda r: np.subtract(*np.percentile(per[r.name], [75, 25])) / np.median(per[r.name])).name
    changed = tmp_path / "changed"
    shutil.copytree(detector / "a", changed)
    events = json.loads((changed / "trace_view.json").read_text())
    for e in events:
        if e.get("name") in (target, f"{target}_kernel_time") and e.get("ph") == "X":
            e["dur"] = round(e["dur"] / 10)
    (changed / "trace_view.json").write_text(json.dumps(events))
    rows = {r.name: r for r in compare(base, load(changed)).ops}
    assert rows[target].significant and rows[target].verdict == "faster"
    # its interval holds the -90 % made (up to the µs rounding of the shortened durations), and is narrower
    # than a halving
    assert rows[target].delta_pct_low < -88 and -92 < rows[target].delta_pct_high < -50
    assert [n for n, r in rows.items() if r.significant] == [target]


def test_too_few_iterations_leave_the_rows_unjudged(tmp_path):
    import onnx

    from studio.tools.demo.models import build_classifier

    model = tmp_path / "classifier.onnx"
    onnx.save(build_classifier(), model)
    for name in ("a", "b"):
        run_job(profile_model(model, tmp_path / name, 4, 1))
    result = compare(load(tmp_path / "a"), load(tmp_path / "b"))
    both = [r for r in result.ops if r.only_in is None]
    assert both and all(r.significant is None for r in both)
    assert all(r.verdict.startswith("unjudged: 4 / 4 iterations; each side needs 6") for r in both)
    assert "op rows unjudged: 4 / 4 iterations" in str(result)
    assert "unjudged: 4 / 4 iterations" in str(result).split("per op, per iteration")[1]


def test_the_t_tail_and_benjamini_hochberg_agree_with_scipy():
    from studio.tools.profiler.op_verdicts import benjamini_hochberg, median_interval, t_two_sided_p

    for df in (1, 2, 3, 4, 7, 30):
        for t in (0.0, 0.5, 2.0, 5.0, 40.0):
            assert t_two_sided_p(t, df) == pytest.approx(2 * sps.t.sf(t, df), rel=1e-9, abs=1e-12)
    p = np.random.default_rng(0).uniform(0, 0.02, 50) ** 2
    assert np.array_equal(benjamini_hochberg(p), sps.false_discovery_control(p) <= 0.05)
    x = np.arange(20.0)
    assert lower_rank(20) == 5 and median_interval(x)[1:] == (x[5], x[14])  # 95.9 % coverage
    assert median_interval(np.arange(6.0))[1:] == (0.0, 5.0)  # six: the extremes, 96.9 %
