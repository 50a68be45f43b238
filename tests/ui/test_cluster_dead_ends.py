"""The Cluster panel at laptop sizes, on the real exports: a rank with no timeline says so and offers
what the export holds, the breakdown bars stay in view, and the heat map's axis labels do not overlap."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF, Qt

from studio.tools.profiler.msprof_reader import find_profile_files
from tests.ui.cluster_helpers import show_tab
from tests.ui.window_helpers import panel_in_window

QWEN = "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"
OUT16 = "cluster_pytorch/cluster_analysis_output_16rank_msinsight"
SIZES = [(1280, 720), (1024, 768)]


def _cluster(qtbot, make_window, size, folder):
    window, panel = panel_in_window(qtbot, make_window, size, "cluster")
    handle = panel.open_folder(folder)
    qtbot.waitUntil(lambda: not handle.active and panel.state.report is not None, timeout=30000)
    qtbot.waitUntil(lambda: panel.comm.handle is None or not panel.comm.handle.active, timeout=30000)
    qtbot.wait(50)
    return window, panel


@pytest.mark.parametrize("size", SIZES)
def test_a_rank_without_timeline_says_so_and_offers_its_stage_neighbour(qtbot, make_window, real_profiles, size):
    folder = real_profiles / QWEN
    window, panel = _cluster(qtbot, make_window, size, folder)
    # what the export holds, counted independently: rank 3's folder has no file a timeline is drawn from
    timelines, tables, databases = find_profile_files(folder / "rank_3_ascend_pt")
    slice_sources = [t for t in tables if t.name.startswith(("kernel_details", "op_summary", "task_time"))]
    assert not (timelines or databases or slice_sources)
    assert any(t.name.startswith("kernel_details") for t in find_profile_files(folder / "rank_2_ascend_pt")[1])
    # the panel's finding names rank 3 (the slowest computing rank)
    assert "rank 3" in panel.findings.toPlainText()
    asked = []
    panel.request_open.connect(asked.append)
    panel.findings.rank_clicked.emit(3)
    assert "no timeline" in panel.profiler_button.toolTip()
    qtbot.mouseClick(panel.profiler_button, Qt.MouseButton.LeftButton)
    assert asked == [], "a folder that draws '0 slices · 0 tracks' is not opened without a word"
    notice = panel.rank_notice
    assert notice.isVisible()
    text = notice.label.text()
    assert "rank 3" in text and "no timeline" in text and "&#" not in text and "step_trace_time.csv" in notice.label.toolTip()
    qtbot.wait(50)
    assert window.height() == size[1], "the notice fits: the window does not grow past the screen"
    # it offers rank 2 (same pipeline stage, has kernel_details.csv) and the communication rank 3 took part in
    assert notice.timeline_button.isVisible() and "rank 2" in notice.timeline_button.text()
    qtbot.mouseClick(notice.timeline_button, Qt.MouseButton.LeftButton)
    assert asked == [folder / "rank_2_ascend_pt"]
    qtbot.mouseClick(notice.comm_button, Qt.MouseButton.LeftButton)
    assert panel.tabs.currentWidget() is panel.comm
    # a rank with a timeline opens at once, and the notice goes
    panel.tabs.setCurrentIndex(0)
    panel.select_rank(0)
    assert not notice.isVisible()
    qtbot.mouseClick(panel.profiler_button, Qt.MouseButton.LeftButton)
    assert asked[-1] == folder / "rank_0_ascend_pt"


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("relative", [QWEN, OUT16])
def test_breakdown_bars_are_in_view(qtbot, make_window, real_profiles, size, relative):
    from studio.ui.panels.cluster.widgets.rank_table import BAR_COLUMN

    window, panel = _cluster(qtbot, make_window, size, real_profiles / relative)
    table = panel.table
    rect = table.visualRect(panel.model.index(0, BAR_COLUMN))
    viewport = table.viewport().rect()
    assert rect.width() >= 150, f"the bars get {rect.width()} px at {size}"
    assert viewport.contains(rect), (rect, viewport)
    # its title is not cut ("breakd")
    header = table.horizontalHeader()
    title = panel.model.headerData(BAR_COLUMN, Qt.Orientation.Horizontal)
    assert header.sectionSize(BAR_COLUMN) >= header.fontMetrics().horizontalAdvance(title)


@pytest.mark.parametrize("size", SIZES)
def test_sixteen_rank_axis_labels_do_not_overlap(qtbot, make_window, real_profiles, size):
    window, panel = _cluster(qtbot, make_window, size, real_profiles / OUT16)
    show_tab(qtbot, panel, panel.comm)  # the map is coloured by a job when the tab is first shown
    heatmap = panel.comm.heatmap
    metrics = heatmap.fontMetrics()
    for axis in ("rows", "columns"):
        labels = [(QRectF(r), t) for r, t in heatmap.axis_labels(metrics)[axis]]
        assert len(labels) >= 2, axis
        for rect, text in labels:  # each label fits its box (a cut "15" draws as "1 5")
            assert rect.width() >= metrics.horizontalAdvance(text), (axis, text, rect)
        for (a, ta), (b, tb) in zip(labels, labels[1:]):
            assert not a.intersects(b), (axis, ta, tb)
    # the labels name what they sit under: each column label's box is centred on its column
    left, top, size_ = heatmap._grid()
    for rect, text in heatmap.axis_labels(metrics)["columns"]:
        i = heatmap.ranks.index(int(text))
        assert abs(rect.center().x() - (left + (i + 0.5) * size_)) < 1
