"""Host gaps: the device sits idle while the host sleeps or waits.

Device busy time is the union of the slices on the device tracks (processes labelled NPU, or
msprof's "Ascend Hardware"). A gap between two busy stretches of at least 1 ms and 5 % of the
reference time (the step, or the device span when no step is known) is reported with the host
ranges that cover it — msprofTx ranges and host threads — and the number of host API calls made
inside it: none means the host was sleeping or blocked (the seed case: a forgotten 5 s sleep in
stream creation, found through its msproftx range).
"""

from __future__ import annotations

import numpy as np

from studio.tools.advisor.model import Finding, severity_for

MIN_GAP_NS = 1_000_000
MIN_GAP_SHARE = 0.05
API_PROCESSES = ("CANN", "AscendCL", "Runtime", "GE", "HCCL API")
GAIN_METHOD = "the device idle time (saved in full only when the wait is removed, not just shortened)"


def device_tracks(trace) -> list[int]:
    """Track ids on the device (NPU-labelled processes, msprof's Ascend Hardware)."""
    return [t.id for t in trace.tracks
            if "NPU" in (t.labels or "").upper() or t.process.startswith("Ascend Hardware")]


def busy_intervals(trace, tracks: list[int]) -> np.ndarray:
    """Merged [start, end] rows (ns) of the slices on ``tracks``."""
    mask = np.isin(np.asarray(trace.track), np.asarray(tracks, dtype=np.int32))
    starts, ends = np.asarray(trace.start)[mask], np.asarray(trace.end)[mask]
    if not starts.size:
        return np.zeros((0, 2), np.int64)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    # a new interval starts where a slice begins after everything before it ended
    new = np.ones(starts.size, bool)
    new[1:] = starts[1:] > ends[:-1]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, starts.size - 1]
    return np.stack([starts[first], ends[last]], axis=1)


def check(ctx) -> list[Finding]:
    trace = ctx.trace
    if trace is None or not trace.size:
        return []
    tracks = device_tracks(trace)
    busy = busy_intervals(trace, tracks) if tracks else np.zeros((0, 2), np.int64)
    if busy.shape[0] < 2:
        return []
    span_ns = int(busy[-1, 1] - busy[0, 0])
    gaps = np.stack([busy[:-1, 1], busy[1:, 0]], axis=1)
    lengths = gaps[:, 1] - gaps[:, 0]
    step_ms = ctx.step_ms
    ref_ns = step_ms * 1e6 if step_ms else span_ns
    ref_label = f"the {step_ms:.3f} ms step" if step_ms else f"the {span_ns / 1e6:.3f} ms device span"
    big = np.flatnonzero((lengths >= MIN_GAP_NS) & (lengths >= MIN_GAP_SHARE * ref_ns))
    if not big.size:
        return []
    device_ids = set(tracks)
    host_mask = ~np.isin(np.asarray(trace.track), np.asarray(sorted(device_ids), dtype=np.int32))
    api_ids = np.asarray([t.id for t in trace.tracks if t.process in API_PROCESSES], dtype=np.int32)
    findings = []
    for rank, g in enumerate(big[np.argsort(-lengths[big])][:5]):
        t0, t1 = int(gaps[g, 0]), int(gaps[g, 1])
        ms = (t1 - t0) / 1e6
        starts, ends = np.asarray(trace.start), np.asarray(trace.end)
        overlap = np.minimum(ends, t1) - np.maximum(starts, t0)
        covering = np.flatnonzero(host_mask & (overlap >= 0.5 * (t1 - t0)))
        inside_api = np.flatnonzero(np.isin(np.asarray(trace.track), api_ids) & (starts >= t0) & (ends <= t1))
        evidence = [f"device idle {ms:.3f} ms from {t0 / 1e6:.3f} ms to {t1 / 1e6:.3f} ms "
                    f"({(t1 - t0) / ref_ns:.1%} of {ref_label}; union of {len(tracks)} device track(s) in "
                    f"{ctx.profile_label})"]
        if covering.size:
            deepest = covering[np.argsort(-np.asarray(trace.depth)[covering])][:3]
            evidence.append("host ranges covering it: " + "; ".join(
                f"{trace.slice_name(i)!r} on {trace.track_label(int(trace.track[i]))} "
                f"({int(trace.dur[i]) / 1e6:.3f} ms)" for i in deepest))
        if not host_mask.any():
            evidence.append("the profile holds no host data (only device tasks): collect host APIs or msprofTx "
                            "ranges to see what the host did meanwhile")
            what, fix = "between device tasks", _FIX_WITHOUT_HOST
        else:
            api_ms = float(np.asarray(trace.dur)[inside_api].sum()) / 1e6 if inside_api.size else 0.0
            names = ", ".join(sorted({trace.slice_name(i) for i in inside_api[:20]}))
            evidence.append(f"{inside_api.size} host API call(s) inside the gap, busy {api_ms:.3f} ms of it"
                            + (f" ({names})" if names else "")
                            + (": the host was sleeping or blocked, not feeding the device" if api_ms < 0.1 * ms
                               else ""))
            what = (f"inside {trace.slice_name(int(covering[0]))!r}" if covering.size else "between device tasks")
            fix = _FIX_WITH_HOST
        findings.append(Finding(
            "host-gap", f"Device idle {ms:,.1f} ms {what}", severity_for(ms, ref_ns / 1e6), "host",
            evidence, fix, ms, ms, [], time_ranges=[(t0, t1)], gain_method=GAIN_METHOD))
        if rank == 0 and ms * 1e6 < 0.2 * ref_ns:
            break
    return findings


_FIX_WITHOUT_HOST = ("Profile with host data (msprof --task-time / --msproftx, or the PyTorch profiler) to see what "
                     "the host does in this range; remove the wait or overlap it with device work.")
_FIX_WITH_HOST = ("Find what the host does in this range (a sleep, a lock, synchronous I/O, pre-processing on the "
                  "critical path); remove it or overlap it with device work (a second stream, async copies).")
