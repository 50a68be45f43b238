"""Journey 8 through the real main window at 1,280 x 720: a training job's ranks are opened, the
Cluster panel names the slow rank, a click on that name selects it, "Open rank in Profiler" shows
its own timeline in the Profiler — every step a click, none a command.

Checked against the export itself: the rank named is the one step_trace_time.csv says computes
the longest; the export keeps no timeline of it, so the panel offers a rank of the same stage, and
the timeline that opens holds that rank's kernels.
"""

from __future__ import annotations

import csv

from PySide6.QtCore import Qt

from journey_shots import journey_size, shot

QWEN = "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"


def _click_text(qtbot, browser, text: str) -> None:
    """Click inside ``text`` in a text browser (a link there follows)."""
    cursor = browser.document().find(text)
    assert not cursor.isNull(), f"{text!r} is not in {browser.toPlainText()!r}"
    cursor.setPosition(cursor.selectionStart() + 2)
    qtbot.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=browser.cursorRect(cursor).center())


def test_cluster_to_the_slow_ranks_timeline(qtbot, make_window, real_profiles):
    folder = real_profiles / QWEN
    window = make_window()
    size = journey_size()
    window.resize(*size)
    qtbot.waitExposed(window)
    window.open_paths([folder])
    qtbot.waitUntil(lambda: window.is_in_front("cluster"), timeout=30000)
    panel = window.panels["cluster"]
    qtbot.waitUntil(lambda: panel.state.report is not None, timeout=60000)
    # the findings and layout follow the rank table by a turn of the event loop or two
    qtbot.waitUntil(lambda: bool(panel.findings.toPlainText() and panel.layout_view.toPlainText()), timeout=5000)
    # the slowest computing rank, from the raw per-rank step_trace_time.csv files
    computing = {}
    for rank_dir in sorted(folder.glob("rank_*_ascend_pt")):
        with open(rank_dir / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv", encoding="utf-8-sig") as handle:
            computing[int(rank_dir.name.split("_")[1])] = float(next(csv.DictReader(handle))["Computing"])
    rank = max(computing, key=computing.get)
    shot(window, "cluster", "1_opened")
    text = panel.findings.toPlainText()
    assert f"rank {rank}" in text, text
    # click the rank's name in the findings: it is selected in the table
    _click_text(qtbot, panel.findings, f"rank {rank}")
    qtbot.waitUntil(lambda: panel.profiler_button.isEnabled(), timeout=5000)
    selected = panel.table.selectionModel().selectedRows()
    assert selected and panel.model.index(selected[0].row(), 0).data() == str(rank)
    # "Open rank in Profiler": this export keeps no timeline of that rank, so the panel says so and
    # offers the timeline of a rank of the same stage; following it shows that rank's kernels
    shot(window, "cluster", "2_rank_selected")
    qtbot.mouseClick(panel.profiler_button, Qt.MouseButton.LeftButton)
    notice = panel.rank_notice
    shot(window, "cluster", "3_no_timeline_notice")
    assert notice.isVisible() and f"rank {rank}" in notice.label.text()
    qtbot.mouseClick(notice.timeline_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.is_in_front("profiler"), timeout=30000)
    profiler = window.panels["profiler"]
    qtbot.waitUntil(lambda: bool(profiler.profiles) and profiler.profiles[-1].complete, timeout=60000)
    loaded = profiler.profiles[-1]
    shot(window, "cluster", "4_timeline")
    other = int(loaded.path.name.split("_")[1]) if loaded.path.name.startswith("rank_") else None
    assert other is not None and other != rank and f"rank {other}" in notice.timeline_button.text()
    with open(loaded.path / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", encoding="utf-8-sig") as handle:
        kernels = sum(1 for _ in csv.DictReader(handle))
    assert loaded.trace.size == kernels > 0  # one slice per kernel the rank ran
    assert window.width() <= size[0] and window.height() <= size[1]
