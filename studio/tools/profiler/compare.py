"""Baseline comparison: two profiles, per-op and per-API deltas sorted by impact.

Two runs rarely have the same number of iterations (12 against 6 runs would make every op look
twice as fast), so ops are compared **per iteration**: each op's time over the measured iterations
divided by their number (:func:`iterations`). The run's own wrapper slices are not ops and are not
compared (:func:`studio.tools.profiler.stats.wrapper_mask`); the latency per iteration is compared
on its own line. Rows present on one side only say so (``only_in``) and have no delta percentage
or speed-up.

The latency is judged with :mod:`studio.core.ab`: the ratio of the medians of the two profiles'
per-iteration samples (a local run's runs timed with the profiler off, else the iteration
slices) with a bootstrap confidence interval; a change whose interval holds 0 % is "no
significant change". Samples of two separate runs do not cover a change of the machine's load
between them: a caller that can run both models again replaces :attr:`Comparison.change` with an
interleaved A/B (``studio profile compare`` does, see :func:`rerun_plan`).

The op rows are judged by :mod:`studio.tools.profiler.op_verdicts` (the iteration as the unit,
the spread between two profiles measured across the rows, a false discovery rate over them); the
op time per iteration is a figure of the profiled runs, and :attr:`Comparison.speedup` is set
only where the latency's verdict supports it.

A :class:`Comparison` prints its table and is truthy unless the new profile is significantly
slower (like Polygraphy's comparison results). ``speedup`` is baseline / new per row (> 1 means
the new profile is faster).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from studio.core import ab
from studio.core.serial import to_json
from studio.tools.profiler import op_verdicts, stats
from studio.tools.profiler.name_keys import match_key
from studio.tools.profiler.measured import Iterations, iterations, latency_samples, local_summary, window_mask
from studio.tools.profiler.model import Trace

__all__ = ["Comparison", "DeltaRow", "Iterations", "Rerun", "compare", "format_rows", "iterations", "rerun_plan"]


@dataclass
class DeltaRow:
    """One op (or API) in both profiles; times in microseconds, ``*_per_iter_us`` per iteration."""

    name: str
    base_count: int
    new_count: int
    base_total_us: float
    new_total_us: float
    base_avg_us: float
    new_avg_us: float
    delta_us: float  # per iteration: new_per_iter_us - base_per_iter_us
    delta_pct: float | None
    speedup: float | None
    base_per_iter_us: float = 0.0
    new_per_iter_us: float = 0.0
    only_in: str | None = None  # "base" or "new" when the row exists on one side only
    significant: bool | None = None  # flagged by the op rows' test (op_verdicts); None: not judged
    delta_pct_low: float | None = None  # the interval of the change of the median per iteration beyond the
    delta_pct_high: float | None = None  # change common to all ops, in %
    p_value: float | None = None
    verdict: str = ""  # "faster", "slower", "no significant change" or "unjudged: why"
    new_name: str = ""  # the name as the new profile writes it, when it differs (another object address)
    key: str = field(default="", compare=False)  # what the two sides are matched by (name_keys.match_key); not saved

    # studio.core.serial: the JSON row
    __json_extra__ = ("status",)
    __json_skip__ = ("key",)
    __json_omit_empty__ = ("new_name",)

    @property
    def status(self) -> str:
        """``both``, ``only in base`` or ``only in new``."""
        return f"only in {self.only_in}" if self.only_in else "both"


@dataclass
class Comparison:
    """Per-op and per-API deltas of ``new`` against ``base`` (per iteration)."""

    base: str
    new: str
    ops: list[DeltaRow] = field(default_factory=list)
    apis: list[DeltaRow] = field(default_factory=list)
    base_total_us: float = 0.0
    new_total_us: float = 0.0
    base_iterations: int = 1
    new_iterations: int = 1
    base_latency_ms: float | None = None  # mean of the latency samples (a local run: profiler off)
    new_latency_ms: float | None = None
    iterations_how: str = ""
    input_changes: list[str] = field(default_factory=list)  # "x: 1×3×640×640 … -> 1×3×320×320 …"
    change: ab.Change | None = None  # the latency's change with its confidence interval
    samples_how: str = ""  # what the change's samples are
    warmups_left_out: bool = False
    op_rule: op_verdicts.RowRule | None = None  # how the op rows were judged, and how many were flagged
    base_median_per_iter_us: float | None = None  # median over the iterations of the op time per iteration
    new_median_per_iter_us: float | None = None

    # studio.core.serial: the ``studio profile compare --json`` keys
    __json_rename__ = {"change": "latency_change", "samples_how": "latency_samples"}
    __json_extra__ = ("base_per_iter_us", "new_per_iter_us", "op_time_ratio", "speedup", "latency_change_pct")

    def __bool__(self) -> bool:
        if self.change is not None:
            return not (self.change.significant and self.change.ratio > 1.0)
        if self.base_latency_ms is not None and self.new_latency_ms is not None:
            return self.new_latency_ms <= self.base_latency_ms
        return self.new_per_iter_us <= self.base_per_iter_us

    @property
    def base_per_iter_us(self) -> float:
        """Op time per iteration in the baseline."""
        return self.base_total_us / max(1, self.base_iterations)

    @property
    def new_per_iter_us(self) -> float:
        """Op time per iteration in the new profile."""
        return self.new_total_us / max(1, self.new_iterations)

    @property
    def op_time_ratio(self) -> float | None:
        """New / baseline op time per iteration (profiled runs), of the medians over the iterations
        when they are marked (a stall of one iteration moves a mean, not a median), else of the
        means: a figure, not a verdict."""
        if self.base_median_per_iter_us and self.new_median_per_iter_us is not None:
            return self.new_median_per_iter_us / self.base_median_per_iter_us
        return self.new_per_iter_us / self.base_per_iter_us if self.base_per_iter_us else None

    @property
    def speedup(self) -> float | None:
        """Baseline / new op time per iteration, only when the latency's verdict supports it: a
        significant change in the same direction. None otherwise: two profiles of one model
        read 1,826 us against 563 us of op time per iteration ("x3.24") while their latency had
        not changed; the op time of profiled runs alone is no verdict."""
        ratio = self.op_time_ratio
        if not ratio or self.change is None or not self.change.significant:
            return None
        return 1.0 / ratio if (ratio < 1.0) == (self.change.ratio < 1.0) else None

    @property
    def latency_change_pct(self) -> float | None:
        """Change of the mean latency per iteration, in percent (negative = faster)."""
        if not self.base_latency_ms or self.new_latency_ms is None:
            return None
        return (self.new_latency_ms - self.base_latency_ms) / self.base_latency_ms * 100.0


    def headline(self) -> list[str]:
        """The summary lines: iterations, op time and latency per iteration."""
        lines = [f"iterations: {self.base_iterations} -> {self.new_iterations} ({self.iterations_how}); "
                 "ops compared per iteration", f"op time per iteration: {self.op_time_text()}"]
        if self.base_latency_ms is not None and self.new_latency_ms is not None:
            lines.append(f"latency per iteration (mean): {self.base_latency_ms:,.3f} ms -> {self.new_latency_ms:,.3f} ms "
                         f"({self.latency_change_pct:+.1f} %)")
        if self.change is not None:
            lines.append(f"latency: {self.change.describe()}")
        elif self.samples_how:
            lines.append(f"latency: not judged ({self.samples_how})")
        if self.op_rule is not None:
            lines.append(self.op_rule.rule)
        lines += [f"inputs differ: {change}" for change in self.input_changes]
        return lines

    def op_time_text(self) -> str:
        """The op time per iteration on both sides (mean, and median when the iterations are
        marked), with a speed-up only where the latency's verdict supports it."""
        text = f"mean {self.base_per_iter_us:,.1f} us -> {self.new_per_iter_us:,.1f} us"
        if self.base_median_per_iter_us is not None and self.new_median_per_iter_us is not None:
            text += f", median {self.base_median_per_iter_us:,.1f} us -> {self.new_median_per_iter_us:,.1f} us"
        if self.speedup:
            return text + f" (speed-up x{self.speedup:.3f}, as the latency's verdict says)"
        if self.change is not None and self.change.significant:
            return text + " (profiled runs; the latency's verdict below is the judgement)"
        return text + " (profiled runs; not a speed-up: the latency's verdict does not support one)"

    def judge(self, change: ab.Change | None, how: str) -> None:
        """Set the latency's change (e.g. an interleaved A/B run by the caller) and what it rests on."""
        self.change, self.samples_how = change, how

    def judge_rerun(self, plan: tuple[Rerun, Rerun] | str, change: ab.Change | None = None) -> None:
        """Record the outcome of :func:`rerun_plan`: the interleaved A/B's change, or why the models
        could not be timed again (the samples' judgement stays)."""
        if isinstance(plan, str):
            self.samples_how += f"; not timed again here: {plan}"
        elif change is not None:
            self.judge(change, "both models timed again here, interleaved, profiler off")

    def __str__(self) -> str:
        lines = [f"baseline: {self.base}", f"new:      {self.new}", *self.headline()]
        for title, rows in (("per op", self.ops), ("per API", self.apis)):
            if rows:
                lines.append(f"\n{title}, per iteration (sorted by impact):")
                lines.append(format_rows(rows[:30]))
        return "\n".join(lines)


