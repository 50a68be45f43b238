"""Per-op device times from a profile, in one shape whatever wrote it.

Reads the ``op_summary`` table the profiler's readers already normalise (msprof ``op_summary``,
PyTorch-NPU ``kernel_details``, and the ``op_summary.csv`` a local ONNX Runtime run writes), and
the step time: the measured latency of a local run, msprof's ``step_trace`` per step, or the sum
of the op times per step. Nothing here parses a profiling file itself.

The numbers are built to be judged on:

* **self time**: an op that runs others inside its own slice (an If or Loop and its subgraph's
  kernels) counts only the time not covered by them, so nothing is counted twice;
* **robust**: a run of an op at least :data:`OUTLIER_RATIO` times the median of the same op on
  the same input shapes (and :data:`OUTLIER_MIN_US` above it) is an outlier — a stall of the
  machine or the runtime, not the op's cost (a 4 us Shape op once took 15 ms and read as the top
  op) — and counts as that median run; its time is kept apart in :attr:`OpTable.outliers` and
  shown as such. Runs are grouped by shapes too because Ascend's kernel tables repeat one name
  for layers of different sizes; with no outlier, an op's time is the plain sum;
* **never more than the step**: the step is the median latency (a local run's timed runs with
  the profiler off). The op times come from the profiled runs; ONNX Runtime's profiler slows the
  kernels of a small model too (a voice-activity model's kernels add up to 0.22 ms per profiled
  run, against 0.05 ms for a whole bare run), so where the op times add up to more than the step
  they are scaled down to it (shares unchanged) and a note says so; otherwise they are kept as
  measured. :attr:`OpRecord.profiled_us` keeps the unscaled time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from studio.tools.profiler.csv_tables import number
from studio.tools.profiler.measured import local_summary
from studio.tools.profiler.model import Trace
from studio.tools.profiler.stats import nested_self_time

OUTLIER_RATIO = 5.0
OUTLIER_MIN_US = 50.0


@dataclass
class OpRecord:
    """All executions of one op name (times per step, in microseconds)."""

    name: str
    op_type: str
    task_type: str
    count: int
    total_us: float
    per_step_us: float
    first_start_us: float | None = None
    input_shapes: str = ""
    input_formats: str = ""
    output_formats: str = ""
    input_dtypes: str = ""
    dynamic: bool = False
    median_us: float = 0.0  # median self time of one run
    self_us: float = 0.0  # summed self time of every run (outliers included)
    robust_us: float = 0.0  # summed self time, each outlier run counted as its median run
    profiled_us: float = 0.0  # time per step as profiled (robust_us / steps), before any scaling
    outliers: int = 0  # runs taken as outliers
    outlier_us: float = 0.0  # their summed self time


@dataclass
class OpTable:
    """Every op of a profile plus the step it belongs to."""

    ops: list[OpRecord] = field(default_factory=list)
    steps: int = 1
    step_ms: float | None = None
    step_source: str = ""
    device_ms: float = 0.0  # summed op time per step
    source: str = ""  # which table the op times came from
    latency: dict[str, float] = field(default_factory=dict)
    throughput: float | None = None
    batch: int | None = None
    profiled_step_ms: float | None = None  # the profiled runs' median latency (local runs)
    # The profiler's overhead as the profile measured it, with repeats (alternating rounds with it on
    # and off) and its interval; None when it was not measured so (one pair of phases says nothing).
    overhead: float | None = None
    overhead_change: dict | None = None
    scale: float = 1.0  # op times were multiplied by this to sit on the step's scale
    notes: list[str] = field(default_factory=list)

    @property
    def outliers(self) -> list[OpRecord]:
        """The ops with outlier executions, the largest outlier time first."""
        return sorted((op for op in self.ops if op.outliers), key=lambda op: -op.outlier_us)

    def by_name(self) -> dict[str, OpRecord]:
        return {op.name: op for op in self.ops}

    def by_type(self) -> dict[str, float]:
        """Op type -> time per step (us), largest first."""
        out: dict[str, float] = {}
        for op in self.ops:
            out[op.op_type] = out.get(op.op_type, 0.0) + op.per_step_us
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _local_summary(trace: Trace) -> dict:
    """The ``studio_profile.json`` beside a local run's trace (its latency and iterations)."""
    from studio.tools.profiler.summary_file import SUMMARY_NAME, read_summary

    source = Path(trace.source) if trace.source else None
    for folder in ([source] if source and source.is_dir() else []) + ([source.parent] if source else []):
        if (folder / SUMMARY_NAME).is_file():
            return read_summary(folder)
    return {}


