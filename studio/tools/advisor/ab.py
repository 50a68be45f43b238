"""Interleaved A/B timing: is the variant faster than the baseline, with a confidence interval?

Both sides run in alternating rounds (base-new, new-base, ...) so a shared machine's load weighs
on both alike. The change is the ratio of the medians (new / base); its interval comes from
resampling whole rounds (a cluster bootstrap), so a slow stretch of the machine moves both sides
together and not the ratio. A change whose interval holds 1 is "no significant change".

Rounds run until the interval's half width is within ``precision`` of the ratio (after
``min_rounds``) or the time budget ends. Pure numpy; the caller times its own runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass

import numpy as np

from studio.jobs import CancelToken, Progress

CONFIDENCE = 0.95
RESAMPLES = 2000
PRECISION = 0.02
BUDGET_S = 10.0
MIN_ROUNDS = 6
ROUND_S = 0.1  # a round runs each side about this long together


@dataclass
class Change:
    """``new`` against ``base``: medians (ms), their ratio and its interval at ``confidence``."""

    base_ms: float
    new_ms: float
    ratio: float
    low: float
    high: float
    rounds: int
    runs: int  # runs per side
    seconds: float
    stopped: str
    confidence: float = CONFIDENCE

    @property
    def significant(self) -> bool:
        """True when the interval does not hold a ratio of 1."""
        return not (self.low <= 1.0 <= self.high)

    @property
    def verdict(self) -> str:
        """``faster``, ``slower`` or ``no significant change``."""
        if not self.significant:
            return "no significant change"
        return "faster" if self.ratio < 1.0 else "slower"

    @property
    def change_pct(self) -> float:
        """Change of the median in percent (negative: the new side is faster)."""
        return (self.ratio - 1.0) * 100.0

    def describe(self) -> str:
        """One line: verdict, change with its interval, medians, how measured."""
        lo, hi = (self.low - 1.0) * 100.0, (self.high - 1.0) * 100.0
        return (f"{self.verdict}: median {self.change_pct:+.1f} % ({self.confidence:.0%} CI {lo:+.1f} % to "
                f"{hi:+.1f} %); {self.base_ms:.4g} ms -> {self.new_ms:.4g} ms, medians of {self.runs} runs each, "
                f"interleaved A/B in {self.rounds} rounds ({self.seconds:.1f} s; stopped: {self.stopped})")

    def as_dict(self) -> dict:
        """Plain data for ``--json``."""
        return {"verdict": self.verdict, "significant": self.significant, "ratio": self.ratio,
                "ratio_low": self.low, "ratio_high": self.high, "change_pct": self.change_pct,
                "base_median_ms": self.base_ms, "new_median_ms": self.new_ms, "rounds": self.rounds,
                "runs": self.runs, "seconds": round(self.seconds, 3), "stopped": self.stopped,
                "confidence": self.confidence, "method": "interleaved A/B, cluster bootstrap over rounds"}


def interleaved(run_base: Callable[[], float], run_new: Callable[[], float], budget_s: float = BUDGET_S,
                precision: float = PRECISION, min_rounds: int = MIN_ROUNDS, warmup: int = 2,
                cancel: CancelToken | None = None, seed: int = 0) -> Generator[Progress, None, Change]:
    """Job: time both sides in alternating rounds; each ``run_*`` runs once and returns ms."""
    started = time.perf_counter()
    one = (min(run_base() for _ in range(max(1, warmup))) + min(run_new() for _ in range(max(1, warmup)))) / 1000.0
    per_round = int(min(1000, max(1, ROUND_S // max(one, 1e-6))))
    base: list[list[float]] = []
    new: list[list[float]] = []
    stopped = ""
    while True:
        if cancel is not None:
            cancel.raise_if_cancelled()
        first, second = (base, new) if len(base) % 2 == 0 else (new, base)
        runs = (run_base, run_new) if first is base else (run_new, run_base)
        first.append([runs[0]() for _ in range(per_round)])
        second.append([runs[1]() for _ in range(per_round)])
        elapsed = time.perf_counter() - started
        if len(base) < 3:
            continue
        change = _change(base, new, seed)
        half = (change.high - change.low) / 2.0 / change.ratio
        yield Progress(min(0.99, elapsed / budget_s), f"A/B round {len(base)}: {change.change_pct:+.1f} % "
                                                      f"(±{half:.1%})")
        if len(base) >= min_rounds and half <= precision:
            stopped = f"interval within ±{precision:.0%}"
            break
        if elapsed >= budget_s and len(base) >= min(min_rounds, 3):
            stopped = f"time budget {budget_s:g} s (interval ±{half:.1%})"
            break
    change.stopped, change.seconds = stopped, time.perf_counter() - started
    return change


def _change(base: list[list[float]], new: list[list[float]], seed: int) -> Change:
    a, b = np.asarray(base, np.float64), np.asarray(new, np.float64)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, a.shape[0], (RESAMPLES, a.shape[0]))
    ratios = np.median(b[pick].reshape(RESAMPLES, -1), axis=1) / np.median(a[pick].reshape(RESAMPLES, -1), axis=1)
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    med_a, med_b = float(np.median(a)), float(np.median(b))
    return Change(med_a, med_b, med_b / med_a, float(low), float(high), a.shape[0], a.size, 0.0, "")
