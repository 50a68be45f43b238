"""``open_memory``: every ASCEND_PROFILER_OUTPUT under a folder, its devices' peaks."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.serial import to_json
from studio.tools.profiler.memory.db import read_db
from studio.tools.profiler.memory.interval import block_columns, interval_ops
from studio.tools.profiler.memory.npu_mem import npu_mem_file
from studio.tools.profiler.memory.peak import device_peak
from studio.tools.profiler.memory.series import device_series
from studio.tools.profiler.memory.static import FILE as STATIC, read_static
from studio.tools.profiler.memory.text import MODULE, RECORD, read_text

OUTPUT = "ASCEND_PROFILER_OUTPUT"
_DB = re.compile(r"^ascend_pytorch_profiler(_\d+)?\.db$")
MAX_DEPTH = 6


@dataclass
class Interval:
    """A time interval to query, in ms after each device's first allocator sample (None: the profile's
    start / end), the smallest block in KB, and the grouping (``op``, ``stream``, ``component`` or None)."""

    from_ms: float | None = None
    to_ms: float | None = None
    min_kb: float = 0.0
    group: str | None = None


@dataclass
class MemoryReport:
    """Per-device peaks and the sources read."""

    devices: list[dict] = field(default_factory=list)
    source: dict = field(default_factory=dict)


    def __str__(self) -> str:
        lines = [f"source: {self.source.get('kind')}" + (f" — {self.source['note']}" if self.source.get("note")
                                                          else "")]
        for d in self.devices:
            where = f"{d.get('rank_folder', '')} {d['device']}".strip()
            if d.get("graph") is not None:
                where += f" model {d['model']} graph {d['graph']}"
            if d["peak_allocated_mb"] is None:
                lines.append(f"{where}: no allocator samples")
                continue
            at = _peak_time(d)
            reserved = "-" if d["peak_reserved_mb"] is None else f"{d['peak_reserved_mb']:,.3f}"
            lines.append(f"{where}: peak allocated {d['peak_allocated_mb']:,.3f} MB {at}, reserved {reserved} MB")
            if "peak_device_mb" in d:
                lines.append("    " + _totals_line(d))
            if d.get("interval") is None:
                for op in d["top_ops_at_peak"]:
                    lines.append(f"    {op['size_mb']:>12,.3f} MB  {op['name']}")
            else:
                lines.extend("    " + line for line in _interval_lines(d["interval"]))
        return "\n".join(lines)


def _totals_line(device: dict) -> str:
    """The device, process and framework figures side by side (a missing one says why)."""
    whole = ("device (NPU_MEM) -" if device["peak_device_mb"] is None else
             f"device {device['peak_device_mb']:,.3f} MB (NPU_MEM, every process and the driver)")
    app = device.get("peak_app_reserved_mb")
    process = "process -" if app is None else f"process {app:,.3f} MB"
    framework = ("framework -" if device.get("peak_reserved_mb") is None else
                 f"framework ({device.get('component')}) reserved {device['peak_reserved_mb']:,.3f} MB")
    line = f"peaks: {whole}; {process}; {framework}"
    if device["peak_device_mb"] is None:
        line += " — the device total is in the db export's NPU_MEM table or the text export's npu_mem.csv only"
    return line


def _interval_lines(interval: dict) -> list[str]:
    lines = [f"{interval['from_ms']:,.3f}–{interval['to_ms']:,.3f} ms{interval['bounds_note']}: "
             f"{interval['allocations']} allocation(s) {interval['allocated_mb']:,.3f} MB, {interval['frees']} "
             f"free(s) {interval['freed_mb']:,.3f} MB, net {interval['net_mb']:+,.3f} MB"
             + (f" (blocks of {interval['min_kb']:g} KB or more)" if interval["min_kb"] else "")]
    if interval["group"]:
        lines.append(f"{interval['group']:<28} {'blocks':>7} {'alloc MB':>12} {'freed MB':>12} {'net MB':>12}")
        for g in interval["groups"]:
            key = str(g["key"]) or "(none)"
            lines.append(f"{key[:28]:<28} {g['blocks']:>7} {g['allocated_mb']:>12,.3f} {g['freed_mb']:>12,.3f} "
                         f"{g['net_mb']:>+12,.3f}")
        return lines
    for op in interval["ops"]:
        what = "alloc+free" if op["allocated_in"] and op["freed_in"] else "alloc" if op["allocated_in"] else "free"
        lines.append(f"{op['size_mb']:>12,.3f} MB  {what:<10} {op['component']:<3} stream {op['stream'] or '-':<12} "
                     f"{op['name']}")
    return lines


def _peak_time(device: dict) -> str:
    """When the peak happened, as the window shows it: milliseconds after the device's first allocator
    sample (the profile's raw clock, microseconds since the epoch, follows in brackets)."""
    ts = device.get("peak_ts_us")
    if ts is None:
        return f"at node {device.get('peak_node_index')}"
    first = device.get("first_sample_ts_us")
    if first is None:
        return f"at {ts:,.3f} us (the profile's clock)"
    return f"at {(ts - first) / 1000:,.3f} ms after the first sample (clock {ts:.3f} us)"


def open_memory(folder: Path, series_points: int | None = None, interval: Interval | None = None,
                blocks: bool = False) -> MemoryReport:
    """The memory report of a rank folder, an ASCEND_PROFILER_OUTPUT, a cluster folder or a static_op_mem.csv.

    With ``series_points``, each device with allocator samples also gets ``series``: its allocated and
    reserved curve over time, thinned to about that many points with the peak kept (see :mod:`.series`).
    With ``interval``, each device gets ``interval``: the blocks allocated or freed in it
    (:func:`.interval.interval_ops`). With ``blocks``, each device gets ``blocks``, its operator blocks
    as columns (for the window's own interval queries and for :mod:`.compare`).
    """
    folder = Path(folder)
    if folder.is_file() and folder.name == STATIC:
        return MemoryReport(read_static(folder), {"kind": "static", "files": [str(folder)]})
    outputs = _outputs(folder)
    if not outputs:
        raise UserError("No ASCEND_PROFILER_OUTPUT folder here", folder,
                        "Give a rank's *_ascend_pt folder, its ASCEND_PROFILER_OUTPUT, or a folder of ranks.")
    report, kinds, notes = MemoryReport(), set(), []
    for output in outputs:
        db = next((output / n for n in sorted(os.listdir(output)) if _DB.match(n)), None)
        text = (output / RECORD).is_file() or (output / MODULE).is_file() or npu_mem_file(output) is not None
        label = output.parent.name if output.name == OUTPUT else output.name
        if db is not None:
            devices, kind = read_db(db), "db"
            if text:
                notes.append(f"{label}: text and db both present, the db was read")
        elif text:
            devices, kind = read_text(output), "text"
        else:
            devices, kind = {}, None
        for device in devices.values():
            entry = {"rank_folder": label, **device_peak(device)}
            if series_points and entry["peak_allocated_mb"] is not None:
                entry["series"] = device_series(device, series_points)
            if interval is not None or blocks:
                columns = block_columns(device.blocks)
                if blocks:
                    entry["blocks"] = columns
                if interval is not None:
                    entry["interval"] = _query(entry, columns, interval)
            report.devices.append(entry)
        if kind:
            kinds.add(kind)
        if (output / STATIC).is_file():
            report.devices.extend({"rank_folder": label, **d} for d in read_static(output / STATIC))
            kinds.add("static")
    if not report.devices:
        raise UserError(f"No memory data: no {RECORD}, ascend_pytorch_profiler_*.db or {STATIC} in "
                        f"{', '.join(str(o) for o in outputs[:3])}", folder,
                        "Profile with profile_memory=True (torch_npu) so the memory files are written.")
    report.source = {"kind": "/".join(sorted(kinds)), "files": sorted({f for d in report.devices for f in d["files"]}),
                     "note": "; ".join(notes)}
    return report


def time_origin_us(device: dict, columns: dict) -> float | None:
    """Where a device's clock starts for the user: its first allocator sample, else its first block."""
    if device.get("first_sample_ts_us") is not None:
        return device["first_sample_ts_us"]
    return min(columns["alloc_ts_us"], default=None)


def _query(device: dict, columns: dict, interval: Interval) -> dict:
    origin = time_origin_us(device, columns)
    if origin is None:
        return {"from_ms": 0.0, "to_ms": 0.0, "bounds_note": " (no blocks recorded)", "min_kb": interval.min_kb,
                "group": interval.group, **interval_ops(columns, 0.0, -1.0)}
    ends = [t for t in columns["alloc_ts_us"] + columns["release_ts_us"] if t is not None]
    end_ms = (max(ends + [device.get("peak_ts_us") or origin]) - origin) / 1000
    notes = []
    if interval.from_ms is None:
        notes.append("from the start (no --from)")
    if interval.to_ms is None:
        notes.append("to the end (no --to)")
    start = 0.0 if interval.from_ms is None else interval.from_ms
    stop = end_ms if interval.to_ms is None else interval.to_ms
    result = interval_ops(columns, origin + start * 1000, origin + stop * 1000, interval.min_kb, interval.group)
    return {"from_ms": start, "to_ms": stop, "bounds_note": f" ({', '.join(notes)})" if notes else "",
            "min_kb": interval.min_kb, "group": interval.group, **result}


def _outputs(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    if folder.name == OUTPUT or (folder / RECORD).is_file() or (folder / STATIC).is_file():
        return [folder]
    found = []
    for dirpath, dirnames, _ in os.walk(folder):
        if len(Path(dirpath).relative_to(folder).parts) >= MAX_DEPTH:
            dirnames[:] = []
            continue
        dirnames.sort()
        if OUTPUT in dirnames:
            found.append(Path(dirpath) / OUTPUT)
            dirnames.remove(OUTPUT)
    return found
