"""``open_memory``: every ASCEND_PROFILER_OUTPUT under a folder, its devices' peaks."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.serial import to_json
from studio.tools.profiler.memory.db import read_db
from studio.tools.profiler.memory.peak import device_peak
from studio.tools.profiler.memory.series import device_series
from studio.tools.profiler.memory.static import FILE as STATIC, read_static
from studio.tools.profiler.memory.text import MODULE, RECORD, read_text

OUTPUT = "ASCEND_PROFILER_OUTPUT"
_DB = re.compile(r"^ascend_pytorch_profiler(_\d+)?\.db$")
MAX_DEPTH = 6


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
            for op in d["top_ops_at_peak"]:
                lines.append(f"    {op['size_mb']:>12,.3f} MB  {op['name']}")
        return "\n".join(lines)


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


def open_memory(folder: Path, series_points: int | None = None) -> MemoryReport:
    """The memory report of a rank folder, an ASCEND_PROFILER_OUTPUT, a cluster folder or a static_op_mem.csv.

    With ``series_points``, each device with allocator samples also gets ``series``: its allocated and
    reserved curve over time, thinned to about that many points with the peak kept (see :mod:`.series`).
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
        text = (output / RECORD).is_file() or (output / MODULE).is_file()
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