def input_changes(base: Trace, new: Trace) -> list[str]:
    """Inputs fed differently in the two local runs (their ``input NAME`` facts), one line each."""
    changes = []
    for key in sorted({k for k in (*base.facts, *new.facts) if k.startswith("input ")}):
        before, after = base.facts.get(key, "not given"), new.facts.get(key, "not given")
        if before.split(",")[0] != after.split(",")[0]:  # shape and dtype; the data source may differ
            changes.append(f"{key[len('input '):]}: {before.split(',')[0]} -> {after.split(',')[0]}")
    return changes


def compare(base: Trace, new: Trace) -> Comparison:
    """Compare two traces per op name (per iteration) and per API, and judge the latency's change
    from their per-iteration samples."""
    base_it, new_it = iterations(base), iterations(new)
    base_ops, base_samples = _keyed(*_op_times(base, base_it))
    new_ops, new_samples = _keyed(*_op_times(new, new_it))
    result = Comparison(base.source, new.source, _deltas(base_ops, new_ops, base_it.count, new_it.count))
    _judge_rows(result, base_samples, new_samples, max(resolution_us(base), resolution_us(new)))
    result.base_median_per_iter_us = _median_total(base_samples)
    result.new_median_per_iter_us = _median_total(new_samples)
    result.base_total_us = sum(t for _, t, _ in base_ops.values())
    result.new_total_us = sum(t for _, t, _ in new_ops.values())
    result.base_iterations, result.new_iterations = base_it.count, new_it.count
    result.base_latency_ms, result.new_latency_ms = base_it.latency_ms, new_it.latency_ms
    result.iterations_how = base_it.how if base_it.how == new_it.how else f"{base_it.how} / {new_it.how}"
    result.input_changes = input_changes(base, new)
    result.warmups_left_out = bool(base_it.warmups or new_it.warmups)
    (b, n, how) = _samples(base, new)
    if b and n:  # the latency is what the samples say (a local run's: with the profiler off)
        result.base_latency_ms, result.new_latency_ms = sum(b) / len(b), sum(n) / len(n)
    if len(b) < 2 or len(n) < 2:
        result.judge(None, f"{how}: fewer than 2 samples on a side")
    else:
        result.judge(ab.compare_samples(b, n), how)
    base_api = _keyed({f"{r['level']}@{r['name']}" if r["level"] else r["name"]: (r["count"], r["total_us"])
                       for r in stats.api_rows(base)}, {})[0]
    new_api = _keyed({f"{r['level']}@{r['name']}" if r["level"] else r["name"]: (r["count"], r["total_us"])
                      for r in stats.api_rows(new)}, {})[0]
    if base_api and new_api:
        result.apis = _deltas(base_api, new_api, base_it.count, new_it.count)
    return result


