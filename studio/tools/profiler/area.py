"""What a selected area of the timeline — a time range on some tracks (ranks, lanes) — spent its
time on: computing, communication not overlapped by computing, and free, with msprof-analyze's
meaning of the three, plus the names that took the most time there.

A slice counts as communication when its name or its track says so (``hcom_*``, HCCL, AllReduce,
AllGather, ReduceScatter, Broadcast, AllToAll, Send/Recv, "Communication"), as computing otherwise;
the run's own wrapper slices (``model_run``, iterations) count as neither. Over the chosen tracks
together: computing is the time at least one of them computes; communication not overlapped is
the time one communicates while none computes; free is the rest of the range.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from studio.tools.profiler.model import Trace
from studio.tools.profiler.stats import wrapper_mask

COMMUNICATION = re.compile(r"hcom|hccl|all_?reduce|all_?gather|reduce_?scatter|broadcast|all_?to_?all|"
                           r"(?<![a-z])send(?![a-z])|(?<![a-z])recv|receive|communication", re.IGNORECASE)
TOP = 10


@dataclass
class AreaBreakdown:
    """The split of ``[t0, t1]`` (ns) over ``tracks`` and its busiest names (ns)."""

    t0: int
    t1: int
    tracks: list[int]
    computing_ns: int = 0
    communication_not_overlapped_ns: int = 0
    free_ns: int = 0
    slices: int = 0
    top: list[tuple[str, int, int]] = field(default_factory=list)  # (name, time in the area, count)

    def shares(self) -> dict[str, float]:
        """Each part over the range (they add up to 1)."""
        span = max(1, self.t1 - self.t0)
        return {"computing": self.computing_ns / span,
                "communication_not_overlapped": self.communication_not_overlapped_ns / span,
                "free": self.free_ns / span}

    def to_dict(self) -> dict:
        return {"t0_us": self.t0 / 1e3, "t1_us": self.t1 / 1e3, "tracks": list(self.tracks),
                "computing_us": self.computing_ns / 1e3,
                "communication_not_overlapped_us": self.communication_not_overlapped_ns / 1e3,
                "free_us": self.free_ns / 1e3, "slices": self.slices,
                "top": [{"name": n, "total_us": t / 1e3, "count": c} for n, t, c in self.top]}


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length covered by the intervals ``[starts[i], ends[i])`` (overlaps counted once)."""
    if not starts.size:
        return 0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order].astype(np.int64), ends[order].astype(np.int64)
    reach = np.maximum.accumulate(e)
    # a new merged run starts where a start lies beyond everything before it
    begins = np.concatenate([[True], s[1:] > reach[:-1]])
    first = np.flatnonzero(begins)
    last = np.concatenate([first[1:] - 1, [s.size - 1]])
    return int((reach[last] - s[first]).sum())


def communication_names(trace: Trace) -> np.ndarray:
    """True per name id whose name says communication."""
    return np.array([bool(COMMUNICATION.search(name)) for name in trace.names], dtype=bool)


def breakdown(trace: Trace, t0: int, t1: int, tracks: list[int]) -> AreaBreakdown:
    """The split of ``[t0, t1]`` over ``tracks`` (see the module docstring)."""
    t0, t1 = int(t0), int(t1)
    result = AreaBreakdown(t0, t1, sorted(set(int(t) for t in tracks)))
    start = np.asarray(trace.start).astype(np.int64)
    end = start + np.asarray(trace.dur).astype(np.int64)
    chosen = np.isin(np.asarray(trace.track), np.asarray(result.tracks, dtype=np.int64))
    inside = chosen & (end > t0) & (start < t1) & ~wrapper_mask(trace)
    idx = np.flatnonzero(inside)
    a, b = np.maximum(start[idx], t0), np.minimum(end[idx], t1)
    keep = b > a
    idx, a, b = idx[keep], a[keep], b[keep]
    names = np.asarray(trace.name)[idx]
    comm_track = np.array([bool(COMMUNICATION.search(trace.track_label(t))) for t in range(len(trace.tracks))],
                          dtype=bool)
    is_comm = communication_names(trace)[names] | comm_track[np.asarray(trace.track)[idx]]
    computing = union_length(a[~is_comm], b[~is_comm])
    busy = union_length(a, b)
    result.computing_ns = computing
    result.communication_not_overlapped_ns = busy - computing
    result.free_ns = (t1 - t0) - busy
    result.slices = int(idx.size)
    if idx.size:
        totals = np.bincount(names, weights=(b - a).astype(np.float64), minlength=len(trace.names))
        counts = np.bincount(names, minlength=len(trace.names))
        for name_id in np.argsort(-totals, kind="stable")[:TOP]:
            if counts[name_id]:
                result.top.append((trace.names[name_id], int(totals[name_id]), int(counts[name_id])))
    return result
