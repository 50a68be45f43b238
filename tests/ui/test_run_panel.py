"""Run menu, toolbar, configuration dialog and console, driven through the main window."""

from __future__ import annotations

import pytest

from studio.runs.config import RunConfig, load_configs, save_config
from studio.workspace import Workspace


@pytest.fixture
def window(make_window, tmp_path):
    win = make_window()
    ws = Workspace.create(tmp_path / "ws")
    (ws.folder / "app").mkdir()
    save_config(ws, RunConfig("hello", "echo start in $(basename $(pwd)); for i in 1 2 3; do echo line $i; done; exit 2",
                              workdir="app"))
    save_config(ws, RunConfig("slow", "echo waiting; sleep 30; echo never"))
    win.open_workspace(ws.folder)
    return win


def test_run_menu_lists_configurations_and_runs_one(qtbot, window):
    controls = window.run_controls
    controls.refresh()
    assert [controls.combo.itemText(i) for i in range(controls.combo.count())] == ["hello", "slow"]
    assert "&Run" in [a.text() for a in window.menuBar().actions()]
    controls.combo.setCurrentText("hello")
    controls.run_action.trigger()
    panel = window.panels["run"]
    console = panel.consoles()[0]
    qtbot.waitUntil(lambda: console.state not in ("starting", "running"), timeout=10000)
    assert console.state == "failed" and "exit code 2" in console.status.text()
    assert console.output().splitlines() [1:] == ["start in app", "line 1", "line 2", "line 3"]
    assert panel.tabs.tabText(0).startswith("✗")


def test_stop_kills_the_run(qtbot, window):
    console = window.run_controls.run("slow")
    qtbot.waitUntil(lambda: "waiting" in console.output(), timeout=10000)
    console.stop_button.click()
    qtbot.waitUntil(lambda: console.state == "stopped", timeout=10000)
    assert "never" not in console.output().splitlines()[1:] and "stopped after" in console.status.text()


def test_dialog_edits_the_windows_workspace(qtbot, window):
    dialog = window.run_controls.edit()
    qtbot.addWidget(dialog)
    dialog._on_add()
    dialog.name.setText("with env")
    dialog.command.setText("echo $A")
    dialog.env.setPlainText("A=1\nbad line")
    assert not dialog.save_current() and "not NAME=value" in dialog.problem.text()
    dialog.env.setPlainText("A=1")
    assert dialog.save_current()
    names = [c.name for c in load_configs(Workspace.open(window.workspace.folder))]
    assert names == ["hello", "slow", "with env"]
    dialog.close()
    window.run_controls.refresh()
    assert window.run_controls.combo.findText("with env") >= 0
    window.workspace.add_artifact(window.workspace.folder / "app", "folder")  # the window saves its copy later
    window._save_workspace()
    assert [c.name for c in load_configs(Workspace.open(window.workspace.folder))] == names
