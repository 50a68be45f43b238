"""Which op rows of a comparison of two profiles changed, with a test that holds its level.

The unit of replication is the **iteration**: an op's kernels within one iteration are summed (an
op launched 40 times per iteration gives one sample per iteration, not 40), and each op is
summarised by its **median** time per iteration, with the distribution-free interval of a median
(order statistics of a binomial(n, 1/2)), which holds its level for any distribution, ties and
stalls included. Durations recorded in whole microseconds add their rounding (resolution²/12).

Two separate profiles also differ from run to run by more than the iterations of one run show:
the machine's load drifts, the session lands elsewhere in memory, the cores are shared. A
same-model re-profile of a detector flagged 16 of 35 rows on iterations alone. That spread
cannot be seen inside one run, so it is measured across the rows themselves (an empirical null,
Efron 2004): the rows' log ratios of medians have a common change (their median: the load of one
run against the other's, which the latency verdict judges) and a spread ``tau`` around it (1.4826
x their median absolute deviation, at least :data:`studio.core.ab.SESSION_FLOOR`), added to each
row's own interval. That spread is heavier-tailed than a normal: over 52 same-model pairs of five
demo models (1,483 rows), |t| > 4 came in 1.2 % of the rows, where a normal gives 0.006 % and
Student's t with 5 degrees of freedom 1.0 %, so each row is tested against Student's t with
:data:`NULL_DF` degrees of freedom, and the rows are flagged at a 5 % false discovery rate
(Benjamini-Hochberg over every judged row): 15 of the 1,483 rows were flagged, against 743 by a bootstrap of the iterations alone. About one row in a hundred
differs between two sessions by far more than that: a U-Net's layout reorder took 22 us in every
iteration of one session and 175 us in every iteration of the next. Such a row can be flagged; the
false discovery rate allows for it.

Rows are "unjudged" rather than flagged when a side has fewer than :data:`MIN_ITERATIONS`
iterations (the median's interval needs six), when the op does not run in at least half of the
iterations of a side, or when fewer than :data:`MIN_ROWS` rows can be judged (too few to measure
the spread between the two profiles).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from studio.core.ab import SESSION_FLOOR, t_quantile

CONFIDENCE = 0.95
FDR = 0.05  # Benjamini-Hochberg's level over the judged rows
MIN_ITERATIONS = 6  # the smallest n whose order-statistic interval of the median reaches 95 % (96.9 %)
MIN_ROWS = 10  # rows needed to measure the spread between two profiles
NULL_DF = 5  # the heavier tail of the differences between two sessions of one model (see above)


@dataclass
class RowVerdict:
    """One row's change beyond the common one: the ratio of its median time per iteration (new /
    base) divided by the common ratio, its interval at :data:`CONFIDENCE`, and its p-value."""

    ratio: float
    low: float
    high: float
    p_value: float
    significant: bool = False


@dataclass
class RowRule:
    """How the op rows were judged, for the report: the rule, and what it found."""

    judged: int = 0
    flagged: int = 0
    rows: int = 0  # rows on both sides
    common_pct: float | None = None  # the change common to all judged rows (median of their ratios)
    spread_pct: float | None = None  # the spread between the two profiles measured across the rows (1 sd)
    unjudged: str = ""  # why no row, or some rows, could be judged
    fdr: float = FDR
    confidence: float = CONFIDENCE
    expected_false: float = 0.0  # at most this many of the flagged rows are false, on average
    unjudged_rows: dict[str, str] = field(default_factory=dict)  # row name -> why it was not judged

    __json_skip__ = ("unjudged_rows",)
    __json_extra__ = ("rule",)

    @property
    def rule(self) -> str:
        """The rule and its outcome in one sentence."""
        if not self.judged:
            return f"op rows unjudged: {self.unjudged}"
        text = (f"op rows: each op's median time per iteration (iterations are the unit), tested for a change "
                f"beyond the change common to all ops ({self.common_pct:+.1f} %, the latency's to judge) against "
                f"the spread between two separate profiles measured over the {self.judged} rows "
                f"(±{self.spread_pct:.1f} %); flagged at a {self.fdr * 100:g} % false discovery rate (Benjamini-Hochberg): "
                f"{self.flagged} of {self.judged} rows")
        if self.flagged:
            text += f", of which {self.expected_false:.1f} may be false on average"
        if self.unjudged:
            text += f"; {self.unjudged}"
        return text


def median_interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The median of ``samples`` and its distribution-free interval: order statistics ``l`` and
    ``n + 1 - l`` with ``P(Binomial(n, 1/2) < l) <= (1 - confidence) / 2``. Needs n >= 6 at 95 %."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = x.size
    tail = (1.0 - confidence) / 2.0
    cdf, lower = 0.0, 0
    for k in range(n):  # lower = the largest l with P(X <= l - 1) <= tail
        cdf += math.comb(n, k) / 2.0 ** n
        if cdf > tail:
            break
        lower = k + 1
    if lower < 1:
        raise ValueError(f"{n} samples are too few for a {confidence:.0%} interval of their median")
    return float(np.median(x)), float(x[lower - 1]), float(x[n - lower])


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom (Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(abs(t) / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2:  # odd
        term, total = c, 0.0
        if df > 1:
            total = c
            for k in range(3, df - 1, 2):
                term *= c * c * (k - 1) / k
                total += term
        inside = (2.0 / math.pi) * (theta + s * total)
    else:
        term, total = 1.0, 1.0
        for k in range(2, df - 1, 2):
            term *= c * c * (k - 1) / k
            total += term
        inside = s * total
    return min(1.0, max(0.0, 1.0 - inside))


def benjamini_hochberg(p_values: np.ndarray, level: float = FDR) -> np.ndarray:
    """True for the hypotheses rejected by Benjamini-Hochberg at false discovery rate ``level``."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if not m:
        return np.zeros(0, dtype=bool)
    order = np.argsort(p, kind="stable")
    passed = p[order] <= level * np.arange(1, m + 1) / m
    keep = np.zeros(m, dtype=bool)
    if passed.any():
        keep[order[: int(np.flatnonzero(passed).max()) + 1]] = True
    return keep


