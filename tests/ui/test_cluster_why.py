"""The Cluster panel's Links by op and Idle gaps tabs: the matrix per op type with each link's share
of its reference bandwidth (real 2-rank and 4-rank exports), and every idle gap labelled, filtered by
rank and cause, a double-click showing the gap on its rank's timeline (synthetic cluster whose slow
host is known by construction). Screenshots at 1,280 × 720 go to STUDIO_SHOTS when it is set."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest


from tests.ui.cluster_helpers import open_and_wait, panel, shot  # noqa: F401 - the fixture
from tests.tools import synthetic_cluster

QWEN = "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"
TEXT2 = "cluster_pytorch/msinsight_text_2rank_level2/level2"


def test_links_by_op_show_each_op_types_links_and_reference(qtbot, panel, real_profiles):
    open_and_wait(qtbot, panel, real_profiles / TEXT2, panel.op_links)
    rows = panel.op_links.table.model().rows
    # independent of Studio: rank 0's own communication_matrix.json holds its all-reduce total to rank 1
    raw = json.loads((real_profiles / TEXT2 / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/communication_matrix.json")
                     .read_text())
    link = raw["step50"]["collective"]["allreduce-total@11022204950826225271"]["0-1"]
    row = next(r for r in rows if r[4] == "0->1")
    assert row[0] == "allreduce" and row[1] == "total" and row[5] == "HCCS"
    assert row[6] == pytest.approx(link["Transit Size(MB)"]) and row[7] == pytest.approx(link["Transit Time(ms)"])
    share = link["Transit Size(MB)"] / link["Transit Time(ms)"] / 18.0
    assert row[9] == f"{share:.0%} of 18" and share < 1
    assert "is 83% of the HCCS reference 18 GB/s" in panel.op_links.findings.toPlainText()
    assert len(rows) == 2  # the two directions; the samples appear when asked for
    panel.op_links.totals_only.setChecked(False)
    samples = panel.op_links.table.model().rows
    aggregates = {r[1] for r in samples}
    assert {"top1", "middle", "bottom1", "total"} <= aggregates and len(samples) > 2
    assert all(r[10].startswith("hcom_allReduce") for r in samples if r[1] != "total")


def test_links_by_op_on_four_ranks(qtbot, panel, real_profiles):
    open_and_wait(qtbot, panel, real_profiles / QWEN, panel.op_links)
    rows = panel.op_links.table.model().rows
    assert {r[0] for r in rows} == {"allreduce", "allgather", "reduce", "batchsendrecv"}
    big = [r for r in rows if r[6] >= 1]
    assert big and all(int(r[9].split("%")[0]) >= 100 for r in big)  # HCCS above 18 GB/s on this machine
    assert "No link between ranks runs below" in panel.op_links.findings.toPlainText()
    shot(panel, "cluster_links_by_op_qwen4")


def test_idle_gaps_labelled_and_jump_to_the_gap(qtbot, panel, tmp_path):
    folder = synthetic_cluster.build(tmp_path / "cluster", launch_lag_rank=0)
    open_and_wait(qtbot, panel, folder, panel.free)
    tab = panel.free
    causes = {r[0] for r in tab.totals.model().rows}
    assert {"python idle", "CANN launch gap"} <= causes
    tab.rank.setCurrentIndex(tab.rank.findData(1))
    first = tab.gaps.model().rows[0]
    assert first[0] == "python idle" and first[1] == 1 and first[3] > 4000  # the 5 ms stall (less the device backlog), longest first
    shot(panel, "cluster_idle_gaps_synthetic")
    jumps, focused = [], []
    panel.links.show_wall_range.connect(lambda *args: jumps.append(args))
    panel.links.focus.connect(focused.append)
    tab.gaps.doubleClicked.emit(tab.gaps.model().index(0, 0))
    (path, t0, t1), = jumps
    assert focused == ["profiler"]  # a jump brings the timeline to the front
    assert Path(path) == folder / "rank1_ascend_pt"
    # independent of Studio: the stall lies between kernels a_14 and a_15 in rank 1's own profiler db
    db = sqlite3.connect(folder / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db")
    kernel = ("SELECT t.startNs, t.endNs FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
              "JOIN STRING_IDS s ON s.id = c.name WHERE s.value = ?")
    (_, end), = db.execute(kernel, ("Kernel_a_14",)).fetchall()
    (start, _), = db.execute(kernel, ("Kernel_a_15",)).fetchall()
    db.close()
    assert (t0, t1) == (end, start)
    tab.cause.setCurrentIndex(tab.cause.findData("CANN launch gap"))
    tab.rank.setCurrentIndex(0)
    assert {r[0] for r in tab.gaps.model().rows} == {"CANN launch gap"}


def test_idle_gaps_real_text_export_and_no_timeline(qtbot, panel, real_profiles):
    open_and_wait(qtbot, panel, real_profiles / TEXT2, panel.free)
    causes = [panel.free.cause.itemData(i) for i in range(panel.free.cause.count())]
    assert "memcpy running" in causes and "python idle" in causes
    assert len(panel.free.gaps.model().rows) == 180
    shot(panel, "cluster_idle_gaps_text2")
    open_and_wait(qtbot, panel, real_profiles / QWEN, panel.free)
    assert not panel.free.gaps.model().rows and "no device timeline" in panel.free.message.text()


@pytest.mark.parametrize("job, entry", [("free_job", "studio.tools.profiler.cluster.free_gaps:free_view_json"),
                                        ("comm_job", "studio.tools.profiler.cluster.comm_report:comm_json")])
def test_big_text_exports_are_read_by_a_worker_process(real_profiles, monkeypatch, job, entry):
    """A text export over the offload size is labelled, or its slow collectives explained, in a
    worker process (json parsing of its trace_view.json files would hold the window's interpreter);
    the report is the one read in place."""
    import importlib

    from studio.core import workers
    from studio.core.jobs import run_job
    from studio.tools.profiler import loader
    from studio.ui.panels.cluster import jobs

    started = []
    real_run = workers.run_in_worker

    def spy(target, *args, **kwargs):
        started.append(target)
        return (yield from real_run(target, *args, **kwargs))

    monkeypatch.setattr(workers, "run_in_worker", spy)
    monkeypatch.setattr(loader, "OFFLOAD_BYTES", 1)
    report, message = run_job(getattr(jobs, job)(real_profiles / TEXT2))
    assert started == [entry] and message == ""
    module, _, name = entry.partition(":")
    assert report == run_job(getattr(importlib.import_module(module), name)(str(real_profiles / TEXT2)))
