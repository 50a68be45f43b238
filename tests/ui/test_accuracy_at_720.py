"""The Accuracy panel in the main window at laptop sizes: reports added under a failing comparison
leave the table and the scatter room, the failing row is scrolled into view, the status bar shows
plain text, and a panel switch from the Graph's buttons keeps the keyboard out of the file tree."""

from __future__ import annotations

import re

import pytest

from accuracy_helpers import chain_model

from studio.core import formats
from studio.core.jobs import run_job
from studio.tools.accuracy.local_dump import dump_model
from tests.ui.window_helpers import panel_in_window, tiny_model

SIZES = [(1280, 720), (1024, 768)]
BLOCKS = 20  # 61 compared rows: the failing one (block 15) lies far below the first screenful


@pytest.fixture
def deep_dumps(tmp_path):
    """A chain whose first failing op is deep in the table (block 15 of 20)."""
    scales = (1.0,) * BLOCKS
    golden = run_job(dump_model(chain_model(tmp_path / "g.onnx", scales=scales), tmp_path / "golden"))
    target = run_job(dump_model(chain_model(tmp_path / "t.onnx", scales=scales, bias_error=(15, 3.0)),
                                tmp_path / "target"))
    return golden, target


def _window_with_comparison(qtbot, make_window, size, dumps):
    window, panel = panel_in_window(qtbot, make_window, size, "accuracy")
    for dump in dumps:
        panel.open_file(formats.detect(dump))
    qtbot.waitUntil(lambda: panel.result is not None and panel.scatter is not None, timeout=30000)
    qtbot.waitUntil(lambda: panel.selected_row is not None, timeout=10000)
    qtbot.wait(50)
    return window, panel


def _report(name: str) -> str:
    """A report as the FP16 tools append it (several lines of rich text)."""
    return (f"<b>{name}</b>: keep in FP32 block3/add, block7/add, block11/add (minimal; 14 checks on FP16 "
            "simulation). Apply: <code>studio convert g.onnx -o g_fp16.onnx --output-type FP16 --keep-fp32 "
            "block3/add,block7/add,block11/add</code>; for ATC: keep_dtype.cfg, modify_mixlist.json in "
            "/tmp/workspace/accuracy/g_fp32_set<br>written to /tmp/workspace/accuracy/g_repro")


@pytest.mark.parametrize("size", SIZES)
def test_reports_leave_the_table_and_scatter_room(qtbot, make_window, deep_dumps, size):
    window, panel = _window_with_comparison(qtbot, make_window, size, deep_dumps)
    for name in ("Repro", "Keep in FP32", "FP32 set", "Repro again"):
        panel.add_report(_report(name))
    qtbot.wait(50)
    table = panel.table
    rows_shown = table.viewport().height() // table.rowHeight(0)
    assert rows_shown >= 3, f"the table shows {rows_shown} row(s) at {size}"
    assert panel.scatter.height() >= 100, f"the scatter is {panel.scatter.height()} px at {size}"
    assert window.height() == size[1], "the minimums fit: the window does not grow past the screen"
    # every report can still be read: the label has the height of its whole text, and scrolls
    label = panel.findings
    area = label.parentWidget().parentWidget()  # the scroll area's viewport, then the area
    assert label.height() >= label.heightForWidth(label.width()) > area.viewport().height() >= 48
    assert area.verticalScrollBar().maximum() == label.height() - area.viewport().height()


@pytest.mark.parametrize("size", SIZES)
def test_the_failing_row_is_scrolled_into_view(qtbot, make_window, deep_dumps, size):
    window, panel = _window_with_comparison(qtbot, make_window, size, deep_dumps)
    for name in ("Repro", "Keep in FP32"):  # the next steps' reports come in under the verdict
        panel.add_report(_report(name))
    qtbot.wait(50)
    row = panel.selected_row
    failing = [r for r in panel.result.rows if r.passed is False]
    assert row is not None and row.passed is False and row.index == min(r.index for r in failing)
    assert row.index > 10  # the test means something: the row is not on the first screenful
    index = panel.table.selectionModel().currentIndex()
    rect = panel.table.visualRect(index)
    viewport = panel.table.viewport().rect()
    assert viewport.contains(rect.topLeft()) and viewport.contains(rect.bottomLeft()), (rect, viewport)


def test_status_bar_shows_no_markup(qtbot, make_window, deep_dumps):
    window, panel = _window_with_comparison(qtbot, make_window, (1280, 720), deep_dumps)
    panel.add_report(_report("Keep in FP32"))
    message = window.statusBar().full_message()  # the whole text (the bar shows what fits)
    assert "studio convert g.onnx" in message
    assert not re.search(r"</?[a-z]+[^>]*>", message), message
    panel.status.emit("Accuracy: a &lt; b and <code>x &amp; y</code>")
    assert window.statusBar().currentMessage() == "Accuracy: a < b and x & y"


def _inside(widget, ancestor) -> bool:
    while widget is not None:
        if widget is ancestor:
            return True
        widget = widget.parentWidget()
    return False


@pytest.mark.parametrize("button, panel_name", [("Profile", "profiler"), ("FP16 check", "accuracy")])
def test_graph_buttons_keep_the_keyboard_in_the_panel_switched_to(qtbot, make_window, tmp_path, button, panel_name):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    window = make_window()
    window.resize(1280, 720)
    qtbot.waitExposed(window)
    window.activateWindow()
    graph = window.panels["graph"]
    window.open_paths([tiny_model(tmp_path / "tiny.onnx")])
    qtbot.waitUntil(lambda: graph.left.model is not None and graph._bar_buttons[button].isEnabled(), timeout=30000)
    graph.find_edit.setFocus()  # the user was typing in the Graph panel
    qtbot.waitUntil(lambda: QApplication.focusWidget() is graph.find_edit, timeout=3000)
    target = window.docks[panel_name]
    qtbot.mouseClick(graph._bar_buttons[button], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not target.visibleRegion().isEmpty(), timeout=30000)
    qtbot.wait(20)
    focus = QApplication.focusWidget()
    assert not _inside(focus, window.workspace_tree), "typing would now select files in the Workspace tree"
    assert _inside(focus, target), f"focus is on {focus!r}, not in the {panel_name} panel"