def judge(names: list[str], base: list[np.ndarray], new: list[np.ndarray], resolution_us: float = 0.0
          ) -> tuple[dict[str, RowVerdict], RowRule]:
    """Judge the rows ``names`` from their per-iteration times (us) on each side; returns the
    verdicts of the rows that could be judged and the rule with its outcome."""
    rule = RowRule(rows=len(names))
    if not names:
        rule.unjudged = "no op has per-iteration times on both sides"
        return {}, rule
    n_base, n_new = len(base[0]), len(new[0])
    if min(n_base, n_new) < MIN_ITERATIONS:
        rule.unjudged = (f"{n_base} / {n_new} iterations; each side needs {MIN_ITERATIONS} to judge a row "
                         f"(profile with --iterations {max(20, MIN_ITERATIONS)} or more)")
        return {}, rule
    kept, logs, variances = [], [], []
    for name, a, b in zip(names, base, new):
        (ma, la, ha), (mb, lb, hb) = median_interval(a), median_interval(b)
        if ma <= 0 or mb <= 0:
            rule.unjudged_rows[name] = "runs in fewer than half of the iterations of a side"
            continue
        z = _z(CONFIDENCE)
        var = sum(((h - lo) / (2 * z) / m) ** 2 + resolution_us ** 2 / 12.0 / m ** 2
                  for m, lo, h in ((ma, la, ha), (mb, lb, hb)))
        kept.append(name)
        logs.append(math.log(mb / ma))
        variances.append(var)
    if rule.unjudged_rows:
        rule.unjudged = (f"{len(rule.unjudged_rows)} row(s) unjudged: they run in fewer than half of the "
                         "iterations of a side")
    if len(kept) < MIN_ROWS:
        rule.unjudged = (f"{len(kept)} op rows can be judged; {MIN_ROWS} are needed to measure the spread between "
                         "two separate profiles")
        return {}, rule
    d, v = np.asarray(logs), np.asarray(variances)
    center = float(np.median(d))
    tau = _between_runs(d - center)
    scale = np.sqrt(v + tau * tau)
    df = NULL_DF
    t = (d - center) / scale
    p = np.array([t_two_sided_p(float(x), df) for x in t])
    flagged = benjamini_hochberg(p)
    half = t_quantile(0.5 + CONFIDENCE / 2.0, df) * scale
    verdicts = {name: RowVerdict(math.exp(x), math.exp(x - h), math.exp(x + h), float(pv), bool(f))
                for name, x, h, pv, f in zip(kept, d - center, half, p, flagged)}
    rule.judged, rule.flagged = len(kept), int(flagged.sum())
    rule.common_pct, rule.spread_pct = math.expm1(center) * 100.0, math.expm1(tau) * 100.0
    rule.expected_false = FDR * rule.flagged
    return verdicts, rule


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _between_runs(deviation: np.ndarray) -> float:
    """The spread ``tau`` (log) between two profiles: the normal-consistent median absolute
    deviation of the rows' log ratios around their median (1.4826 x MAD). It is added to each
    row's own interval: a row whose interval is wide counts its own noise twice (conservative);
    a row whose interval is narrow, an op a few microseconds long, is held to the spread of all."""
    floor = math.log1p(SESSION_FLOOR)  # two sessions of one model differ at least this much (ab.py)
    return max(floor, 1.482602218505602 * float(np.median(np.abs(deviation))))