def _op_times(trace: Trace, its: Iterations) -> tuple[dict[str, tuple[int, float]], dict[str, np.ndarray]]:
    """Each op's count and self time over the measured iterations, and its self time in each of
    them (the unit the rows are judged on: an op's kernels in one iteration are one sample;
    empty without at least two marked iterations)."""
    wrapped = stats.wrapper_mask(trace)
    selfs = stats.self_time(trace, wrapped)
    totals = {s.name: (s.count, s.self_us) for s in stats.by_name(trace, window_mask(trace, its.window),
                                                                    selfs=selfs, wrapped=wrapped)}
    windows = its.windows
    if windows is None or len(windows) < 2:
        return totals, {}
    start = np.asarray(trace.start)
    k = np.searchsorted(windows[:, 0], start, side="right") - 1
    inside = (k >= 0) & ~wrapped
    inside[inside] = start[inside] < windows[k[inside], 1]
    names, iters = np.asarray(trace.name)[inside], k[inside]
    per = np.bincount(names.astype(np.int64) * len(windows) + iters, weights=selfs[inside] / 1e3,
                      minlength=len(trace.names) * len(windows)).reshape(len(trace.names), len(windows))
    samples: dict[str, np.ndarray] = {}
    for i in np.flatnonzero(per.any(axis=1)):
        text = trace.names[i]
        samples[text] = samples[text] + per[i] if text in samples else per[i]
    return totals, samples


