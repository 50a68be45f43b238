"""studio profile cluster --free on a big db export: the rank's dispatch chains are read in chunks
straight into columns (never a list of every row), with the values a direct query gives."""

from __future__ import annotations

import sqlite3
import tracemalloc

import numpy as np
import pytest

from studio.tools.profiler.cluster import free_sources

from db_grow import grown_db


@pytest.fixture
def grown(real_profiles, tmp_path):
    """The real rank-0 export with its step repeated to ~12 MB."""
    target = tmp_path / "ascend_pytorch_profiler_0.db"
    assert grown_db(real_profiles, target, 12_000_000) > 10
    return target


def direct(path):
    """The task rows and their CANN / PyTorch times, joined here row by row in Python."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    strings = dict(db.execute("select id, value from STRING_IDS"))
    cann = {c: (s, e) for s, e, c in db.execute("select startNs, endNs, connectionId from CANN_API")}
    links: dict = {}
    for pid, conn in db.execute("select id, connectionId from CONNECTION_IDS"):
        links.setdefault(conn, []).append(pid)
    ops: dict = {}
    for s, e, c in db.execute("select startNs, endNs, connectionId from PYTORCH_API"):
        ops.setdefault(c, []).append((s, e))
    rows = []
    for start, end, kind, conn in db.execute("select startNs, endNs, taskType, connectionId from TASK"):
        c = cann.get(conn)
        found = [op for pid in links.get(conn, []) for op in ops.get(pid, [])] or [None]
        for op in found:
            has_py = op is not None and op[0] not in (None, "") and op[1] is not None
            rows.append((start, strings.get(kind, ""), end, c[0] if c else 0, c[1] if c else 0,
                         int(op[0]) if has_py else 0, int(op[1]) if has_py else 0, c is not None, has_py))
    db.close()
    return sorted(rows)


def test_free_timeline_is_read_in_chunks_with_direct_values(grown, monkeypatch):
    monkeypatch.setattr(free_sources, "CHUNK", 1024)
    tracemalloc.start()
    try:
        timeline = free_sources.from_db(grown)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    got = sorted(zip(timeline.task_ts.tolist(), timeline.task_type.tolist(), timeline.task_end.tolist(),
                     timeline.cann_ts.tolist(), timeline.cann_end.tolist(), timeline.py_ts.tolist(),
                     timeline.py_end.tolist(), timeline.has_cann.tolist(), timeline.has_py.tolist()))
    assert got == direct(grown)
    columns = sum(np.asarray(getattr(timeline, f)).nbytes for f in (
        "busy_start", "busy_end", "task_type", "task_ts", "task_end", "cann_ts", "cann_end", "py_ts", "py_end",
        "has_cann", "has_py"))
    # the columns, a copy while the chunks are joined, and one chunk: not a Python tuple per row
    assert peak < 4 * columns, (peak, columns)
