"""Text is not cut where the window has room for it: the dock tabs at 1,024 px, the status line beside
a running job, the graph's details pane of a MindX pipeline (its path values and section titles).
Each width is measured with the widget's own font metrics against the rect it is drawn in."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QTabBar

from studio.core.formats import detect
from studio.core.jobs import Progress


def _dock_tab_bars(window):
    return [bar for bar in window.findChildren(QTabBar) if bar.parent() is window and bar.isVisible()]


def test_dock_tabs_show_whole_titles_at_1024(qtbot, make_window):
    window = make_window(build_all=True)
    qtbot.waitExposed(window)
    window.resize(1024, 768)
    qtbot.waitUntil(lambda: window.width() == 1024)
    bars = _dock_tab_bars(window)
    assert bars
    tools = max(bars, key=QTabBar.count)
    assert tools.count() >= 10  # the tool panels share one group
    metrics = QFontMetrics(tools.font())
    for index in range(tools.count()):
        text = tools.tabText(index)
        # a tab at least as wide as its title (Qt's elision cut "Graph" to "Gra…" here)
        assert tools.tabRect(index).width() >= metrics.horizontalAdvance(text), text
        assert tools.tabRect(index).width() >= tools.tabSizeHint(index).width(), text  # with the style's padding
    # and they stay in the window; any that could not would be behind the tab bar's arrows
    assert tools.mapTo(window, tools.rect().topLeft()).x() + tools.width() <= window.width()
    # under X11 the fonts are wider than offscreen: there Qt's elision cut every title; whole titles always
    assert tools.elideMode() == Qt.TextElideMode.ElideNone and tools.usesScrollButtons()


def test_a_long_status_is_shortened_beside_a_running_job(qtbot, make_window):
    window = make_window()
    qtbot.waitExposed(window)
    window.resize(1024, 768)
    release = threading.Event()

    def job(cancel):
        yield Progress(None, "waiting")
        release.wait(20)
        return None

    handle = window.runner.start("Thumbnails", job)
    try:
        qtbot.waitUntil(window.job_status.isVisible, timeout=5000)
        text = ("Gallery: unet_images: 5 pictures, task segment (guessed: output [1, 2, 256, 256] is a per-pixel "
                "map; give Task to choose), 160.70 ms/picture, and a few more words to pass the edge")
        window.show_status(text)
        bar = window.statusBar()
        qtbot.wait(50)
        shown = bar.currentMessage()
        room = window.job_status.geometry().left()  # the message is drawn from the bar's left edge
        assert QFontMetrics(bar.font()).horizontalAdvance(shown) < room
        assert shown.endswith("…") and text.startswith(shown[:-1].rstrip())  # whole words, then the mark
        assert bar.toolTip() == text  # the full text is one hover away
    finally:
        release.set()
    qtbot.waitUntil(lambda: not handle.active, timeout=10000)
    # the job gone, the room is back: the same message is shown whole where it fits
    qtbot.waitUntil(lambda: not window.runner.active_jobs, timeout=5000)
    short = "Graph: unet.onnx — 68 nodes"
    window.show_status(short)
    assert window.statusBar().currentMessage() == short and window.statusBar().toolTip() == ""


def test_pipeline_details_keep_path_ends_and_whole_titles(qtbot, make_panel, tmp_path):
    from studio.tools.graph.demo import add_to_demo
    from studio.ui.panels.graph import GraphPanel
    from studio.core.jobs import run_job

    folder = tmp_path / "demo2"  # a digit in the path: it once made the whole value "…"
    run_job(add_to_demo(folder))
    path = folder / "app" / "pipeline" / "unet_simple_opencv.pipeline"
    panel = make_panel(GraphPanel)
    panel.resize(1024 - 262, 500)  # the tool dock of a 1,024 px window: the details pane gets ~240 px
    panel.open_file(detect(path))
    qtbot.waitUntil(lambda: panel.left.view is not None and panel.left.model.path == path, timeout=10000)
    details = panel.details
    qtbot.wait(50)
    width = details.viewport().width()
    assert width < 330

    def cell(item, column):  # what the delegate draws in the cell
        index = details.indexFromItem(item, column)
        option = details.viewOptions() if hasattr(details, "viewOptions") else None
        from PySide6.QtWidgets import QStyleOptionViewItem

        option = QStyleOptionViewItem()
        option.rect = details.visualRect(index)
        option.fontMetrics = details.fontMetrics()
        details.itemDelegateForIndex(index).initStyleOption(option, index)
        return option.text

    rows = [details.topLevelItem(i) for i in range(details.topLevelItemCount())]
    model_rows = {rows[0].child(i).text(0): rows[0].child(i) for i in range(rows[0].childCount())}
    shown = cell(model_rows["file"], 1)
    assert shown.endswith("unet_simple_opencv.pipeline") or shown.endswith(".pipeline"), shown
    # the section titles fit the pane (they span both columns)
    bold = QFont(details.font())
    bold.setBold(True)
    for row in rows:
        assert QFontMetrics(bold).horizontalAdvance(row.text(0)) <= width - details.indentation(), row.text(0)
    check = next(r for r in rows if r.text(0).startswith("Check:"))
    assert "Double-click" in check.toolTip(0)
    panel.select_node("unet_mindx/mxpi_tensorinfer0")
    rows = [details.topLevelItem(i) for i in range(details.topLevelItemCount())]
    for row in rows:
        assert QFontMetrics(bold).horizontalAdvance(row.text(0)) <= width - details.indentation(), row.text(0)
    node_rows = {rows[0].child(i).text(0): rows[0].child(i) for i in range(rows[0].childCount())}
    assert cell(node_rows["name"], 1).endswith("mxpi_tensorinfer0")
