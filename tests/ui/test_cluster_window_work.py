"""What the Cluster panel leaves to the window's own process stays small at scale: a big folder's
cluster report is decoded in a worker process, a worker's long answer comes back in pieces, and the
rank table is sized without asking the model for every cell."""

from __future__ import annotations

import json
import multiprocessing.connection
import sys
from pathlib import Path

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
    import studio.tools.profiler.loader as loader

    targets = []
    real_run = workers.run_in_worker

    def recording(target, *args, **kwargs):
        targets.append(target)
        return real_run(target, *args, **kwargs)

    monkeypatch.setattr(workers, "run_in_worker", recording)
    monkeypatch.setattr(loader, "OFFLOAD_BYTES", 1)  # this folder counts as big
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
