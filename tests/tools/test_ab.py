"""The one statistics module of timing comparisons (studio/core/ab.py): ratio of medians with a bootstrap
interval, interleaved rounds against a machine whose load drifts, and when repeats stop."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core import ab
from studio.core.jobs import run_job
from studio.core.serial import from_json, to_json


def test_same_distribution_is_no_significant_change_and_a_shift_is_found():
    rng = np.random.default_rng(3)
    base = rng.lognormal(0.0, 0.05, 200)
    same = ab.compare_samples(base, rng.lognormal(0.0, 0.05, 200))
    assert not same.significant and not same and same.verdict == "no significant change"
    assert same.low < 1.0 < same.high
    assert "no significant change" in same.describe() and "CI" in same.describe()
    slower = ab.compare_samples(base, rng.lognormal(np.log(1.10), 0.05, 200))
    assert slower.significant and slower.verdict == "slower"
    assert slower.low < 1.10 < slower.high  # the true ratio lies in the interval
    assert slower.change_pct == pytest.approx((slower.new_ms / slower.base_ms - 1) * 100)
    faster = ab.compare_samples(base, base / 1.25)
    assert faster.verdict == "faster" and faster.speedup == pytest.approx(1.25)
    lo, hi = faster.speedup_interval
    assert lo <= 1.25 <= hi
    assert from_json(ab.Change, to_json(faster)) == faster


def test_the_interval_agrees_with_a_t_interval_on_the_log_ratio():
    # independent: for log-normal samples, the log of the ratio of medians is close to the difference
    # of the means of the logs, whose 95 % t-interval (Welch) should about match the bootstrap's
    rng = np.random.default_rng(11)
    a, b = rng.lognormal(0.0, 0.1, 400), rng.lognormal(0.03, 0.1, 400)
    change = ab.compare_samples(a, b)
    la, lb = np.log(a), np.log(b)
    diff = lb.mean() - la.mean()
    se = np.sqrt(la.var(ddof=1) / la.size + lb.var(ddof=1) / lb.size)
    t_lo, t_hi = np.exp(diff - 1.96 * se), np.exp(diff + 1.96 * se)
    # medians are noisier than means (efficiency ~0.64 for normal data): the bootstrap interval
    # is wider, by about 1/sqrt(0.64) = 1.25
    width, t_width = np.log(change.high / change.low), np.log(t_hi / t_lo)
    assert 1.0 < width / t_width < 1.7
    assert abs(np.log(change.ratio) - diff) < 0.5 * t_width


class DriftingMachine:
    """A fake clock and a machine whose load doubles the run time in some stretches: both sides run
    the same fixed work, so any change reported is the drift's."""

    def __init__(self, base_ms: float, new_ms: float, period: int = 150):
        self.now = 0.0
        self.calls = 0
        self.period = period
        self.base_ms, self.new_ms = base_ms, new_ms

    def load(self) -> float:
        return 2.0 if (self.calls // self.period) % 2 else 1.0

    def run(self, ms: float) -> float:
        self.calls += 1
        took = ms * self.load() * (1 + 0.01 * np.sin(self.calls))
        self.now += took / 1000.0
        return took

    def clock(self) -> float:
        return self.now


def test_interleaving_cancels_a_drifting_load_that_fools_a_sequential_comparison():
    machine = DriftingMachine(1.0, 1.0)
    # a sequential comparison (all of A, then all of B) lands A in a quiet stretch, B in a loaded one
    first = [machine.run(1.0) for _ in range(150)]
    second = [machine.run(1.0) for _ in range(150)]
    sequential = ab.compare_samples(first, second)
    assert sequential.significant and sequential.ratio == pytest.approx(2.0, rel=0.05)  # "2x slower"
    machine = DriftingMachine(1.0, 1.0)
    change = run_job(ab.interleaved(lambda: machine.run(1.0), lambda: machine.run(1.0), budget_s=5.0,
                                    clock=machine.clock))
    assert not change.significant, change.describe()
    assert change.rounds >= ab.MIN_ROUNDS and "interleaved" in change.method


def test_interleaving_finds_a_real_change_under_the_same_drift():
    machine = DriftingMachine(1.0, 0.8)
    change = run_job(ab.interleaved(lambda: machine.run(1.0), lambda: machine.run(0.8), budget_s=5.0,
                                    clock=machine.clock))
    assert change.significant and change.verdict == "faster"
    assert change.low <= 0.8 <= change.high < 0.9, change.describe()


def test_repeats_stop_at_the_precision_or_at_the_budget_and_say_which():
    quiet = DriftingMachine(1.0, 1.0, period=10**9)
    tight = run_job(ab.interleaved(lambda: quiet.run(1.0), lambda: quiet.run(1.0), budget_s=60.0,
                                   clock=quiet.clock))
    assert tight.stopped.startswith("statistical interval within") and tight.rounds == ab.MIN_ROUNDS
    rng = np.random.default_rng(0)
    noisy = DriftingMachine(1.0, 1.0, period=10**9)

    def jittery():
        noisy.now += 0.001
        return float(rng.lognormal(0.0, 0.8))

    loose = run_job(ab.interleaved(jittery, jittery, budget_s=2.0, clock=noisy.clock))
    assert loose.stopped.startswith("time budget of 2 s ended") and loose.seconds >= 2.0
    assert "stopped: time budget" in loose.describe()


def test_t_quantiles_match_the_tables():
    table = {1: 12.706, 2: 4.303, 3: 3.182, 5: 2.571, 10: 2.228, 30: 2.042, 120: 1.980}  # two-sided 95 %
    for df, value in table.items():
        assert ab.t_quantile(0.975, df) == pytest.approx(value, abs=1e-3)
    assert ab.t_quantile(0.995, 10) == pytest.approx(3.169, abs=1e-3)


def test_a_session_floor_widens_the_interval_so_a_small_change_is_not_called():
    machine = DriftingMachine(1.0, 0.98, period=10**9)
    plain = run_job(ab.interleaved(lambda: machine.run(1.0), lambda: machine.run(0.98), budget_s=5.0,
                                   clock=machine.clock))
    assert plain.significant  # 2 % faster, measured tightly
    machine = DriftingMachine(1.0, 0.98, period=10**9)
    floored = run_job(ab.interleaved(lambda: machine.run(1.0), lambda: machine.run(0.98), budget_s=5.0,
                                     clock=machine.clock, floor=ab.SESSION_FLOOR))
    assert not floored.significant and floored.ratio == pytest.approx(plain.ratio)
    assert floored.low == pytest.approx(plain.low / 1.03) and "separate runtime sessions" in floored.describe()


def test_too_few_samples_is_an_error_not_a_verdict():
    with pytest.raises(ValueError, match="at least 2"):
        ab.compare_samples([1.0], [1.0, 2.0])