def _keyed(totals: dict[str, tuple[int, float]], samples: dict[str, np.ndarray]
           ) -> tuple[dict[str, tuple[int, float, str]], dict[str, np.ndarray]]:
    """Totals and per-iteration samples by match key (names without object addresses, summed where
    two names differ only there), each total with a name as written (the busiest) for display."""
    keyed: dict[str, tuple[int, float, str]] = {}
    keyed_samples: dict[str, np.ndarray] = {}
    for name, (count, total) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        key = match_key(name)
        c, t, shown = keyed.get(key, (0, 0.0, name))
        keyed[key] = (c + count, t + total, shown)
    for name, values in samples.items():
        key = match_key(name)
        keyed_samples[key] = keyed_samples[key] + values if key in keyed_samples else values
    return keyed, keyed_samples


def resolution_us(trace: Trace) -> float:
    """The clock's step in the ops' durations: 1 us when every op slice lasts whole microseconds
    (ONNX Runtime's profiler; the run's own ranges, timed by Studio, are finer), else 0 (finer
    clocks, whose step is negligible against an op)."""
    dur = np.asarray(trace.dur)[~stats.wrapper_mask(trace)]
    return 1.0 if dur.size and not np.any(dur % 1000) else 0.0


def _judge_rows(result: Comparison, base: dict[str, np.ndarray], new: dict[str, np.ndarray],
                resolution: float) -> None:
    """Judge the op rows on both sides (:mod:`studio.tools.profiler.op_verdicts`)."""
    both = [r for r in result.ops if r.only_in is None]
    named = [r for r in both if r.key in base and r.key in new]
    verdicts, rule = op_verdicts.judge([r.key for r in named], [base[r.key] for r in named],
                                       [new[r.key] for r in named], resolution)
    if not base or not new:
        rule.unjudged = "a profile marks fewer than 2 iterations: no per-iteration times"
    rule.rows = len(both)
    result.op_rule = rule
    for row in both:
        verdict = verdicts.get(row.key)
        if verdict is None:
            row.verdict = "unjudged: " + rule.unjudged_rows.get(row.key, rule.unjudged or
                                                                "no per-iteration times on both sides")
            continue
        row.delta_pct_low, row.delta_pct_high = (verdict.low - 1.0) * 100.0, (verdict.high - 1.0) * 100.0
        row.p_value, row.significant = verdict.p_value, verdict.significant
        row.verdict = ("faster" if verdict.ratio < 1.0 else "slower") if verdict.significant else "no significant change"


def _median_total(samples: dict[str, np.ndarray]) -> float | None:
    """The median over the iterations of the op time per iteration (us); None without samples."""
    return float(np.median(np.sum(list(samples.values()), axis=0))) if samples else None


def _samples(base: Trace, new: Trace) -> tuple[list[float], list[float], str]:
    """Both profiles' per-iteration latencies, of the same kind on both sides (profiler off when
    both have it, else the profiled runs), and what they are."""
    (b, b_how), (n, n_how) = latency_samples(base), latency_samples(new)
    if b_how != n_how:  # one profile predates the timing phase: compare profiled runs on both sides
        (b, b_how), (n, n_how) = latency_samples(base, profiled=True), latency_samples(new, profiled=True)
    return b, n, b_how if b_how == n_how else f"{b_how} / {n_how}"


@dataclass
class Rerun:
    """What it takes to time a local run's model again here: the model and its inputs."""

    model: Path
    files: dict[str, Path]
    shapes: dict[str, list[int]]


