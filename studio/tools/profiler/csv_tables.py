"""msprof and PyTorch-NPU summary CSVs: header variants normalised, trailing tabs stripped.

Different CANN versions name the same column differently (``Block Dim``/``Block Num``,
``Start Time(us)``/``Task Start Time(us)``, PyTorch's ``Name``/``Type``/``Accelerator Core``);
this module maps them to one canonical header so stats and views read one schema. msprof adds a
TAB after time values so Excel keeps them as text; values keep their text and are converted by
the consumer (``float`` for durations, exact integer nanoseconds for 16-digit start times).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from studio.core.errors import UserError
from studio.core.safe_read import read_text
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.model import Table

# lower-cased header cell -> canonical name
_ALIASES = {
    "name": "Op Name", "op name": "Op Name", "op_name": "Op Name",
    "type": "OP Type", "op type": "OP Type", "op_type": "OP Type",
    "accelerator core": "Task Type", "task type": "Task Type",
    "start time(us)": "Task Start Time(us)", "task start time(us)": "Task Start Time(us)",
    "duration(us)": "Task Duration(us)", "task duration(us)": "Task Duration(us)",
    "wait time(us)": "Task Wait Time(us)", "task wait time(us)": "Task Wait Time(us)",
    "block dim": "Block Num", "block num": "Block Num",
    "mix block dim": "Mix Block Num", "mix block num": "Mix Block Num",
    "stream id": "Stream ID", "task id": "Task ID", "model id": "Model ID", "device_id": "Device_id",
    "core type": "Core Type", "count": "Count", "total time(us)": "Total Time(us)",
    "min time(us)": "Min Time(us)", "avg time(us)": "Avg Time(us)", "max time(us)": "Max Time(us)",
    "ratio(%)": "Ratio(%)", "api name": "API Name", "level": "Level", "time(us)": "Time(us)",
    "avg(us)": "Avg(us)", "min(us)": "Min(us)", "max(us)": "Max(us)",
}

# kind -> the canonical columns that identify it
KINDS = [
    ("op_summary", {"Op Name", "OP Type", "Task Start Time(us)", "Task Duration(us)"}),
    ("op_statistic", {"OP Type", "Core Type", "Count", "Total Time(us)"}),
    ("api_statistic", {"API Name", "Count", "Time(us)"}),
    ("task_time", {"kernel_name", "task_time(us)"}),
    ("msprof_tx", {"category", "event_type", "message"}),
    ("step_trace", {"Step", "Computing"}),
]

_NUMBER = re.compile(r"^-?\d+(\.\d*)?([eE][-+]?\d+)?$")


def canonical(cell: str) -> str:
    """The canonical name of a header cell."""
    text = cell.strip().strip("\ufeff").strip().strip('"').strip()
    return _ALIASES.get(text.lower(), text)


def clean(value: str) -> str:
    """A cell without msprof's trailing TAB, surrounding quotes and blanks."""
    return value.strip().strip('"').strip()


def number(value: Any) -> float | None:
    """A cell as a float, or None for N/A and text."""
    if isinstance(value, (int, float)):
        return float(value)
    text = clean(str(value)) if value is not None else ""
    if not text or not _NUMBER.match(text):
        return None
    return float(text)


