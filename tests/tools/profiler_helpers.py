"""Helpers for the profiler tests: small synthetic traces written as the real tools write them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_trace(path: Path, events: list[dict], wrap: bool = False) -> Path:
    """Write events as a bare array (or an object with traceEvents)."""
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"} if wrap else events))
    return path


def random_x_events(n: int, seed: int = 0, tracks: int = 3) -> list[dict]:
    """n non-overlapping X events per track with random names, durations and gaps (µs floats)."""
    rng = np.random.default_rng(seed)
    events, clock = [], [0.0] * tracks
    for i in range(n):
        t = int(rng.integers(0, tracks))
        dur = float(rng.integers(1, 500)) / 4
        clock[t] += float(rng.integers(0, 100)) / 8
        events.append({"ph": "X", "name": f"op{int(rng.integers(0, 17))}", "cat": "k", "pid": 7, "tid": t,
                       "ts": clock[t], "dur": dur, "args": {"i": i}})
        clock[t] += dur
    return events
