"""Peak compute and memory bandwidth of the devices the roofline can be drawn for.

The built-in table cites where each figure comes from; figures derived or assumed rather than
published are marked ``estimate``. Users edit the table: entries in
``<config>/advisor_devices.json`` (a list of objects with the fields of :class:`Device`) replace
built-in ones of the same name or add new ones. ``this computer`` is measured by
:mod:`.microbench` and kept in the user cache with its date and the machine's identity
(:mod:`.roof_cache`), not in this table: an entry of that name here (what older versions wrote,
with no date or machine) is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError
from studio.core.serial import from_json, to_json

TFLOPS = 1e12
GBPS = 1e9
THIS_COMPUTER = "this computer"


@dataclass
class Device:
    """Peak FLOP/s for FP16 (and INT8 ops/s, FP32 FLOP/s when known) and bytes/s of memory."""

    name: str
    fp16_flops: float
    bandwidth: float
    int8_ops: float | None = None
    fp32_flops: float | None = None
    source: str = ""
    estimate: bool = False
    note: str = ""
    bandwidths: list[list[float]] | None = None  # [working set bytes, bytes/s] measured, by size (caches)

    def peak(self, dtype: str | None) -> float:
        """The peak for a model's compute dtype (FP32 runs at the FP16 rate on Ascend's Cube
        after ATC's default precision mode converts it; a measured CPU has an FP32 figure)."""
        if dtype in ("int8", "uint8") and self.int8_ops:
            return self.int8_ops
        if dtype in ("float32", None) and self.fp32_flops:
            return self.fp32_flops
        return self.fp16_flops

    def bandwidth_at(self, working_set: float) -> float:
        """The memory roof for an op moving ``working_set`` bytes: with a measured curve, the best
        bandwidth measured at this size or larger, from the measured size just below it (an upper
        bound: smaller sets sit in faster caches); without one, :attr:`bandwidth`."""
        if not self.bandwidths:
            return self.bandwidth
        curve = sorted((float(s), float(b)) for s, b in self.bandwidths)
        below = [k for k, (s, _) in enumerate(curve) if s <= working_set]
        start = below[-1] if below else 0
        return max(b for _, b in curve[start:])

    @property
    def ridge(self) -> float:
        """FLOP per byte where the memory roof meets the compute roof (FP16)."""
        return self.fp16_flops / self.bandwidth


BUILTIN: tuple[Device, ...] = (
    Device("Ascend 310", 8 * TFLOPS, 51.2 * GBPS, int8_ops=16 * TFLOPS,
           source="Huawei Ascend 310 product brief: 8 TFLOPS FP16, 16 TOPS INT8. Bandwidth: Atlas 300I "
                  "(model 3000) datasheet, 4x Ascend 310 with 204.8 GB/s LPDDR4X in total, divided by 4",
           estimate=True, note="bandwidth per chip derived from a card total"),
    Device("Ascend 310P3", 70 * TFLOPS, 204.8 * GBPS, int8_ops=140 * TFLOPS,
           source="Atlas 300I Pro inference card datasheet (one Ascend 310P3): 140 TOPS INT8, "
                  "70 TFLOPS FP16, LPDDR4X 204.8 GB/s"),
    Device("Ascend 910", 256 * TFLOPS, 1200 * GBPS, int8_ops=512 * TFLOPS,
           source="Huawei Ascend 910 launch (Aug 2019) and Hot Chips 31 Da Vinci talk: 256 TFLOPS FP16, "
                  "512 TOPS INT8; 4x HBM2, 1.2 TB/s"),
)


def merge_roofs(old: Device, new: Device) -> Device:
    """``new`` with every figure raised to ``old``'s where that was higher (two measurements of the
    same machine: the better one is nearer its peak), its source naming both."""
    curve = None
    if new.bandwidths:
        before = {int(s): b for s, b in (old.bandwidths or [])}
        curve = [[s, max(b, before.get(int(s), 0.0))] for s, b in new.bandwidths]
    return Device(new.name, max(new.fp16_flops, old.fp16_flops), max(new.bandwidth, old.bandwidth),
                  new.int8_ops, max(new.fp32_flops or 0.0, old.fp32_flops or 0.0) or None,
                  f"{new.source}; kept the higher of these and an earlier measurement ({old.source})"[:2000],
                  new.estimate, new.note, curve)


def devices_file() -> Path:
    """Where user edits of the table live."""
    from studio.core.paths import config_dir

    return config_dir() / "advisor_devices.json"


def load_devices(path: Path | None = None) -> dict[str, Device]:
    """Built-in devices updated by the user's file (name -> Device)."""
    table = {d.name: d for d in BUILTIN}
    path = path or devices_file()
    if not path.is_file():
        return table
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        for entry in data:
            device = from_json(Device, entry)  # keys of newer versions ignored
            if device.name != THIS_COMPUTER:  # measured, with its date and machine: see roof_cache
                table[device.name] = device
    except (OSError, ValueError, TypeError, UserError) as exc:
        raise UserError(f"The device table is not valid: {exc}", path,
                        "Fix or delete the file; each entry needs name, fp16_flops (FLOP/s) and "
                        "bandwidth (bytes/s).") from exc
    return table


def save_device(device: Device, path: Path | None = None) -> Path:
    """Add or replace ``device`` in the user's file (atomically)."""
    path = path or devices_file()
    entries = []
    if path.is_file():
        try:
            entries = [e for e in json.loads(path.read_text(encoding="utf-8")) if e.get("name") != device.name]
        except (OSError, ValueError, AttributeError):
            entries = []
    entries.append(to_json(device))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(entries, indent=1), encoding="utf-8")
    tmp.replace(path)
    return path


def device_for_facts(facts: dict[str, str], table: dict[str, Device]) -> Device | None:
    """The device a profile names in its facts (msprof's ``device: Ascend910B``), if known."""
    text = (facts.get("device") or "").replace(" ", "").lower()
    if not text:
        return None
    best = None
    for name, device in table.items():
        key = name.replace(" ", "").lower()
        if key and key in text and (best is None or len(key) > len(best.name.replace(" ", ""))):
            best = device
    return best
