"""Is B faster than A? Timing comparisons with a confidence interval, in one place.

Every comparison of two timings in Studio (``profile compare``, ``bench --compare-with``, the
profiler's Compare tab, the advisor's closed loop) goes through here, so they all answer the same
way: the change is the **ratio of the medians** (new / base) with a confidence interval, and a
change whose interval holds 1 (0 %) is reported as "no significant change".

Two ways to get the samples:

* :func:`interleaved` runs both sides itself, in short rounds (base then new, new then base,
  ...), so both see the same load on a shared machine: each round gives one ratio of medians,
  which a slow stretch of the machine moves little; the change is their geometric mean with a
  t-interval. It runs rounds until the interval is tight enough (``precision``) or the time
  budget ends, and says which.
* :func:`compare_samples` takes the per-iteration samples of two separate runs (two saved
  profiles) and bootstraps the ratio of their medians. Their interval covers the spread inside
  each run only, not a change of the machine's load between the runs; the result says so.

Pure numpy, no Qt, no runtime: the callers time their own models.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json

CONFIDENCE = 0.95
RESAMPLES = 2000
PRECISION = 0.02  # stop interleaving once the interval's half width is within ±2 % of the ratio
BUDGET_S = 10.0
MIN_ROUNDS = 8
MAX_ROUNDS = 400
ROUND_S = 0.02  # a round runs both sides for about this long: short against the machine's changes of load
# Two ONNX Runtime sessions of one model, timed interleaved, differ by up to ~2.5 % on this kind of
# machine (where each lands in memory): a systematic spread no number of rounds removes. Intervals
# of two sessions are widened by it, so a change smaller than that is never called significant.
SESSION_FLOOR = 0.03
SEPARATE = "per-iteration samples of two separate runs"
SEPARATE_CAVEAT = ("the interval covers the spread inside each run, not a change of the machine's load "
                   "between the two runs")


@dataclass
class Change:
    """``new`` against ``base``: the ratio of their medians with a confidence interval.

    ``ratio`` < 1 means ``new`` is faster. ``low`` and ``high`` bound the ratio at
    ``confidence``. Truthy when the change is significant (the interval does not hold 1)."""

    base_ms: float
    new_ms: float
    ratio: float
    low: float
    high: float
    base_n: int
    new_n: int
    method: str
    stopped: str = "all samples given"
    rounds: int = 0
    seconds: float = 0.0
    confidence: float = CONFIDENCE
    caveat: str = ""
    floor: float = 0.0  # systematic spread added on each side of the interval (relative)
    statistical_half: float = 0.0  # half width (log) of the interval before the floor

    # studio.core.serial: the ``--json`` keys (``serial.to_json``; ``serial.from_json`` reads them back)
    __json_rename__ = {"base_ms": "base_median_ms", "new_ms": "new_median_ms", "low": "ratio_low",
                       "high": "ratio_high"}
    __json_round__ = {"seconds": 3}
    __json_extra__ = ("verdict", "significant", "change_pct", "change_pct_low", "change_pct_high", "speedup",
                      "speedup_low", "speedup_high")

    @property
    def significant(self) -> bool:
        """True when the interval does not hold a ratio of 1 (no change)."""
        return not (self.low <= 1.0 <= self.high)

    def __bool__(self) -> bool:
        return self.significant

    @property
    def change_pct(self) -> float:
        """Change of the median in percent (negative = faster)."""
        return (self.ratio - 1.0) * 100.0

    @property
    def speedup(self) -> float:
        """base / new (> 1: new is faster)."""
        return 1.0 / self.ratio if self.ratio else math.inf

    @property
    def speedup_interval(self) -> tuple[float, float]:
        """The interval of :attr:`speedup`."""
        return (1.0 / self.high if self.high else math.inf, 1.0 / self.low if self.low else math.inf)

    @property
    def verdict(self) -> str:
        """``faster``, ``slower`` or ``no significant change``."""
        if not self.significant:
            return "no significant change"
        return "faster" if self.ratio < 1.0 else "slower"

    def describe(self) -> str:
        """One line: the verdict, the change with its interval, the medians and how they were measured."""
        level = f"{self.confidence:.0%}"
        lo, hi = (self.low - 1.0) * 100.0, (self.high - 1.0) * 100.0
        change = f"median {self.change_pct:+.1f} % ({level} CI {lo:+.1f} % to {hi:+.1f} %)"
        if self.significant:
            s_lo, s_hi = self.speedup_interval
            head = f"{self.verdict}: {change}, speed-up x{self.speedup:.2f} (x{s_lo:.2f} to x{s_hi:.2f})"
        else:
            head = f"no significant change: {change}"
        how = (f"{self.base_ms:.4g} ms -> {self.new_ms:.4g} ms, medians of {self.base_n} / {self.new_n} runs, "
               f"{self.method}")
        if self.rounds:
            how += f" ({self.rounds} rounds, {self.seconds:.1f} s; stopped: {self.stopped})"
        if self.floor:
            how += f"; the interval includes ±{self.floor:.0%} for two separate runtime sessions"
        return f"{head}; {how}" + (f"; {self.caveat}" if self.caveat else "")

    @property
    def change_pct_low(self) -> float:
        """The lower bound of :attr:`change_pct`."""
        return (self.low - 1.0) * 100.0

    @property
    def change_pct_high(self) -> float:
        """The upper bound of :attr:`change_pct`."""
        return (self.high - 1.0) * 100.0

    @property
    def speedup_low(self) -> float:
        return self.speedup_interval[0]

    @property
    def speedup_high(self) -> float:
        return self.speedup_interval[1]


def compare_samples(base: Sequence[float], new: Sequence[float], method: str = SEPARATE,
                    caveat: str = SEPARATE_CAVEAT, confidence: float = CONFIDENCE,
                    resamples: int = RESAMPLES, seed: int = 0) -> Change:
    """The change of ``new`` against ``base`` from independent samples (ms): each side is
    resampled on its own (percentile bootstrap of the ratio of medians)."""
    a, b = _clean(base, "base"), _clean(new, "new")
    ratio, low, high = compare_columns(a[:, None], b[:, None], confidence, resamples, seed)
    return Change(float(np.median(a)), float(np.median(b)), float(ratio[0]), float(low[0]), float(high[0]),
                  int(a.size), int(b.size), method, confidence=confidence, caveat=caveat)


def compare_columns(base: np.ndarray, new: np.ndarray, confidence: float = CONFIDENCE, resamples: int = 1000,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`compare_samples` for many quantities at once: column ``j`` of ``base`` (runs x
    quantities) against column ``j`` of ``new`` (e.g. each op's time per iteration in two
    profiles). Returns the ratios of medians and their interval bounds (NaN where a median is 0)."""
    a, b = np.asarray(base, dtype=np.float64), np.asarray(new, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or a.shape[0] < 2 or b.shape[0] < 2:
        raise ValueError("compare_columns needs two (runs >= 2, quantities) arrays with the same quantities")
    rng = np.random.default_rng(seed)
    pick_a = rng.integers(0, a.shape[0], (resamples, a.shape[0]))
    pick_b = rng.integers(0, b.shape[0], (resamples, b.shape[0]))
    tail = (1.0 - confidence) / 2.0 * 100.0
    ratio = np.full(a.shape[1], np.nan)
    low, high = ratio.copy(), ratio.copy()
    step = max(1, 4_000_000 // (resamples * max(a.shape[0], b.shape[0])))  # columns per chunk: bounded memory
    with np.errstate(divide="ignore", invalid="ignore"):
        for c0 in range(0, a.shape[1], step):
            cols = slice(c0, c0 + step)
            ma, mb = np.median(a[pick_a, cols], axis=1), np.median(b[pick_b, cols], axis=1)
            boot = mb / ma
            ok = np.isfinite(boot).all(axis=0)
            lo, hi = np.percentile(np.where(np.isfinite(boot), boot, 1.0), [tail, 100.0 - tail], axis=0)
            r = np.median(b[:, cols], axis=0) / np.median(a[:, cols], axis=0)
            ok &= np.isfinite(r) & (r > 0)
            ratio[cols] = np.where(ok, r, np.nan)
            low[cols], high[cols] = np.where(ok, lo, np.nan), np.where(ok, hi, np.nan)
    return ratio, low, high


def compare_rounds(base_rounds: Sequence[Sequence[float]], new_rounds: Sequence[Sequence[float]],
                   confidence: float = CONFIDENCE, floor: float = 0.0, method: str = "interleaved A/B") -> Change:
    """The change from interleaved rounds: round ``i`` of both sides ran back to back, so the ratio
    of their medians in that round is free of what the machine did meanwhile. The change is the
    geometric mean of the rounds' ratios, with a Student t-interval on their logs (right for few
    rounds, where a bootstrap's interval is too narrow), widened by ``floor`` on each side (a
    systematic spread the rounds cannot see, :data:`SESSION_FLOOR`)."""
    if len(base_rounds) != len(new_rounds) or len(base_rounds) < 2:
        raise ValueError("compare_rounds needs the same number (>= 2) of rounds on both sides")
    med_a = np.array([np.median(r) for r in base_rounds], dtype=np.float64)
    med_b = np.array([np.median(r) for r in new_rounds], dtype=np.float64)
    logs = np.log(med_b / med_a)
    half = t_quantile(0.5 + confidence / 2.0, logs.size - 1) * float(logs.std(ddof=1)) / math.sqrt(logs.size)
    mean = float(logs.mean())
    all_a = np.concatenate([np.asarray(r, dtype=np.float64) for r in base_rounds])
    all_b = np.concatenate([np.asarray(r, dtype=np.float64) for r in new_rounds])
    return Change(float(np.median(all_a)), float(np.median(all_b)), math.exp(mean),
                  math.exp(mean - half) / (1.0 + floor), math.exp(mean + half) * (1.0 + floor),
                  int(all_a.size), int(all_b.size), method, rounds=int(logs.size), confidence=confidence,
                  floor=floor, statistical_half=half)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (p > 0.5) of Student's t with ``df`` degrees of freedom (G. W. Hill,
    Algorithm 396, CACM 1970; within 1e-4 of the tables)."""
    two_tail = 2.0 * (1.0 - p)
    n = float(df)
    if df == 1:
        return math.cos(two_tail * math.pi / 2) / math.sin(two_tail * math.pi / 2)
    if df == 2:
        return math.sqrt(2.0 / (two_tail * (2.0 - two_tail)) - 2.0)
    a = 1.0 / (n - 0.5)
    b = 48.0 / (a * a)
    c = ((20700.0 * a / b - 98.0) * a - 16.0) * a + 96.36
    d = ((94.5 / (b + c) - 3.0) / b + 1.0) * math.sqrt(a * math.pi / 2.0) * n
    x = d * two_tail
    y = x ** (2.0 / n)
    if y > 0.05 + a:
        x = NormalDist().inv_cdf(two_tail * 0.5)
        y = x * x
        if n < 5:
            c += 0.3 * (n - 4.5) * (x + 0.6)
        c = (((0.05 * d * x - 5.0) * x - 7.0) * x - 2.0) * x + b + c
        y = (((((0.4 * y + 6.3) * y + 36.0) * y + 94.5) / c - y - 3.0) / b + 1.0) * x
        y = math.expm1(a * y * y)
    else:
        y = ((1.0 / (((n + 6.0) / (n * y) - 0.089 * d - 0.822) * (n + 2.0) * 3.0) + 0.5 / (n + 4.0)) * y - 1.0) \
            * (n + 1.0) / (n + 2.0) + 1.0 / y
    return math.sqrt(n * y)


def interleaved(run_base: Callable[[], float], run_new: Callable[[], float], budget_s: float = BUDGET_S,
                precision: float = PRECISION, min_rounds: int = MIN_ROUNDS, max_rounds: int = MAX_ROUNDS,
                warmup: int = 3, floor: float = 0.0, cancel: CancelToken | None = None,
                clock: Callable[[], float] = time.perf_counter) -> Generator[Progress, None, Change]:
    """Job: time both sides in alternating rounds until the interval is tight enough or the budget
    ends; each ``run_*`` runs its side once and returns its time in ms.

    Both sides first run ``warmup`` times (not counted); the number of runs per round is chosen so
    a round lasts about :data:`ROUND_S`. The order alternates (base-new, new-base) so neither side
    always runs second. At least three rounds run whatever the budget, at least ``min_rounds``
    when the budget allows. ``precision`` is checked on the statistical interval; ``floor``
    (e.g. :data:`SESSION_FLOOR`) then widens the interval reported."""
    started = clock()
    warm_a = [run_base() for _ in range(max(1, warmup))]
    warm_b = [run_new() for _ in range(max(1, warmup))]
    one = max(1e-3, min(warm_a) + min(warm_b)) / 1000.0  # seconds for one run of each side
    per_round = int(min(1000, max(1, ROUND_S // one)))
    base_rounds: list[list[float]] = []
    new_rounds: list[list[float]] = []
    stopped = f"{max_rounds} rounds run"
    while len(base_rounds) < max(3, max_rounds):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if len(base_rounds) % 2 == 0:
            base_times = [run_base() for _ in range(per_round)]
            new_times = [run_new() for _ in range(per_round)]
        else:
            new_times = [run_new() for _ in range(per_round)]
            base_times = [run_base() for _ in range(per_round)]
        base_rounds.append(base_times)
        new_rounds.append(new_times)
        elapsed = clock() - started
        rounds = len(base_rounds)
        if rounds >= 3:
            change = compare_rounds(base_rounds, new_rounds)
            half = math.expm1(change.statistical_half)
            yield Progress(min(0.99, elapsed / budget_s), f"round {rounds}: median {change.change_pct:+.1f} %, "
                           f"interval ±{half:.1%}")
            if rounds >= min_rounds and half <= precision:
                stopped = f"statistical interval within ±{precision:.0%}"
                break
            if elapsed >= budget_s:
                stopped = f"time budget of {budget_s:g} s ended (interval ±{half:.1%})"
                break
        else:
            yield Progress(min(0.99, elapsed / budget_s), f"round {rounds}")
    change = compare_rounds(base_rounds, new_rounds, floor=floor)
    change.stopped = stopped
    change.seconds = clock() - started
    change.method = f"interleaved A/B, {per_round} run(s) per side per round"
    return change


def _clean(samples: Sequence[float], side: str) -> np.ndarray:
    values = np.asarray([float(x) for x in samples], dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size < 2:
        raise ValueError(f"the {side} side needs at least 2 timing samples, it has {values.size}")
    return values


def _padded(rounds: Sequence[Sequence[float]]) -> np.ndarray:
    """Rounds as a (rounds, longest) array, NaN where a round ran fewer times."""
    width = max(len(r) for r in rounds)
    out = np.full((len(rounds), width), np.nan)
    for i, r in enumerate(rounds):
        out[i, :len(r)] = r
    return out


