"""The Cluster panel's Collectives tab on the real 4-rank export and the synthetic slow-host /
slow-device cluster: the map and the op table show the engine's numbers (read by a job), the
findings name the rank waited for and the slow op's cause, a double-click asks for the op on its
rank's timeline. Screenshots at 1,280 × 720 go to STUDIO_SHOTS when it is set."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from studio.core.serial import to_json
from studio.tools.profiler.cluster.comm_report import open_comm

from tests.ui.cluster_helpers import open_and_wait, panel, shot  # noqa: F401 - the fixture
from tests.tools import synthetic_cluster

QWEN = "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"
DB = "cluster_pytorch/msinsight_db_2rank_level2/level2"


def test_map_table_and_findings_equal_the_engine(qtbot, panel, real_profiles):
    open_and_wait(qtbot, panel, real_profiles / QWEN, panel.collectives)
    report = to_json(open_comm(real_profiles / QWEN))
    tab = panel.collectives
    shown = {key: cell["sync_ms"] for key, cell in tab.map.values.items()}
    assert shown == {(t["group_id"], t["rank"]): pytest.approx(t["sync_ms"]) for t in report["totals"]}
    assert len(tab.table.model().rows) == len(report["ops"]) == 76
    text = tab.findings.toPlainText()
    for g in report["group_waits"]:
        assert f"for rank {g['waited_for']} (it arrived last)" in text
    shot(panel, "cluster_collectives_qwen4")
    # a cell: the ops of that group and rank only
    group, rank = next((g["group_id"], g["waiting"][0]["rank"]) for g in report["waits"])
    tab.map.cell_clicked.emit(group, rank)
    rows = tab.table.model().rows
    expected = [o for o in report["ops"] if o["group_id"] == group and o["rank"] == rank]
    assert len(rows) == len(expected) > 0 and {r[0] for r in rows} == {o["op"] for o in expected}
    assert rows[0][7] == pytest.approx(max(o["sync_ms"] for o in expected))  # longest synchronisation first


def test_synthetic_causes_shown_and_jump_to_the_op(qtbot, panel, tmp_path):
    folder = synthetic_cluster.build(tmp_path / "cluster")
    open_and_wait(qtbot, panel, folder, panel.collectives)
    assert panel.stack.currentWidget() is panel.tabs
    text = panel.collectives.findings.toPlainText()
    assert "hcom_allReduce__1_1_1" in text and "host-bound — rank 1 arrived late" in text
    assert "hcom_allReduce__1_2_1" in text and "device-bound — rank 2 arrived late" in text
    shot(panel, "cluster_collectives_synthetic")
    jumps = []
    panel.links.show_wall_range.connect(lambda *args: jumps.append(args))
    table = panel.collectives.table
    row = next(i for i, r in enumerate(table.model().rows) if r[0] == "hcom_allReduce__1_2_1" and r[1] == 0)
    table.doubleClicked.emit(table.model().index(row, 0))
    (path, t0, t1), = jumps
    assert Path(path) == folder / "rank0_ascend_pt"
    # independent of Studio: the op's start and end in rank 0's own profiler db
    db = sqlite3.connect(folder / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db")
    start, end = db.execute("SELECT c.startNs, c.endNs FROM COMMUNICATION_OP c JOIN STRING_IDS s ON s.id = c.opName "
                            "WHERE s.value = 'hcom_allReduce__1_2_1'").fetchone()
    db.close()
    assert abs(t0 - start) <= 1000 and abs(t1 - end) <= 1000


def test_msprof_analyze_output_says_why_no_collectives(qtbot, panel, real_profiles):
    open_and_wait(qtbot, panel, real_profiles / "cluster_pytorch/cluster_analysis_output_16rank_msinsight", panel.collectives)
    assert "keeps only group totals" in panel.collectives.message.text()
    assert not panel.collectives.map.values


def test_text_export_causes_shown(qtbot, panel, tmp_path):
    """The same synthetic run written as a text export (trace_view.json, no profiler db): the
    findings name both causes as for the db export."""
    open_and_wait(qtbot, panel, synthetic_cluster.build(tmp_path / "text", export="text"), panel.collectives)
    text = panel.collectives.findings.toPlainText()
    assert "host-bound — rank 1 arrived late" in text and "device-bound — rank 2 arrived late" in text
    assert "cannot be told" not in panel.collectives.message.text()
    shot(panel, "cluster_collectives_synthetic_text")
