"""What the Cluster panel leaves to the window's own process stays small at scale: a big folder's
cluster report is decoded in a worker process, a worker's long answer comes back in pieces, and the
rank table is sized without asking the model for every cell."""

from __future__ import annotations

import json
import multiprocessing.connection
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from studio.core.jobs import run_job
from studio.core.serial import to_json
from studio.tools.profiler.cluster import open_cluster
from studio.ui.panels.cluster.jobs import cluster_job
from studio.ui.panels.cluster.widgets.rank_table import BAR_COLUMN
from tests.ui.cluster_helpers import QWEN, panel, real  # noqa: F401 - the fixtures


@pytest.fixture(scope="module")
def repeated(tmp_path_factory) -> Path:
    """4 ranks of the benchmark's synthesized cluster (the real text export's steps repeated)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_cluster_scale import synthesize

    out = tmp_path_factory.mktemp("window_work") / "ranks"
    synthesize(out, 100_000, ranks=4)
    return out


def test_big_cluster_report_decoded_in_a_worker_equals_the_engine(repeated, monkeypatch):
    import studio.core.workers as workers

    targets = []
    real_run = workers.run_in_worker

    def recording(target, *args, **kwargs):
        targets.append(target)
        return real_run(target, *args, **kwargs)

    monkeypatch.setattr(workers, "run_in_worker", recording)
    import studio.ui.panels.cluster.jobs as jobs
    from studio.tools.profiler.cluster.engine import json_bytes

    monkeypatch.setattr(jobs, "CLUSTER_OFFLOAD_BYTES", json_bytes(repeated))  # this folder counts as big
    report = run_job(cluster_job(repeated))
    assert targets == ["studio.tools.profiler.cluster.engine:cluster_json"]
    expected = json.loads(json.dumps(to_json(open_cluster(repeated))))
    assert {k: v for k, v in report.items() if k != "rank_folders"} == expected
    assert len(report["rank_folders"]) == 4  # still added here: each rank's files


def test_a_long_worker_answer_comes_in_pieces(repeated, monkeypatch):
    """Every unpickle in this process stays small (a few ms of the interpreter each), and the
    answer equals the same job run here."""
    from studio.core.workers import run_in_worker
    from studio.tools.profiler.cluster.free_gaps import free_view_json

    sizes = []
    loads = multiprocessing.connection._ForkingPickler.loads

    def measured(buffer, *args, **kwargs):
        sizes.append(len(buffer))
        return loads(buffer, *args, **kwargs)

    monkeypatch.setattr(multiprocessing.connection._ForkingPickler, "loads", measured)
    answer = run_job(run_in_worker("studio.tools.profiler.cluster.free_gaps:free_view_json", str(repeated)))
    monkeypatch.undo()
    here = run_job(free_view_json(str(repeated)))
    assert answer == here and list(answer) == list(here)
    assert len(here["gaps"]) > 1500, "the answer is long enough to be cut"
    assert len(sizes) >= 3 and max(sizes) < 300_000 < sum(sizes)


def test_rank_table_sized_without_reading_every_cell(qtbot, panel, real):
    """1,600 rows (16 ranks x 100 steps): the columns fit their longest text (Qt's own measure of
    every cell is the check) while sizing asked the model for far fewer cells than the table has."""
    base = to_json(open_cluster(real / QWEN))
    rows = [dict(row, rank=rank, step=step, computing_us=row["computing_us"] * (1 + step * 37 + rank))
            for row in base["ranks"][:1] for rank in range(16) for step in range(100)]
    report = dict(base, ranks=rows, rank_folders={})
    calls = []
    data = type(panel.model).data
    panel.model.data = lambda index, role=Qt.ItemDataRole.DisplayRole: (calls.append(role), data(panel.model, index, role))[1]
    panel.state.folder = real / QWEN
    panel._on_cluster(panel._generation, report)
    assert panel.model.rowCount() == 1600
    assert len(calls) < 1600, f"{len(calls)} cells read to size 1,600 rows"
    header = panel.table.horizontalHeader()
    for column in range(panel.model.columnCount()):
        if column != BAR_COLUMN:
            assert header.sectionSize(column) >= panel.table.sizeHintForColumn(column), column


def test_collectives_list_the_longest_ops_and_say_how_many(qtbot, panel, real):
    """6,080 ops (the real 4-rank ops repeated, as 16 ranks x 95 steps have): the table lists the
    500 with the longest synchronisation — numpy's sort picks the same — and says what it left out."""
    from studio.tools.profiler.cluster.comm_report import open_comm
    from studio.ui.panels.cluster.widgets.collectives_tab import SHOWN

    report = to_json(open_comm(real / QWEN))
    ops = [dict(op, sync_ms=op["sync_ms"] * (1 + (i * 7919) % 1000 / 100), rank=op["rank"] + 4 * (i // 76))
           for i, op in enumerate(report["ops"] * 80)]
    tab = panel.collectives
    panel.stack.setCurrentWidget(panel.tabs)  # on screen: a hidden tab is filled when first shown
    panel.tabs.setCurrentWidget(tab)
    tab.show_report(dict(report, ops=ops))
    shown = [row[7] for row in tab.table.model().rows]
    assert len(shown) == SHOWN == 500 and len(ops) == 6080
    assert shown == pytest.approx(np.sort(np.array([o["sync_ms"] for o in ops]))[::-1][:SHOWN].tolist())
    assert "the 500 longest of 6,080 are listed" in tab.cell_label.text()


def test_slow_links_under_the_map_are_the_first_ten_and_a_count(qtbot, panel, real):
    base = to_json(open_cluster(real / "cluster_pytorch/msinsight_text_2rank_level2/level2"))
    # 190 links of the export's one step (the step the panel picks), each with its own evidence
    links = [dict(base["slow_links"][0], link=f"0->{i}", evidence=f"evidence {i}") for i in range(190)]
    panel.state.folder = real / "cluster_pytorch/msinsight_text_2rank_level2/level2"
    panel.tabs.setCurrentWidget(panel.comm)
    panel._on_cluster(panel._generation, dict(base, slow_links=links, rank_folders={}))
    text = panel.comm.links_label.text()
    assert [f"evidence {i}<" in text + "<" for i in (0, 9, 10)] == [True, True, False]
    assert "and 180 more slow links" in text


def test_small_tables_size_their_columns_from_their_widest_text(qtbot):
    """5,000 links in a small table: each column is as wide as its widest text (every cell formatted
    and measured here), found without asking the model for the cells (Qt's ResizeToContents asked
    for each sampled cell's text, font, alignment and colours at every layout)."""
    from PySide6.QtWidgets import QWidget

    from studio.ui.panels.cluster.widgets.tables import fill, small_table

    host = QWidget()
    qtbot.addWidget(host)
    table = small_table(["Group", "Src", "Dst", "GB/s"], host, stretch=0)
    rows = {"n": 0}
    data = type(table.model()).data
    table.model().data = lambda index, role=Qt.ItemDataRole.DisplayRole: (rows.__setitem__("n", rows["n"] + 1),
                                                                          data(table.model(), index, role))[1]
    # -3 ... 12,345,678: the widest number is neither the first row's nor the longest by digits alone
    values = [[f"group {i}", i % 16 - 3, (i + 1) % 16, (10.0 + i / 7) * (1000 if i == 4321 else 1) - (i == 7) * 99999]
              for i in range(5000)]
    values[17][3] = 0.0000241  # a tiny transfer keeps its digits: "2.41e-05"
    fill(table, values)
    host.resize(800, 400)
    host.show()
    qtbot.waitExposed(host)
    header, metrics = table.horizontalHeader(), table.fontMetrics()
    for column in (1, 2, 3):
        texts = [f"{r[column]:.3g}" if isinstance(r[column], float) and 0 < abs(r[column]) < 0.001
                 else f"{r[column]:,.3f}" if isinstance(r[column], float) else str(r[column]) for r in values]
        widest = max(metrics.horizontalAdvance(t) for t in texts)
        assert header.sectionSize(column) >= widest, (column, max(texts, key=len))
        assert header.sectionSize(column) <= max(widest, header.sectionSizeHint(column)) + 24, column
    assert rows["n"] < 5000, f"{rows['n']} cells read to lay out 5,000 rows"


def test_rank_table_widest_text_from_the_extremes(qtbot, panel, real):
    """The texts a number column is sized by hold its widest text (every row formatted here)."""
    from studio.ui.panels.cluster.widgets.rank_table import FIRST_PART

    base = to_json(open_cluster(real / QWEN))
    rows = [dict(row, rank=rank, computing_us=(-1) ** rank * 10.0 ** (rank % 9), free_us=None if rank % 3 else 1.5)
            for row in base["ranks"][:1] for rank in range(40)]
    panel.state.folder = real / QWEN
    panel._on_cluster(panel._generation, dict(base, ranks=rows, rank_folders={}))
    model = panel.model
    for column in range(FIRST_PART, BAR_COLUMN):
        every = [model.index(r, column).data() for r in range(model.rowCount())]
        assert max(map(len, model.texts_to_fit(column))) == max(map(len, every)), column