def op_table(trace: Trace) -> OpTable:
    """The op table of ``trace`` (empty ``ops`` when the profile has no per-op table)."""
    table = OpTable()
    local = local_summary(trace)
    summary = trace.tables.get("op_summary")
    steps_seen: set[str] = set()
    runs: dict[str, list[int]] = {}  # op name -> its rows
    if summary is not None and "Op Name" in summary.columns and "Task Duration(us)" in summary.columns:
        table.source = summary.source or "op_summary"
        cols = {c: i for i, c in enumerate(summary.columns)}

        def get(row, key):
            i = cols.get(key)
            return row[i] if i is not None and i < len(row) else ""

        merged: dict[str, OpRecord] = {}
        durs, starts, streams, shapes = [], [], [], []
        for row in summary.rows:
            name = str(get(row, "Op Name")).strip()
            if not name:
                continue
            step = str(get(row, "Step Id")).strip()
            if step:
                steps_seen.add(step)
            rec = merged.get(name)
            if rec is None:
                rec = merged[name] = OpRecord(
                    name, str(get(row, "OP Type")), str(get(row, "Task Type")), 0, 0.0, 0.0,
                    number(get(row, "Task Start Time(us)")), str(get(row, "Input Shapes")),
                    str(get(row, "Input Formats")), str(get(row, "Output Formats")),
                    str(get(row, "Input Data Types")), str(get(row, "OP State")).lower() == "dynamic")
            rec.count += 1
            runs.setdefault(name, []).append(len(durs))
            durs.append(number(get(row, "Task Duration(us)")) or 0.0)
            start = number(get(row, "Task Start Time(us)"))
            starts.append(np.nan if start is None else start)
            streams.append(str(get(row, "Stream ID")))
            shapes.append(str(get(row, "Input Shapes")))
        selfs = _self_times(np.asarray(durs, np.float64), np.asarray(starts, np.float64), streams)
        for name, rec in merged.items():
            _robust(rec, np.asarray(durs, np.float64)[runs[name]], selfs[runs[name]], [shapes[i] for i in runs[name]])
        table.ops = list(merged.values())
    if local.get("iterations"):
        table.steps = int(local["iterations"])
    elif len(steps_seen) > 1:
        table.steps = len(steps_seen)
    for op in table.ops:
        op.per_step_us = op.profiled_us = op.robust_us / table.steps
    _step_time(trace, table, local)
    _to_step_scale(table)
    table.ops.sort(key=lambda o: (-o.per_step_us, o.name))
    return table


def _self_times(durs: np.ndarray, starts: np.ndarray, streams: list[str]) -> np.ndarray:
    """Each row's duration minus the rows nested inside it on its stream (all durations when the
    table has no start times)."""
    if not durs.size or np.isnan(starts).any():
        return durs
    _, group = np.unique(np.asarray(streams), return_inverse=True)
    # start times are absolute microseconds (~1e15): relative ones keep the sub-us digits exact
    return nested_self_time(starts - starts.min(), durs, group)


def _robust(rec: OpRecord, durs: np.ndarray, selfs: np.ndarray, shapes: list[str]) -> None:
    """Fill ``rec``'s totals, median and outliers from its runs' durations, self times and input
    shapes (outliers are judged against the runs of the same shapes)."""
    rec.total_us = float(durs.sum())
    rec.self_us = float(selfs.sum())
    rec.median_us = float(np.median(selfs)) if selfs.size else 0.0
    robust = selfs.copy()
    keys = np.asarray(shapes)
    for key in np.unique(keys):
        same = keys == key
        median = float(np.median(selfs[same]))
        out = same & (selfs >= OUTLIER_RATIO * median) & (selfs - median >= OUTLIER_MIN_US)
        robust[out] = median
        rec.outliers += int(out.sum())
        rec.outlier_us += float(selfs[out].sum())
    rec.robust_us = float(robust.sum())


def _step_time(trace: Trace, table: OpTable, local: dict) -> None:
    latency = local.get("latency_ms") or {}
    if latency.get("p50") or latency.get("mean"):
        table.latency = {k: float(v) for k, v in latency.items()}
        table.step_ms = float(latency.get("p50") or latency["mean"])
        table.throughput = local.get("throughput_per_s")
        profiled = (local.get("profiled_latency_ms") or {}).get("p50")
        runs = len(local.get("latencies_ms") or []) or local.get("iterations")
        table.overhead = local.get("profiler_overhead") if local.get("profiler_overhead_change") else None
        table.overhead_change = local.get("profiler_overhead_change") or None
        if profiled:
            table.profiled_step_ms = float(profiled)
            table.step_source = (f"median latency of {runs} runs with the profiler off (studio_profile.json); "
                                 f"{float(profiled):.3f} ms with it on")
        else:
            table.profiled_step_ms = table.step_ms
            table.step_source = f"median latency of {runs} profiled runs (studio_profile.json)"
        return
    steps = trace.tables.get("step_trace")
    if steps is not None and steps.rows:
        cols = {c: i for i, c in enumerate(steps.columns)}
        totals = []
        for row in steps.rows:
            parts = [number(row[cols[c]]) or 0.0 for c in ("Computing", "Communication(Not Overlapped)", "Free")
                     if c in cols]
            totals.append(sum(parts))
        if any(totals):
            table.step_ms = float(np.median(totals)) / 1000.0
            table.step_source = (f"step_trace: computing + communication (not overlapped) + free, "
                                 f"median of {len(totals)} step(s)")
            return
    device_ms = sum(o.per_step_us for o in table.ops) / 1000.0
    if device_ms:
        table.step_ms = device_ms
        table.step_source = f"sum of op times per step ({table.source})"


def _to_step_scale(table: OpTable) -> None:
    """Scale the op times down to the step when they add up to more than it (shares unchanged)."""
    raw_ms = sum(o.per_step_us for o in table.ops) / 1000.0
    scale = 1.0
    if table.step_ms and raw_ms > table.step_ms * (1 + 1e-9):
        scale = table.step_ms / raw_ms
        why = ("the profiler slows the kernels too: their times come from runs of "
               f"{table.profiled_step_ms:.3f} ms" if table.profiled_step_ms and table.profiled_step_ms > table.step_ms
               else "overlapping streams or threads")
        table.notes.append(f"op times per step add up to {raw_ms:.3f} ms, more than the {table.step_ms:.3f} ms step "
                           f"({why}): scaled by {scale:.3f} so they fit in it; their shares are as measured")
    table.scale = scale
    for op in table.ops:
        op.per_step_us *= scale
    table.device_ms = raw_ms * scale