def rerun_plan(base: Trace, new: Trace) -> tuple[Rerun, Rerun] | str:
    """Both models with their inputs when the two profiles can be timed again here, interleaved:
    local runs made on this computer, with this onnxruntime and these providers, whose model and
    input files still exist. Otherwise the reason they cannot (a sentence)."""
    plans = []
    for side, trace in (("baseline", base), ("new", new)):
        plan = _rerunnable(trace)
        if isinstance(plan, str):
            return f"the {side} profile {plan}"
        plans.append(plan)
    return plans[0], plans[1]


def _rerunnable(trace: Trace) -> Rerun | str:
    import platform

    from studio.core import ort_providers

    summary = local_summary(trace)
    if not summary.get("latencies_ms"):
        return "is not a local ONNX Runtime run (studio profile run)"
    if not trace.model_path or not Path(trace.model_path).is_file():
        return f"names a model that is not here ({trace.model_path})"
    facts = summary.get("facts") or {}
    try:
        import onnxruntime as ort
    except ImportError:
        return "cannot be run again: onnxruntime is not installed"
    for key, now in (("host", platform.node()), ("onnxruntime", ort.__version__), ("device", ort_providers.describe())):
        if facts.get(key) and facts[key] != now:
            return f"was made with {key} {facts[key]!r}, not {now!r} as here"
    files, shapes = {}, {}
    for name, used in (summary.get("inputs") or {}).items():
        source = str(used.get("source", ""))
        if source.startswith("file "):
            path = Path(source[len("file "):])
            if not path.is_file():
                return f"was fed {path}, which is not here"
            files[name] = path
        elif "shape" in used:
            shapes[name] = [int(d) for d in used["shape"]]
    return Rerun(Path(trace.model_path), files, shapes)


def _deltas(base: dict[str, tuple[int, float, str]], new: dict[str, tuple[int, float, str]],
            base_iterations: int = 1, new_iterations: int = 1) -> list[DeltaRow]:
    """Rows by match key; a row's name is the baseline's as written (else the new profile's)."""
    rows = []
    for key in set(base) | set(new):
        bc, bt, base_name = base.get(key, (0, 0.0, ""))
        nc, nt, new_name = new.get(key, (0, 0.0, ""))
        bi, ni = bt / max(1, base_iterations), nt / max(1, new_iterations)
        only = "base" if key not in new else "new" if key not in base else None
        rows.append(DeltaRow(
            base_name or new_name, bc, nc, bt, nt, bt / bc if bc else 0.0, nt / nc if nc else 0.0, ni - bi,
            (ni - bi) / bi * 100.0 if bi and only is None else None, bi / ni if bi and ni and only is None else None,
            bi, ni, only, new_name=new_name if base_name and new_name != base_name else "", key=key))
    rows.sort(key=lambda r: (-abs(r.delta_us), r.name))
    return rows


def format_rows(rows: list[DeltaRow]) -> str:
    """A fixed-width text table of delta rows (times per iteration)."""
    width = min(48, max([len(r.name) for r in rows] + [4]))
    out = [f"{'name':<{width}} {'count':>11} {'base us/it':>11} {'new us/it':>11} {'delta us':>11} "
           f"{'delta %':>12} {'x':>7}  verdict (95 % CI of the change of the median per iteration beyond the "
           "common change)"]
    for r in rows:
        name = r.name if len(r.name) <= width else r.name[:width - 1] + "…"
        pct = f"{r.delta_pct:+.1f}" if r.delta_pct is not None else r.status
        speed = f"{r.speedup:.2f}" if r.speedup else "-"
        out.append(f"{name:<{width}} {r.base_count:>5}/{r.new_count:<5} {r.base_per_iter_us:>11.1f} "
                   f"{r.new_per_iter_us:>11.1f} {r.delta_us:>+11.1f} {pct:>12} {speed:>7}  {row_judgement(r)}")
    return "\n".join(out)


def row_judgement(row: DeltaRow) -> str:
    """``slower: +4.1 % to +9.8 %`` for a flagged row, ``no significant change (...)`` otherwise,
    ``unjudged: why`` when the row could not be judged, ``-`` for a row on one side only or not
    judged at all (API rows)."""
    if row.significant is None:
        return row.verdict or "-"
    interval = f"{row.delta_pct_low:+.1f} % to {row.delta_pct_high:+.1f} %"
    return f"{row.verdict}: {interval}" if row.significant else f"no significant change ({interval})"
