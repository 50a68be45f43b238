"""The Cluster panel fills a tab when it is on screen: the tabs behind the one shown stay empty while
the reports arrive (their filling and first layout held the window on 16 ranks), and each, when
first shown, holds what it would have shown at once — for the report and the step chosen by then,
checked against sums taken here from the engines' own JSON (real 2-rank text export)."""

from __future__ import annotations

import shutil
from collections import defaultdict

import pytest

from studio.core.serial import to_json
from studio.tools.profiler.cluster import free_gaps
from studio.tools.profiler.cluster.comm_report import open_comm
from studio.tools.profiler.cluster.engine import open_cluster
from tests.ui.cluster_helpers import TEXT2, open_and_wait, panel, show_tab  # noqa: F401 - the fixture


def _two_steps(real, tmp_path):
    """The 2-rank text export with a second profiled step (51) that has no matrix rows."""
    folder = tmp_path / "job"
    shutil.copytree(real / TEXT2, folder)
    for rank in (0, 1):
        csv = folder / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv"
        header, row = csv.read_text().splitlines()[:2]
        later = ["51", str(float(row.split(",")[1]) * (2 + rank))] + row.split(",")[2:]
        csv.write_text(f"{header}\n{row}\n{','.join(later)}\n")
    return folder


def _rows(table) -> list[list]:
    return table.model().rows


def test_hidden_tabs_are_empty_until_shown_then_equal_the_reports(qtbot, panel, real_profiles, monkeypatch):
    from studio.tools.profiler import loader

    monkeypatch.setattr(loader, "OFFLOAD_BYTES", 1 << 40)  # read on a thread here: the same JSON as the CLI's
    folder = real_profiles / TEXT2
    open_and_wait(qtbot, panel, folder)
    assert panel.tabs.currentWidget() is panel.step_split and panel.model.rowCount() == 2
    # every report has arrived, and the tabs behind the Step time tab have not been filled
    assert panel.collectives.report is not None and panel.free.report is not None
    assert _rows(panel.collectives.table) == [] and _rows(panel.free.gaps) == [] and _rows(panel.free.totals) == []
    assert _rows(panel.op_links.table) == [] and _rows(panel.comm.table) == [] and panel.comm.handle is None
    assert panel.memory_tab is None  # the chart (and pyqtgraph) comes with the Memory tab

    # shown: each holds the reports' numbers, summed here from the engines' JSON
    show_tab(qtbot, panel, panel.comm)
    matrix = to_json(open_cluster(folder))["matrix"]
    assert panel.comm.heatmap.cells and len(_rows(panel.comm.table)) == len(matrix)
    for (src, dst), cell in panel.comm.heatmap.cells.items():
        assert cell.size_mb == pytest.approx(sum(m["size_mb"] for m in matrix if (m["src"], m["dst"]) == (src, dst)))
    show_tab(qtbot, panel, panel.collectives)
    ops = to_json(open_comm(folder))["ops"]
    listed = [r[7] for r in _rows(panel.collectives.table)]
    assert listed == pytest.approx(sorted((o["sync_ms"] for o in ops), reverse=True)[:len(listed)]) and listed
    show_tab(qtbot, panel, panel.free)
    whole = to_json(free_gaps.open_free(folder))["gaps"]
    per_cause = defaultdict(lambda: [0, 0.0])
    for g in whole:
        per_cause[(g["label"], g["rank"])][0] += 1
        per_cause[(g["label"], g["rank"])][1] += g["duration_us"]
    totals = {(r[0], r[1]): (r[2], r[3]) for r in _rows(panel.free.totals)}
    assert totals.keys() == per_cause.keys()
    for key, (count, total) in per_cause.items():
        assert totals[key][0] == count and totals[key][1] == pytest.approx(total, rel=1e-6)
    longest = sorted(whole, key=lambda g: -g["duration_us"])[:len(_rows(panel.free.gaps))]
    assert [r[3] for r in _rows(panel.free.gaps)] == pytest.approx([g["duration_us"] for g in longest])
    assert panel.free.rank.count() == 3  # "all" and the two ranks: the choices come with the tab
    show_tab(qtbot, panel, panel.memory_stack)
    assert panel.memory_stack.currentWidget() is panel.memory_tab and panel.memory_tab.device_combo.count() == 2


def test_a_tab_shown_after_a_step_change_shows_that_step(qtbot, panel, real_profiles, tmp_path):
    folder = _two_steps(real_profiles, tmp_path)
    open_and_wait(qtbot, panel, folder, panel.comm)
    assert panel.comm.heatmap.cells  # step 50, the one with the matrix
    show_tab(qtbot, panel, panel.step_split)
    panel.step_combo.setCurrentIndex(panel.step_combo.findData(51))
    assert panel.comm.view.pending, "behind the Step time tab the map waits"
    show_tab(qtbot, panel, panel.comm)
    assert panel.comm.heatmap.cells == {} and _rows(panel.comm.table) == []  # step 51 has no link
    show_tab(qtbot, panel, panel.step_split)
    panel.step_combo.setCurrentIndex(panel.step_combo.findData(50))
    show_tab(qtbot, panel, panel.op_links)
    steps = {r[2] for r in _rows(panel.op_links.table)}
    expected = {r["step"] for r in to_json(open_cluster(folder))["op_links"] if r["src"] != r["dst"]}
    assert steps == expected == {50}


def test_a_refresh_runs_its_steps_a_turn_apart_and_a_newer_one_starts_over(qtbot):
    from PySide6.QtWidgets import QWidget

    from studio.ui.panels.cluster.widgets.when_shown import WhenShown

    widget, calls = QWidget(), []
    qtbot.addWidget(widget)
    view = WhenShown(widget, *(lambda name=name: calls.append(name) for name in "abc"))
    view.request()
    assert calls == [] and view.pending and not view.done  # hidden: nothing runs
    widget.show()
    assert calls == ["a"], "the first step runs as the widget is shown, the others on later turns"
    qtbot.waitUntil(lambda: view.done, timeout=5000)
    assert calls == ["a", "b", "c"]
    calls.clear()
    view.request()
    view.request()  # a newer refresh before the first one's next turn: its steps are dropped
    qtbot.waitUntil(lambda: view.done, timeout=5000)
    assert calls == ["a", "a", "b", "c"]
