"""Baseline comparison: two profiles, per-op and per-API deltas sorted by impact.

Two runs rarely have the same number of iterations (12 against 6 runs would make every op look
twice as fast), so ops are compared **per iteration**: each op's time over the measured iterations
divided by their number (:func:`iterations`). The run's own wrapper slices are not ops and are not
compared (:func:`studio.tools.profiler.stats.wrapper_mask`); the latency per iteration is compared
on its own line. Rows present on one side only say so (``only_in``) and have no delta percentage
or speed-up.

A :class:`Comparison` prints its table and is truthy when the new profile is not slower per
iteration (like Polygraphy's comparison results). ``speedup`` is baseline / new per row (> 1 means
the new profile is faster).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np

from studio.tools.profiler import stats
from studio.tools.profiler.model import Trace

_ITERATION = re.compile(r"^iteration \d+$")
_STEP = re.compile(r"^ProfilerStep#\d+$")


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

    @property
    def status(self) -> str:
        """``both``, ``only in base`` or ``only in new``."""
        return f"only in {self.only_in}" if self.only_in else "both"


@dataclass
class Iterations:
    """How many measured iterations a profile holds, where they are, and their latency."""

    count: int
    window: tuple[int, int] | None  # (start, end) ns of the measured iterations; None = whole trace
    latency_ms: float | None  # mean per iteration
    how: str  # where the count comes from, for the report


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
    base_latency_ms: float | None = None
    new_latency_ms: float | None = None
    iterations_how: str = ""
    input_changes: list[str] = field(default_factory=list)  # "x: 1×3×640×640 … -> 1×3×320×320 …"

    def __bool__(self) -> bool:
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
    def speedup(self) -> float | None:
        """Baseline / new op time per iteration."""
        return self.base_per_iter_us / self.new_per_iter_us if self.new_per_iter_us else None

    @property
    def latency_change_pct(self) -> float | None:
        """Change of the mean latency per iteration, in percent (negative = faster)."""
        if not self.base_latency_ms or self.new_latency_ms is None:
            return None
        return (self.new_latency_ms - self.base_latency_ms) / self.base_latency_ms * 100.0

    def as_dict(self) -> dict:
        """Plain data for ``--json``."""
        return {"base": self.base, "new": self.new, "base_total_us": self.base_total_us,
                "new_total_us": self.new_total_us, "base_iterations": self.base_iterations,
                "new_iterations": self.new_iterations, "base_per_iter_us": self.base_per_iter_us,
                "new_per_iter_us": self.new_per_iter_us, "speedup": self.speedup,
                "base_latency_ms": self.base_latency_ms, "new_latency_ms": self.new_latency_ms,
                "latency_change_pct": self.latency_change_pct, "iterations_how": self.iterations_how,
                "input_changes": self.input_changes,
                "ops": [_row_dict(r) for r in self.ops], "apis": [_row_dict(r) for r in self.apis]}

    def headline(self) -> list[str]:
        """The summary lines: iterations, op time and latency per iteration."""
        lines = [f"iterations: {self.base_iterations} -> {self.new_iterations} ({self.iterations_how}); "
                 "ops compared per iteration",
                 f"op time per iteration: {self.base_per_iter_us:,.1f} us -> {self.new_per_iter_us:,.1f} us"
                 + (f" (speed-up x{self.speedup:.3f})" if self.speedup else "")]
        if self.base_latency_ms is not None and self.new_latency_ms is not None:
            lines.append(f"latency per iteration (mean): {self.base_latency_ms:,.3f} ms -> {self.new_latency_ms:,.3f} ms "
                         f"({self.latency_change_pct:+.1f} %)")
        lines += [f"inputs differ: {change}" for change in self.input_changes]
        return lines

    def __str__(self) -> str:
        lines = [f"baseline: {self.base}", f"new:      {self.new}", *self.headline()]
        for title, rows in (("per op", self.ops), ("per API", self.apis)):
            if rows:
                lines.append(f"\n{title}, per iteration (sorted by impact):")
                lines.append(format_rows(rows[:30]))
        return "\n".join(lines)


def _row_dict(row: DeltaRow) -> dict:
    data = asdict(row)
    data["status"] = row.status
    return data


def iterations(trace: Trace) -> Iterations:
    """The measured iterations of a profile: Studio's ``iteration N`` ranges (warm-ups left out),
    else ONNX Runtime's ``model_run`` slices, else PyTorch's ``ProfilerStep#N``; one otherwise."""
    measured = _named(trace, _ITERATION)
    runs = _named(trace, re.compile(r"^model_run$"))
    if measured.size:
        latency = float(np.asarray(trace.dur)[measured].mean()) / 1e6
        if runs.size >= measured.size:  # ORT's own runs, on ORT's clock: the last ones are the measured
            runs = runs[np.argsort(np.asarray(trace.start)[runs], kind="stable")][-measured.size:]
            return Iterations(int(measured.size), _span(trace, runs), latency, "measured iterations, warm-ups left out")
        return Iterations(int(measured.size), _span(trace, measured), latency, "measured iterations")
    if runs.size:
        return Iterations(int(runs.size), None, float(np.asarray(trace.dur)[runs].mean()) / 1e6, "model_run slices")
    steps = _named(trace, _STEP)
    if steps.size:
        return Iterations(int(steps.size), None, float(np.asarray(trace.dur)[steps].mean()) / 1e6, "profiler steps")
    loops = _named(trace, re.compile(r"^inference$")) if "benchmark" in trace.facts else np.zeros(0, np.int64)
    if loops.size:  # a benchmark folder: one slice per timed loop
        return Iterations(int(loops.size), None, float(np.asarray(trace.dur)[loops].mean()) / 1e6, "timed loops")
    return Iterations(1, None, None, "no iteration marks: whole profile")


