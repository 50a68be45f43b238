"""Focus stays where the user acted: results load quietly in other panels, the status bar speaks of
the panel in front."""

from __future__ import annotations

import shutil

import pytest

from studio.ui.main_window import MainWindow
from tests.ui.window_helpers import tiny_model


def _in_front(window: MainWindow, name: str) -> bool:
    dock = window.docks[name]
    return dock.isVisible() and not dock.visibleRegion().isEmpty()


@pytest.fixture
def window(qtbot, make_window):
    win = make_window()
    qtbot.waitExposed(win)
    for name in win.panels:
        win.build_panel(name)
    return win


def test_a_profile_of_a_model_keeps_the_profiler_in_front(qtbot, window, tmp_path):
    model = tiny_model(tmp_path / "tiny.onnx")
    profiler, graph = window.panels["profiler"], window.panels["graph"]
    profiler.iterations, profiler.warmup = 2, 0
    window.links.profile_model.emit(model)  # the graph's "Profile" button
    qtbot.waitUntil(lambda: bool(profiler.profiles), timeout=30000)
    # the time-share overlay reached the graph, which opened the model behind the profiler
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.overlay is not None, timeout=10000)
    assert _in_front(window, "profiler") and not _in_front(window, "graph")
    assert window.statusBar().currentMessage().startswith("Profiler:")
    # the user opens a copy of the profile from the Graph panel's side: the Profiler comes to the front
    copy = tmp_path / "copy"
    shutil.copytree(profiler.profiles[0].path, copy)
    window.show_panel("graph")
    graph.set_overlay(None)
    window.open_paths([copy])
    qtbot.waitUntil(lambda: len(profiler.profiles) == 2 and graph.overlay is not None, timeout=30000)
    assert _in_front(window, "profiler") and not _in_front(window, "graph")


def test_a_finished_conversion_stays_on_the_converter_log(qtbot, window, tmp_path):
    model = tiny_model(tmp_path / "tiny.onnx")
    convert, graph = window.panels["convert"], window.panels["graph"]
    window.show_panel("convert")
    convert.model_page.set_model(model)
    qtbot.waitUntil(lambda: convert.model_page.inputs_table.rowCount() == 1, timeout=5000)
    convert.finish_button.click()
    output = tmp_path / "tiny_converted.onnx"
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.left.model.path == output, timeout=30000)
    assert _in_front(window, "convert") and not _in_front(window, "graph")
    assert "tiny_converted.onnx opened in the Graph panel" in window.statusBar().full_message()


def test_the_status_bar_speaks_of_the_panel_in_front(qtbot, window):
    window.show_panel("graph")
    window.panels["accuracy"].status.emit("Accuracy: 69 tensors compared")
    assert "Accuracy" not in window.statusBar().currentMessage()
    window.show_panel("accuracy")  # the message waits until its panel comes to the front
    qtbot.waitUntil(lambda: window.statusBar().currentMessage() == "Accuracy: 69 tensors compared", timeout=2000)
