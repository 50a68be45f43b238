"""The computing / communication / free split of a timeline area equals a brute-force count."""

from __future__ import annotations

import json

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.profiler.area import breakdown, union_length
from studio.tools.profiler.loader import open_profile


def test_union_length_counts_overlaps_once():
    rng = np.random.default_rng(3)
    starts = rng.integers(0, 1000, 200)
    ends = starts + rng.integers(1, 60, 200)
    covered = np.zeros(1100, bool)
    for s, e in zip(starts, ends):
        covered[s:e] = True
    assert union_length(starts, ends) == covered.sum()
    assert union_length(np.zeros(0), np.zeros(0)) == 0


@pytest.fixture
def trace(tmp_path):
    """Two ranks: compute kernels, HCCL ops on their own lane, and a model_run wrapper over all."""
    rng = np.random.default_rng(5)
    events = []
    for rank in (0, 1):
        events.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": f"rank{rank}"}})
        events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": 2, "args": {"name": "HCCL"}})
        events.append({"ph": "X", "name": "model_run", "pid": rank, "tid": 1, "ts": 0, "dur": 5000})
        t = 0
        for i in range(40):
            dur = int(rng.integers(20, 90))
            events.append({"ph": "X", "name": ["MatMul", "Conv2D", "hcom_allReduce__1"][i % 3], "pid": rank,
                           "tid": 1, "ts": t, "dur": dur})
            t += dur + int(rng.integers(0, 40))
        t = 300
        for i in range(10):
            events.append({"ph": "X", "name": f"ring_step_{i}", "pid": rank, "tid": 2, "ts": t, "dur": 70})
            t += 200
    path = tmp_path / "t.json"
    path.write_text(json.dumps(events))
    return run_job(open_profile(path)), events


def _brute(events, pids, t0, t1):
    """µs grid: what each microsecond of the range holds on the chosen ranks."""
    compute = np.zeros(t1 - t0, bool)
    comm = np.zeros(t1 - t0, bool)
    for e in events:
        if e["ph"] != "X" or e["pid"] not in pids or e["name"] == "model_run":
            continue
        a, b = max(e["ts"], t0) - t0, min(e["ts"] + e["dur"], t1) - t0
        if b <= a:
            continue
        (comm if e["tid"] == 2 or e["name"].startswith("hcom") else compute)[a:b] = True
    return compute.sum(), (comm & ~compute).sum(), (~(comm | compute)).sum()


@pytest.mark.parametrize("ranks, t0, t1", [((0,), 100, 2100), ((0, 1), 0, 3000), ((1,), 1234, 1567)])
def test_area_split_equals_a_microsecond_count(trace, ranks, t0, t1):
    trace, events = trace
    tracks = [t for t in range(len(trace.tracks)) if trace.tracks[t].process in {f"rank{r}" for r in ranks}]
    result = breakdown(trace, t0 * 1000, t1 * 1000, tracks)
    computing, comm, free = _brute(events, set(ranks), t0, t1)
    assert (result.computing_ns, result.communication_not_overlapped_ns, result.free_ns) == \
        (computing * 1000, comm * 1000, free * 1000)
    assert sum(result.shares().values()) == pytest.approx(1.0)
    assert "model_run" not in [name for name, _, _ in result.top]
    names = [name for name, _, _ in result.top]
    assert names and set(names) <= {"MatMul", "Conv2D", "hcom_allReduce__1"} | {f"ring_step_{i}" for i in range(10)}