def input_changes(base: Trace, new: Trace) -> list[str]:
    """Inputs fed differently in the two local runs (their ``input NAME`` facts), one line each."""
    changes = []
    for key in sorted({k for k in (*base.facts, *new.facts) if k.startswith("input ")}):
        before, after = base.facts.get(key, "not given"), new.facts.get(key, "not given")
        if before.split(",")[0] != after.split(",")[0]:  # shape and dtype; the data source may differ
            changes.append(f"{key[len('input '):]}: {before.split(',')[0]} -> {after.split(',')[0]}")
    return changes


def _named(trace: Trace, pattern: re.Pattern) -> np.ndarray:
    ids = np.array([i for i, name in enumerate(trace.names) if pattern.match(name)], dtype=np.int32)
    return np.flatnonzero(np.isin(np.asarray(trace.name), ids)) if ids.size else np.zeros(0, np.int64)


def _span(trace: Trace, indices: np.ndarray) -> tuple[int, int]:
    start = np.asarray(trace.start)[indices]
    return int(start.min()), int((start + np.asarray(trace.dur)[indices]).max())


def _window_mask(trace: Trace, window: tuple[int, int] | None) -> np.ndarray | None:
    if window is None:
        return None
    start = np.asarray(trace.start)
    return (start >= window[0]) & (start < window[1])


def compare(base: Trace, new: Trace) -> Comparison:
    """Compare two traces per op name (per iteration) and per API."""
    base_it, new_it = iterations(base), iterations(new)
    base_ops = {s.name: (s.count, s.total_us) for s in stats.by_name(base, _window_mask(base, base_it.window))}
    new_ops = {s.name: (s.count, s.total_us) for s in stats.by_name(new, _window_mask(new, new_it.window))}
    result = Comparison(base.source, new.source, _deltas(base_ops, new_ops, base_it.count, new_it.count))
    result.base_total_us = sum(t for _, t in base_ops.values())
    result.new_total_us = sum(t for _, t in new_ops.values())
    result.base_iterations, result.new_iterations = base_it.count, new_it.count
    result.base_latency_ms, result.new_latency_ms = base_it.latency_ms, new_it.latency_ms
    result.iterations_how = base_it.how if base_it.how == new_it.how else f"{base_it.how} / {new_it.how}"
    result.input_changes = input_changes(base, new)
    base_api = {f"{r['level']}@{r['name']}" if r["level"] else r["name"]: (r["count"], r["total_us"])
                for r in stats.api_rows(base)}
    new_api = {f"{r['level']}@{r['name']}" if r["level"] else r["name"]: (r["count"], r["total_us"])
               for r in stats.api_rows(new)}
    if base_api and new_api:
        result.apis = _deltas(base_api, new_api, base_it.count, new_it.count)
    return result


def _deltas(base: dict[str, tuple[int, float]], new: dict[str, tuple[int, float]],
            base_iterations: int = 1, new_iterations: int = 1) -> list[DeltaRow]:
    rows = []
    for name in set(base) | set(new):
        bc, bt = base.get(name, (0, 0.0))
        nc, nt = new.get(name, (0, 0.0))
        bi, ni = bt / max(1, base_iterations), nt / max(1, new_iterations)
        only = "base" if name not in new else "new" if name not in base else None
        rows.append(DeltaRow(
            name, bc, nc, bt, nt, bt / bc if bc else 0.0, nt / nc if nc else 0.0, ni - bi,
            (ni - bi) / bi * 100.0 if bi and only is None else None, bi / ni if bi and ni and only is None else None,
            bi, ni, only))
    rows.sort(key=lambda r: (-abs(r.delta_us), r.name))
    return rows


def format_rows(rows: list[DeltaRow]) -> str:
    """A fixed-width text table of delta rows (times per iteration)."""
    width = min(48, max([len(r.name) for r in rows] + [4]))
    out = [f"{'name':<{width}} {'count':>11} {'base us/it':>11} {'new us/it':>11} {'delta us':>11} "
           f"{'delta %':>12} {'x':>7}"]
    for r in rows:
        name = r.name if len(r.name) <= width else r.name[:width - 1] + "…"
        pct = f"{r.delta_pct:+.1f}" if r.delta_pct is not None else r.status
        speed = f"{r.speedup:.2f}" if r.speedup else "-"
        out.append(f"{name:<{width}} {r.base_count:>5}/{r.new_count:<5} {r.base_per_iter_us:>11.1f} "
                   f"{r.new_per_iter_us:>11.1f} {r.delta_us:>+11.1f} {pct:>12} {speed:>7}")
    return "\n".join(out)
