"""Per-op device times from a profile, in one shape whatever wrote it.

Reads the ``op_summary`` table the profiler's readers already normalise (msprof ``op_summary``,
PyTorch-NPU ``kernel_details``, and the ``op_summary.csv`` a local ONNX Runtime run writes), and
the step time: the measured latency of a local run, msprof's ``step_trace`` per step, or the sum
of the op times per step. Nothing here parses a profiling file itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from studio.tools.profiler.csv_tables import number
from studio.tools.profiler.model import Trace


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
    local = _local_summary(trace)
    summary = trace.tables.get("op_summary")
    steps_seen: set[str] = set()
    if summary is not None and "Op Name" in summary.columns and "Task Duration(us)" in summary.columns:
        table.source = summary.source or "op_summary"
        cols = {c: i for i, c in enumerate(summary.columns)}

        def get(row, key):
            i = cols.get(key)
            return row[i] if i is not None and i < len(row) else ""

        merged: dict[str, OpRecord] = {}
        for row in summary.rows:
            name = str(get(row, "Op Name")).strip()
            dur = number(get(row, "Task Duration(us)")) or 0.0
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
            rec.total_us += dur
        table.ops = list(merged.values())
    if local.get("iterations"):
        table.steps = int(local["iterations"])
    elif len(steps_seen) > 1:
        table.steps = len(steps_seen)
    for op in table.ops:
        op.per_step_us = op.total_us / table.steps
    table.ops.sort(key=lambda o: -o.total_us)
    table.device_ms = sum(o.per_step_us for o in table.ops) / 1000.0
    _step_time(trace, table, local)
    return table


def _step_time(trace: Trace, table: OpTable, local: dict) -> None:
    latency = local.get("latency_ms") or {}
    if latency.get("mean"):
        table.latency = {k: float(v) for k, v in latency.items()}
        table.step_ms = float(latency["mean"])
        table.throughput = local.get("throughput_per_s")
        table.step_source = "measured latency (mean) in studio_profile.json"
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
            table.step_ms = float(np.mean(totals)) / 1000.0
            table.step_source = (f"step_trace: computing + communication (not overlapped) + free, "
                                 f"mean of {len(totals)} step(s)")
            return
    if table.device_ms:
        table.step_ms = table.device_ms
        table.step_source = f"sum of op times per step ({table.source})"
