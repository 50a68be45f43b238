"""Two runs' operator memory compared op by op: ``studio profile memory BASE --compare NEW``.

As msprof-analyze's memory compare (``compare_tools``, its "MemoryCompareStatistic" sheet) does, per
operator: the blocks' count, their total size (MB) and total allocated duration (ms: release minus
allocation, 0 for a block never released) on each side, the size difference (new − base) and the
ratio new / base (None where the base has none, msprof-analyze's ``inf``; 1 where both are 0),
rows ordered by the difference, largest growth first.

One difference, said in the output: msprof-analyze adds each block to the top-level PyTorch op that
encloses it in the trace; the memory tables name the op that allocated the block (``aten::empty_strided``,
a GE op), and that name is what Studio groups by — no trace is read. GE's ops are keyed without the
text export's ``cann::`` prefix, so a text and a db export of the same job pair their GE ops too.

Devices pair by name (``NPU:0`` with ``NPU:0``); a run with a single device pairs it with the other's
single device whatever their names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.tools.profiler.memory.records import CANN_PREFIX
from studio.tools.profiler.paired_runs import PairedRuns

NOTE = ("ops are the ones the memory tables name as allocating each block (msprof-analyze adds blocks to the "
        "top-level PyTorch op around them in the trace)")


@dataclass
class MemoryComparison(PairedRuns):
    """The paired devices of two memory reports and their op rows (``only_in_*``: device labels)."""

    devices: list[dict] = field(default_factory=list)
    note: str = NOTE

    def __str__(self) -> str:
        lines = [f"memory: {self.base} (base) -> {self.new} (new); {self.note}"]
        for d in self.devices:
            lines.append(f"{d['base_device']} -> {d['new_device']}: peak allocated "
                         f"{_mb(d['base_peak_allocated_mb'])} -> {_mb(d['new_peak_allocated_mb'])} MB, device "
                         f"{_mb(d['base_peak_device_mb'])} -> {_mb(d['new_peak_device_mb'])} MB, op blocks "
                         f"{d['base_size_mb']:,.3f} -> {d['new_size_mb']:,.3f} MB")
            lines.append(f"    {'op':<40} {'base MB':>12} {'new MB':>12} {'diff MB':>12} {'ratio':>8} "
                         f"{'blocks':>11} {'base ms':>11} {'new ms':>11}")
            for r in d["ops"]:
                ratio = "new" if r["ratio"] is None else f"{r['ratio']:.4f}"
                name = r["op"] if len(r["op"]) <= 40 else r["op"][:39] + "…"
                lines.append(f"    {name:<40} {r['base_size_mb']:>12,.3f} {r['new_size_mb']:>12,.3f} "
                             f"{r['diff_size_mb']:>+12,.3f} {ratio:>8} {r['base_blocks']:>5}/{r['new_blocks']:<5} "
                             f"{r['base_duration_ms']:>11,.3f} {r['new_duration_ms']:>11,.3f}")
        for side in ("base", "new"):
            names = [name for where, name in self.one_sided() if where == side]
            if names:
                lines.append(f"only in {side} (not compared): {', '.join(names)}")
        return "\n".join(lines)


def op_key(name: str) -> str:
    """The name ops pair by: GE's ``cann::`` prefix (text export only) dropped."""
    return name[len(CANN_PREFIX):] if name.startswith(CANN_PREFIX) else name


def op_totals(columns: dict[str, list]) -> dict[str, dict]:
    """Per op key: ``{op, component, blocks, size_mb, duration_ms}`` of a device's block columns."""
    out: dict[str, dict] = {}
    for name, size, alloc, release, component in zip(columns["name"], columns["size_mb"], columns["alloc_ts_us"],
                                                      columns["release_ts_us"], columns["component"]):
        row = out.setdefault(op_key(name), {"op": op_key(name), "component": component, "blocks": 0,
                                            "size_mb": 0.0, "duration_ms": 0.0})
        row["blocks"] += 1
        row["size_mb"] += size
        row["duration_ms"] += 0.0 if release is None else (release - alloc) / 1000
    return out


def compare_devices(base: dict, new: dict) -> dict:
    """One device pair (memory report entries carrying ``blocks`` columns): totals and the op rows."""
    b, n = op_totals(base["blocks"]), op_totals(new["blocks"])
    rows = []
    for key in sorted(set(b) | set(n)):
        bb, nn = b.get(key), n.get(key)
        base_mb, new_mb = (bb or {}).get("size_mb", 0.0), (nn or {}).get("size_mb", 0.0)
        rows.append({"op": key, "component": (bb or nn)["component"],
                     "base_blocks": (bb or {}).get("blocks", 0), "new_blocks": (nn or {}).get("blocks", 0),
                     "base_size_mb": base_mb, "new_size_mb": new_mb, "diff_size_mb": new_mb - base_mb,
                     "ratio": 1.0 if not base_mb and not new_mb else None if not base_mb else new_mb / base_mb,
                     "base_duration_ms": (bb or {}).get("duration_ms", 0.0),
                     "new_duration_ms": (nn or {}).get("duration_ms", 0.0)})
    rows.sort(key=lambda r: (-r["diff_size_mb"], r["op"]))
    entry = {"base_device": _label(base), "new_device": _label(new),
             "base_size_mb": sum(r["base_size_mb"] for r in rows), "new_size_mb": sum(r["new_size_mb"] for r in rows),
             "ops": rows}
    for key in ("peak_allocated_mb", "peak_reserved_mb", "peak_app_reserved_mb", "peak_device_mb"):
        entry[f"base_{key}"], entry[f"new_{key}"] = base.get(key), new.get(key)
    return entry


def compare_reports(base: dict, new: dict, base_name: str, new_name: str) -> MemoryComparison:
    """Pair the devices of two memory reports (as JSON, devices with ``blocks``) and compare each pair."""
    result = MemoryComparison(base_name, new_name)
    b = [d for d in base["devices"] if d.get("blocks") is not None]
    n = [d for d in new["devices"] if d.get("blocks") is not None]
    if len(b) == 1 and len(n) == 1:
        pairs = [(b[0], n[0])]
    else:
        by_name = {d["device"]: d for d in n}
        pairs = [(d, by_name[d["device"]]) for d in b if d["device"] in by_name]
        result.only_in_base = [_label(d) for d in b if d["device"] not in by_name]
        paired = {d["device"] for d in b}
        result.only_in_new = [_label(d) for d in n if d["device"] not in paired]
    result.devices = [compare_devices(x, y) for x, y in pairs]
    return result


def _label(device: dict) -> str:
    return f"{device.get('rank_folder', '')} {device['device']}".strip()


def _mb(value) -> str:
    return "-" if value is None else f"{value:,.3f}"
