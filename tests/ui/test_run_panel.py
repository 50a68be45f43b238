"""Run menu, toolbar, configuration dialog and console, driven through the main window."""

from __future__ import annotations

import pytest

from studio.runs.config import RunConfig, load_configs, save_config
from studio.core.workspace import Workspace


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


def test_a_run_shows_its_metrics_and_opens_its_fetched_outputs(qtbot, window, tmp_path):
    """The app's printed metrics become a table under the console; its outputs come back beside
    the project and open in their panel (the .npy folder in Accuracy)."""
    import sys

    ws = window.workspace
    app = ws.folder / "seg"
    app.mkdir()
    (app / "main.py").write_text(
        "import numpy as np, os\nos.makedirs('out', exist_ok=True)\n"
        "np.save('out/mask.npy', np.ones((2, 2), np.float32))\n"
        "print('image: 0001.png, dice: 0.93, iou: 0.87')\nprint('image: 0002.png, dice: 0.5, iou: 0.25')\n")
    save_config(ws, RunConfig("seg", f"{sys.executable} main.py", workdir="seg", fetch=["out/*.npy"]))
    console = window.run_controls.run("seg")
    qtbot.waitUntil(lambda: console.state not in ("starting", "running"), timeout=20000)
    assert console.state == "ok", console.output()
    results = console.results
    assert results.isVisible() and "2 line(s) with metrics" in results.summary.text()
    table = results.table
    cells = [[table.item(r, c).text() if table.item(r, c) else "" for c in range(table.columnCount())]
             for r in range(table.rowCount())]
    assert [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())] == ["", "dice", "iou"]
    assert cells[0][0] == "image 0001.png" and cells[-1][0] == "mean of 2"
    assert float(cells[-1][1]) == pytest.approx(0.715) and float(cells[-1][2]) == pytest.approx(0.56)
    folder = console.outcome.results
    assert folder.parent == ws.folder / "runs" and (folder / "out" / "mask.npy").is_file()
    opened = []
    window.panels["run"].request_open.connect(opened.append)
    results.open_button.click()
    assert opened == [folder]