def read_rows(path: Path, fix: str) -> list[list[str]]:
    """The rows of a CSV file (BOM dropped); a UserError naming the file when it cannot be read or
    parsed (``fix`` says how to get a good one)."""
    path = Path(path)
    try:
        text = read_text(path, path.name, encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        raise UserError(f"Cannot read {path.name}: {exc.strerror}", path, "Check the file exists and is readable.") \
            from exc
    try:
        return list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise UserError(f"{path.name} is malformed CSV: {exc}", path, fix) from exc


def read_table(path: Path) -> Table:
    """Read one summary CSV; raises UserError when it is not a profiling CSV Studio knows."""
    rows = read_rows(path, "Export the summary again (msprof --export=on).")
    if not rows:
        raise UserError("CSV file is empty", path, "Export the summary again (msprof --export=on).")
    columns = [canonical(c) for c in rows[0]]
    while columns and not columns[-1]:
        columns.pop()
    kind = table_kind(columns)
    if kind is None:
        raise UserError(f"Not a profiling summary CSV: unknown header {', '.join(columns[:6])}", path,
                        "Open an op_summary, op_statistic, api_statistic, task_time, msprof_tx, kernel_details "
                        "or step_trace_time CSV.")
    body = []
    for line_no, row in enumerate(rows[1:], start=2):
        if not row or not any(cell.strip() for cell in row):
            continue
        cells = [clean(c) for c in row[:len(columns)]]
        cells += [""] * (len(columns) - len(cells))  # a short (truncated) last row keeps its cells
        body.append(cells)
    return Table(kind, columns, body, str(path))


def table_kind(columns: list[str]) -> str | None:
    """Which summary a header belongs to, or None."""
    have = set(columns)
    for kind, need in KINDS:
        if need <= have:
            return kind
    return None


def merge_tables(tables: list[Table]) -> Table:
    """Concatenate tables of one kind (sliced exports: ``op_summary_slice_0_...``)."""
    first = tables[0]
    rows = list(first.rows)
    for table in tables[1:]:
        index = [table.columns.index(c) if c in table.columns else -1 for c in first.columns]
        rows += [[row[i] if i >= 0 else "" for i in index] for row in table.rows]
    return Table(first.kind, first.columns, rows, first.source)


def exact_us_to_ns(text: str) -> int | None:
    """``"1736408883704643.212"`` -> 1736408883704643212 exactly (float64 would round it)."""
    text = clean(text)
    whole, _, frac = text.partition(".")
    if not whole.lstrip("-").isdigit() or (frac and not frac.isdigit()):
        value = number(text)
        return None if value is None or not math.isfinite(value) else round(value * 1000)
    ns = abs(int(whole)) * 1000 + int((frac + "000")[:3])
    return -ns if whole.startswith("-") else ns


_INT64 = 2 ** 63  # slice times are int64 nanoseconds

_SLICE_ARGS = ("OP Type", "Task Type", "Stream ID", "Task ID", "Block Num", "Input Shapes",
               "Input Data Types", "Output Shapes", "Output Data Types", "Task Wait Time(us)", "aicore_time(us)")


def add_op_summary_slices(builder: TraceBuilder, table: Table) -> int:
    """Draw an op_summary / kernel_details table as device slices (one track per stream);
    used when a profile has summaries but no timeline JSON. Returns the number of slices."""
    cols = {c: i for i, c in enumerate(table.columns)}
    name_i, start_i, dur_i = cols["Op Name"], cols["Task Start Time(us)"], cols["Task Duration(us)"]
    stream_i, device_i = cols.get("Stream ID"), cols.get("Device_id")
    added = 0
    for index, row in enumerate(table.rows):
        start_us, dur = number(row[start_i]), number(row[dur_i])
        if start_us is None or dur is None:
            continue
        start = exact_us_to_ns(row[start_i]) if math.isfinite(start_us) else None
        dur_ns = round(dur * 1000) if math.isfinite(dur) else None
        for column, value in (("Task Start Time(us)", start), ("Task Duration(us)", dur_ns)):
            if value is None or not -_INT64 <= value < _INT64:
                cell = row[start_i if column.startswith("Task Start") else dur_i]
                raise UserError(f"{column} {cell!r} of op {row[name_i]!r} is beyond any time a profile holds",
                                f"{table.source}, data row {index + 1}, column {column}",
                                "Export the summary again (msprof --export=on), or correct that cell.")
        device = row[device_i] if device_i is not None else "0"
        pid = f"device {device}"
        builder.process_names.setdefault(pid, f"Ascend Hardware (device {device})" if device_i is not None
                                         else "Ascend Hardware")
        stream = row[stream_i] if stream_i is not None else ""
        track = builder.track_id(pid, f"Stream {stream}" if stream not in ("", "N/A") else "Tasks")
        args = {k: row[cols[k]] for k in _SLICE_ARGS if k in cols and row[cols[k]] not in ("", "N/A")}
        task_type = row[cols["Task Type"]] if "Task Type" in cols else ""
        builder.add_slice(start, dur_ns, track, row[name_i], task_type, json.dumps(args).encode())
        added += 1
    return added
