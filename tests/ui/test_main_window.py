"""The main window: file routing by content, drag and drop, recent files, layout kept across restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent

from studio.ui.main_window import MainWindow


@pytest.fixture
def window(make_window):
    return make_window(restore_layout=True)


def _drop(window: MainWindow, paths: list[Path]) -> QDropEvent:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    enter = QDragEnterEvent(QPoint(50, 50), Qt.DropAction.CopyAction, mime,
                            Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    window.dragEnterEvent(enter)
    assert enter.isAccepted(), "local files must be accepted for dropping"
    drop = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime,
                      Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    window.dropEvent(drop)
    return drop


def _routed_panel(qtbot, window: MainWindow, paths: list[Path]) -> dict[str, str]:
    routed: dict[str, str] = {}
    window.file_routed.connect(lambda d: routed.__setitem__(d.path.name, d.format.panel))
    _drop(window, paths)
    qtbot.waitUntil(lambda: len(routed) == len(paths), timeout=5000)
    return routed


def test_drop_routes_each_file_to_its_panel_by_content(qtbot, window, ascend_fixtures, tmp_path):
    disguised = tmp_path / "timeline.log"  # a Chrome trace with a misleading extension
    disguised.write_text(json.dumps({"traceEvents": [{"name": "Conv", "ph": "X", "ts": 1, "dur": 2}]}))
    files = [ascend_fixtures / "om" / "root_model.om", ascend_fixtures / "pytorch_npu" / "kernel_details.csv",
             ascend_fixtures / "cfg" / "aipp_rgb_static.cfg", ascend_fixtures / "cfg" / "acl_dump.json", disguised]
    routed = _routed_panel(qtbot, window, files)
    assert routed == {"root_model.om": "graph", "kernel_details.csv": "profiler", "aipp_rgb_static.cfg": "convert",
                      "acl_dump.json": "accuracy", "timeline.log": "profiler"}
    assert window.panels["graph"].opened_paths == [files[0]]
    assert window.panels["profiler"].opened_paths == [files[1], disguised]  # in the order dropped
    assert window.notifier.history == []


def test_corrupt_file_shows_which_file_and_why_and_the_app_stays_up(qtbot, window, ascend_fixtures):
    bad = ascend_fixtures / "om" / "not_an_om.om"
    _drop(window, [bad])
    qtbot.waitUntil(lambda: bool(window.notifier.history), timeout=5000)
    notice = window.notifier.history[0]
    assert str(bad) in notice.message and "IMOD" in notice.message
    assert "not_an_om.om" in window.statusBar().currentMessage() or "OM" in window.statusBar().currentMessage()
    good = ascend_fixtures / "om" / "flow_model.om"  # the window still works afterwards
    assert _routed_panel(qtbot, window, [good]) == {"flow_model.om": "graph"}


def test_dragging_non_local_urls_is_refused(window):
    mime = QMimeData()
    mime.setUrls([QUrl("https://example.com/model.onnx")])
    enter = QDragEnterEvent(QPoint(5, 5), Qt.DropAction.CopyAction, mime,
                            Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    window.dragEnterEvent(enter)
    assert not enter.isAccepted()


def test_recent_files_survive_a_restart(qtbot, window, make_window, ascend_fixtures):
    model = ascend_fixtures / "om" / "root_model.om"
    _routed_panel(qtbot, window, [model])
    window.close()
    again = make_window(restore_layout=True, show=False)
    assert again.settings.recent_files[0].resolve() == model.resolve()  # stored resolved
    again._fill_recent_menu()
    titles = [a.text() for a in again.recent_menu.actions()]
    assert "root_model.om" in titles


def test_dock_layout_survives_a_restart(window, make_window):
    window.docks["log"].hide()
    window.docks["profiler"].setFloating(True)
    window.close()
    again = make_window(restore_layout=True)
    assert again.docks["log"].isHidden()
    assert again.docks["profiler"].isFloating()
    again.reset_layout()
    assert not again.docks["log"].isHidden() and not again.docks["profiler"].isFloating()
    again.close()


def test_opening_a_workspace_folder_shows_it_and_records_artifacts(qtbot, window, tmp_path, ascend_fixtures):
    workspace = tmp_path / "face-mask"
    workspace.mkdir()
    (workspace / "studio.toml").write_text('[workspace]\nname = "Face mask"\n')
    _drop(window, [workspace])
    qtbot.waitUntil(lambda: window.workspace is not None, timeout=5000)
    assert window.workspace.name == "Face mask"
    assert "Face mask" in window.windowTitle()
    _routed_panel(qtbot, window, [ascend_fixtures / "om" / "root_model.om"])
    window.close()
    assert "root_model.om" in (workspace / "studio.toml").read_text()


def test_menus_exist_with_their_actions(window):
    titles = [a.text().replace("&", "") for a in window.menuBar().actions()]
    assert titles == ["File", "View", "Tools", "Run", "Help"]
    tools = window.menuBar().actions()[2].menu()
    assert [a.text() for a in tools.actions() if a.text()][:4] == ["Graph", "Profiler", "Accuracy", "Converter"]


def test_the_last_workspace_reopens_on_the_next_start(qtbot, window, tmp_path):
    from studio.ui.app import build_window

    folder = tmp_path / "seed2"
    window.open_workspace(folder, create=True)
    window.close()
    again = build_window()
    qtbot.addWidget(again)
    again.notifier.uninstall_hooks()
    assert again.workspace is not None and again.workspace.folder == folder.resolve()
    again.close()


def test_opening_a_hand_edited_workspace_does_not_rewrite_it(qtbot, window, tmp_path):
    folder = tmp_path / "edited"
    folder.mkdir()
    text = '# our team\'s Ascend box\n[workspace]\nname = "Edited"   # keep this comment\n'
    (folder / "studio.toml").write_text(text)
    assert window.open_workspace(folder) is not None
    window.close()
    assert (folder / "studio.toml").read_text() == text


def test_panels_are_built_after_the_first_frame_or_when_asked_for(qtbot, make_window):
    from studio.ui.panels.registry import PANELS

    window = make_window(show=False)
    assert not window._built, "nothing is built before the window shows"
    assert window.panels["profiler"].NAME == "profiler"  # asking builds that one at once
    assert list(window._built) == ["profiler"]
    with qtbot.waitSignal(window.panels_ready, timeout=10000):
        window.show()
    assert [window.docks[s.name].widget() for s in PANELS] == [window.panels[s.name] for s in PANELS]
    for spec in PANELS:  # the registry's names and titles are the classes' own
        panel = window.panels[spec.name]
        assert (panel.NAME, panel.TITLE) == (spec.name, spec.title)
        assert window.docks[spec.name].windowTitle() == spec.title
