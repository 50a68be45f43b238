"""A device's peak and the operator blocks alive at it.

The device's allocator totals are PTA+GE's when PyTorch and GE both allocate, else PTA's or GE's
(see :data:`~.records.COMPONENTS`). The peak is the first sample with the highest Total
Allocated; a block is alive at it when it was allocated at or before the peak and released after
it (or never, within the profile). Reserved is the highest Total Reserved of the same allocator;
the process's own reservation (the APP rows / NPU_MEM "app") and the whole device's memory in use
(NPU_MEM "device" rows of the db export, npu_mem.csv of the text export) are given beside it.
"""

from __future__ import annotations

from studio.tools.profiler.memory.records import DeviceMemory
from studio.tools.profiler.memory.series import allocator_samples

TOP = 10


def device_peak(device: DeviceMemory) -> dict:
    """The device entry of the memory report."""
    component, samples = allocator_samples(device)
    entry = {"device": device.device, "component": component, "peak_allocated_mb": None,
             "peak_reserved_mb": None, "peak_ts_us": None, "first_sample_ts_us": None, "top_ops_at_peak": [],
             "peak_app_reserved_mb": max((mb for _, mb in device.app_reserved_mb), default=None),
             # the whole device's memory in use (NPU_MEM's "device" rows: every process and the driver)
             "peak_device_mb": max((mb for _, mb in device.device_mb), default=None),
             "modules": [{"component": k, "peak_reserved_mb": v}
                         for k, v in sorted(device.modules.items(), key=lambda kv: -kv[1]) if v > 0][:TOP],
             "files": device.files}
    if not samples:
        return entry
    peak = max(samples, key=lambda s: s.allocated_mb)  # max() keeps the first of equal values
    reserved = [s.reserved_mb for s in device.samples if s.component == component and s.reserved_mb is not None]
    alive = [b for b in device.blocks if b.alloc_ts_us <= peak.ts_us
             and (b.release_ts_us is None or b.release_ts_us > peak.ts_us) and b.size_mb > 0]
    alive.sort(key=lambda b: (-b.size_mb, b.alloc_ts_us))
    entry.update(peak_allocated_mb=peak.allocated_mb, peak_reserved_mb=max(reserved, default=None),
                 peak_ts_us=peak.ts_us, first_sample_ts_us=min(s.ts_us for s in samples),
                 alive_blocks_at_peak=len(alive),
                 alive_mb_at_peak=sum(b.size_mb for b in alive),
                 top_ops_at_peak=[{"name": b.name, "size_mb": b.size_mb, "alloc_ts_us": b.alloc_ts_us,
                                   "release_ts_us": b.release_ts_us} for b in alive[:TOP]])
    return entry
