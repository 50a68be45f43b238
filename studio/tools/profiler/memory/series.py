"""A device's allocator curve over time, thinned for drawing without losing its peak.

The curve is the samples of the allocator :mod:`.peak` reads (PTA+GE, else PTA or GE). A long
profile holds hundreds of thousands of samples; :func:`downsample` keeps, per bucket of
consecutive samples, the lowest and highest of each series, so the drawn line has the same
envelope and the peak the report names is one of the points kept.
"""

from __future__ import annotations

import numpy as np

from studio.tools.profiler.memory.records import COMPONENTS, DeviceMemory, Sample


def allocator_samples(device: DeviceMemory) -> tuple[str | None, list[Sample]]:
    """The allocator whose totals are the device's, and its samples with an allocated value."""
    component = next((c for c in COMPONENTS if any(s.component == c for s in device.samples)), None)
    return component, [s for s in device.samples if s.component == component and s.allocated_mb is not None]


def device_series(device: DeviceMemory, max_points: int) -> dict:
    """``{component, ts_us, allocated_mb, reserved_mb, samples}``: the curve, at most ~``max_points``
    points (``samples`` is the count before thinning; a missing reserved value is NaN)."""
    component, samples = allocator_samples(device)
    samples = sorted(samples, key=lambda s: s.ts_us)  # sorted() is stable: equal times keep file order
    ts = np.array([s.ts_us for s in samples], dtype=np.float64)
    allocated = np.array([s.allocated_mb for s in samples], dtype=np.float64)
    reserved = np.array([np.nan if s.reserved_mb is None else s.reserved_mb for s in samples], dtype=np.float64)
    keep = downsample([allocated, reserved], max_points)
    out = {"component": component, "ts_us": ts[keep].tolist(), "allocated_mb": allocated[keep].tolist(),
           "reserved_mb": reserved[keep].tolist(), "samples": len(samples)}
    # the process's and the whole device's memory (NPU_MEM / APP rows, thinned the same way)
    for key, points in (("app", device.app_reserved_mb), ("device", device.device_mb)):
        points = np.array(sorted(points), dtype=np.float64).reshape(-1, 2)
        keep = downsample([points[:, 1]], max_points)
        out[f"{key}_ts_us"], out[f"{key}_mb"] = points[keep, 0].tolist(), points[keep, 1].tolist()
    return out


def downsample(series: list[np.ndarray], max_points: int) -> np.ndarray:
    """Indices to keep so that at most ~``max_points`` remain: the first and last sample, and in each
    bucket of consecutive samples the first minimum and first maximum of every series (NaN ignored)."""
    n = len(series[0]) if series else 0
    if n <= max_points:
        return np.arange(n)
    per_bucket = 2 * len(series)
    buckets = max(1, max_points // per_bucket)
    bucket = (np.arange(n) * buckets) // n          # non-decreasing: each bucket is one run of samples
    starts = np.flatnonzero(np.r_[True, np.diff(bucket) != 0])
    counts = np.diff(np.r_[starts, n])
    keep = [np.array([0, n - 1])]
    for values in series:
        for reduce in (np.fmax, np.fmin):
            extreme = np.repeat(reduce.reduceat(values, starts), counts)
            hits = np.flatnonzero(values == extreme)
            if hits.size:
                keep.append(hits[np.r_[True, np.diff(bucket[hits]) != 0]])  # the first hit of each bucket
    return np.unique(np.concatenate(keep))
