"""The Cluster panel's Memory tab (the device total, an interval dragged on the curve and its blocks,
grouped and filtered) and its Compare tab (a second folder of ranks against the open one), on the
real 2-rank exports, each figure checked against plain sqlite / csv sums."""

from __future__ import annotations

import csv
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from tests.ui.cluster_helpers import open_report, panel, real, show_tab  # noqa: F401 - the fixtures
from studio.ui.panels.cluster.widgets.tables import cell_values

TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"
DB = "cluster_pytorch/msinsight_db_2rank_level2/level2"
MB = 1024 * 1024


def _db_path(real: Path, rank: int) -> Path:
    return real / DB / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{rank}.db"


def _sqlite_interval(path: Path, start_ms: float, end_ms: float, min_kb: float) -> tuple[float, dict]:
    """(the device's max NPU_MEM device row in MB, per component [allocated MB, freed MB]) from sqlite."""
    with sqlite3.connect(path) as db:
        device = db.execute("SELECT max(hbm) FROM NPU_MEM n JOIN STRING_IDS s ON s.id = n.type "
                            "WHERE s.value = 'device'").fetchone()[0] / MB
        first = db.execute("SELECT min(timestamp) FROM MEMORY_RECORD m JOIN STRING_IDS s ON s.id = m.component "
                           "WHERE s.value = 'PTA+GE' AND totalAllocated IS NOT NULL").fetchone()[0]
        t0, t1 = first + start_ms * 1e6, first + end_ms * 1e6
        out = defaultdict(lambda: [0.0, 0.0])
        for name, size, alloc, release in db.execute(
                "SELECT s.value, size, allocationTime, releaseTime FROM OP_MEMORY o JOIN STRING_IDS s ON s.id = o.name "
                "WHERE size >= ?", (min_kb * 1024,)):
            ge = db.execute("SELECT 1 FROM NPU_OP_MEM n JOIN STRING_IDS s ON s.id = n.operatorName WHERE s.value = ?",
                            (name,)).fetchone()
            key = "GE" if ge else "PTA"
            if t0 <= alloc <= t1:
                out[key][0] += size / MB
            if release is not None and t0 <= release <= t1:
                out[key][1] += size / MB
    return device, dict(out)


def test_memory_tab_shows_the_device_total_and_the_interval_blocks(qtbot, panel, real):
    open_report(qtbot, panel, real / DB)
    show_tab(qtbot, panel, panel.memory_stack)
    tab = panel.memory_tab
    tab.show_device(0)
    device_mb, plain = _sqlite_interval(_db_path(real, 0), 40.0, 50.0, 1024.0)
    assert f"device total {device_mb:,.3f} MB" in tab.summary.text()
    assert max(tab.chart.curves["device"][1]) == pytest.approx(device_mb)
    assert tab.chart.interval() is not None and tab.lower.currentWidget() is tab.interval
    tab.interval.min_kb.setValue(1024)
    tab.chart.set_interval(40.0, 50.0)
    assert tab.chart.interval() == pytest.approx((40.0, 50.0))
    rows = cell_values(tab.interval.table)
    assert rows and all(r[1] * 1024 >= 1024 for r in rows)
    assert sum(r[1] for r in rows if r[2] != "freed") == pytest.approx(sum(v[0] for v in plain.values()))
    assert sum(r[1] for r in rows if r[2] != "allocated") == pytest.approx(sum(v[1] for v in plain.values()))
    assert {r[3] for r in rows} == {"PTA", "GE"}
    tab.interval.group.setCurrentIndex(tab.interval.group.findData("component"))
    grouped = {r[0]: (r[3], r[5]) for r in cell_values(tab.interval.table)}
    assert tab.interval.table.model().headers[0] == "Component"
    assert grouped.keys() == plain.keys()
    for key, (allocated, freed) in plain.items():
        assert grouped[key] == pytest.approx((allocated, freed))
    tab.interval.group.setCurrentIndex(tab.interval.group.findData("stream"))
    streams = cell_values(tab.interval.table)
    assert sum(r[3] for r in streams) == pytest.approx(sum(v[0] for v in plain.values()))
    assert any(r[0].startswith("(none") for r in streams)  # GE's own blocks have no stream


def test_text_export_says_the_device_total_is_missing(qtbot, panel, real):
    open_report(qtbot, panel, real / TEXT)
    show_tab(qtbot, panel, panel.memory_stack)
    tab = panel.memory_tab
    assert "device total not in this export" in tab.summary.text()
    assert "device" not in tab.chart.curves and "app" in tab.chart.curves


def test_compare_tab_shows_the_second_folder_against_the_first(qtbot, panel, real):
    open_report(qtbot, panel, real / DB)
    assert panel.compare.stack.currentWidget() is panel.compare.message
    handle = panel.compare.compare_with(real / TEXT)
    qtbot.waitUntil(lambda: not handle.active, timeout=120000)
    assert panel.compare.result is not None, panel.compare.message.text()
    steps = cell_values(panel.compare.steps)
    assert [r[0] for r in steps] == [0, 1]
    for row in steps:
        rank = row[0]
        with sqlite3.connect(real / DB / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db") as db:
            base = sum(db.execute("SELECT computing, communication_not_overlapped, free FROM StepTraceTime "
                                  "WHERE step = 50").fetchone())
        with open(real / TEXT / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv") as f:
            r = next(csv.DictReader(f))
        new = float(r["Computing"]) + float(r["Communication(Not Overlapped)"]) + float(r["Free"])
        assert row[1] == "50"
        assert (row[2], row[3], row[4]) == pytest.approx((base / 1000, new / 1000, (new - base) / 1000))
        assert row[5] == f"{(new - base) / base:+.1%}"
        assert "not judged" in row[-1]  # one step a side: no significance claimed
    links = cell_values(panel.compare.links)
    cluster = panel.compare.result["cluster"]
    assert len(links) == len(cluster["links"]) > 0
    op_links = cell_values(panel.compare.op_links)
    assert {r[1] for r in op_links} == {r["op_type"] for r in cluster["op_links"]}
    memory = cell_values(panel.compare.memory)
    with sqlite3.connect(_db_path(real, 0)) as db:
        base_mb = db.execute("SELECT sum(size) FROM OP_MEMORY").fetchone()[0] / MB
    assert sum(r[3] for r in memory if r[1].startswith("rank0")) == pytest.approx(base_mb)
    assert [r[5] for r in memory] == sorted((r[5] for r in memory), reverse=True)
    open_report(qtbot, panel, real / TEXT)  # a new baseline: the comparison no longer applies
    assert panel.compare.result is None and panel.compare.stack.currentWidget() is panel.compare.message
