"""The host actions driven from the panels' toolbars, against the real sshd and the stand-in CANN tools.

The host's work root is a symlink to a folder whose name has a space and a quote, and the app runs
in such a folder too: msprof (the stand-in, as the real one) refuses a symlinked --output, so a
profile that completes shows every path was resolved and quoted.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from standins import facemask_onnx, fake_om, make_standin_toolkit, recorded

from studio.runs.config import RunConfig, save_config
from studio.ui.notifier import Notifier
from studio.core.workspace import Workspace

APP = Path(__file__).resolve().parents[1] / "cann_standins" / "app" / "acl_app.py"
FRAMES_SLOW = 400  # frames of the app in the cancel test: it runs long enough to be stopped mid-run


def _window(make_window, tmp_path, sshd_host, ascend_fixtures, workspace: bool = True, configs: bool = True):
    from studio.remote.context import HostContext
    from studio.remote.hosts import HostStore

    entry, known = sshd_host
    toolkit = make_standin_toolkit(tmp_path / "cann", ascend_fixtures, STANDIN_LATENCY_MS="0.7")
    entry.toolkit = str(toolkit)
    real_root = tmp_path / "host 'root'"
    real_root.mkdir()
    (tmp_path / "root-link").symlink_to(real_root)
    entry.extra["deploy_root"] = str(tmp_path / "root-link")
    store = HostStore(tmp_path / "hosts.toml")
    store.put(entry)
    store.save()  # the hosts and deploy panels reload the store from its file
    notices = []
    notifier = Notifier(show_dialogs=False)
    notifier.noticed.connect(notices.append)
    win = make_window(notifier=notifier, show=False)
    win.links.host_context = HostContext(store=store, known_hosts=known)
    win.show()
    win.notices, win.toolkit, win.real_root = notices, toolkit, real_root
    routed = []
    win.file_routed.connect(lambda d: routed.append((d.path, d.format.panel)))
    win.routed = routed
    if workspace:
        ws = Workspace.create(tmp_path / "ws")
        app_dir = tmp_path / "app dir 'x'"
        app_dir.mkdir()
        fake_om(app_dir / "facemask.om")
        if configs:
            python, app = shlex.quote(sys.executable), shlex.quote(str(APP))
            save_config(ws, RunConfig("facemask", f"{python} {app} --model facemask.om --frames 2",
                                      target=entry.name, workdir=str(app_dir)))
            save_config(ws, RunConfig("slow", f"{python} {app} --model facemask.om --frames {FRAMES_SLOW} --sleep 0.1",
                                      target=entry.name, workdir=str(app_dir)))
            save_config(ws, RunConfig("withinput", f"{python} {app} --model facemask.om --frames 1 --input image.npy",
                                      target=entry.name, workdir=str(app_dir)))
        win.open_workspace(ws.folder)
        win.app_dir = app_dir
    return win


@pytest.fixture
def window(make_window, tmp_path, sshd_host, ascend_fixtures):
    return _window(make_window, tmp_path, sshd_host, ascend_fixtures)


def _dialog(qtbot, window):
    qtbot.waitUntil(lambda: window.run_controls.host.dialog is not None, timeout=5000)
    dialog = window.run_controls.host.dialog
    window.run_controls.host.dialog = None
    return dialog


def _console(qtbot, window):
    run = window.panels["run"]
    qtbot.waitUntil(lambda: bool(run.consoles()) or bool(window.notices), timeout=10000)
    assert not window.notices, [(n.message, n.details) for n in window.notices]
    return run.consoles()[0]


def _finished(qtbot, console):
    qtbot.waitUntil(lambda: console.state not in ("starting", "running"), timeout=60000)
    assert console.state == "ok", console.output()


def test_profile_on_host_from_the_profiler_panel(qtbot, window, ascend_fixtures):
    profiler = window.panels["profiler"]
    assert profiler.host_button.isEnabled() and "run configuration" in profiler.host_button.toolTip()
    assert [a.text() for a in profiler.host_button.menu().actions()] == ["Profile on host…", "Benchmark .om…"]
    profiler.host_actions["profile"].trigger()
    dialog = _dialog(qtbot, window)
    assert dialog.config.currentText() == "facemask"  # the Run toolbar's choice
    dialog.checks["ai_core"].setChecked(True)
    dialog.metrics.setCurrentText("PipeUtilization")
    dialog.accept()
    console = _console(qtbot, window)
    _finished(qtbot, console)
    assert "--aic-metrics=PipeUtilization" in console.output()
    qtbot.waitUntil(lambda: any(p.path.name.startswith("PROF_") for p in profiler.profiles), timeout=20000)
    loaded = next(p for p in profiler.profiles if p.path.name.startswith("PROF_"))
    assert window.docks["profiler"].isVisible()
    # the fixture's numbers: every complete event of the real trace, every row of its op summary
    events = json.loads((ascend_fixtures / "pytorch_npu" / "trace_view.json").read_text())
    events = events if isinstance(events, list) else events["traceEvents"]
    assert loaded.trace.size == sum(1 for e in events if e.get("ph") == "X")
    import csv

    with open(ascend_fixtures / "msprof" / "op_summary_legacy_header.csv", newline="") as handle:
        op_rows = list(csv.DictReader(handle))
    table = next(t for kind, t in loaded.trace.tables.items() if "op_summary" in kind)
    assert len(table.rows) == len(op_rows)
    assert not list(window.real_root.rglob(".*studio-part*"))


def test_benchmark_from_the_profiler_panel_with_the_original_model(qtbot, window, tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    weight = numpy_helper.from_array(np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 64])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    reference = tmp_path / "mm.onnx"
    onnx.save(model, reference)
    om = fake_om(tmp_path / "mm.om")

    profiler = window.panels["profiler"]
    profiler.host_actions["bench"].trigger()
    dialog = _dialog(qtbot, window)
    dialog.model.edit.setText(str(om))
    dialog.reference.edit.setText(str(reference))
    dialog.tool.setCurrentText("msame")
    dialog.loop.setValue(12)
    dialog.warmup.setValue(2)
    dialog.accept()
    shapes = _dialog(qtbot, window)  # the batch dim is dynamic: asked, never set to 1
    assert shapes.shapes() is None
    shapes.set_dims("x", [3, 64])
    shapes.accept()
    console = _console(qtbot, window)
    _finished(qtbot, console)
    pair = console.outcome
    assert pair.reference.loops == 12 and pair.reference.warmup == 2 and pair.reference.batch == 3
    assert "inputs x: [3, 64]" in pair.reference.notes[-1]
    # msame's numbers, against the raw times the stand-in printed (its first, cold loop left out)
    times = np.array(recorded(window.toolkit)[-1]["times"][1:])
    assert pair.npu.compute.mean == pytest.approx(times.mean(), abs=1e-6)
    compare_tab = profiler.compare_tab
    qtbot.waitUntil(lambda: len(compare_tab.bench.shown_rows()) == 6, timeout=20000)
    assert profiler.tabs.currentWidget() is compare_tab and compare_tab.tabs.isTabVisible(2)
    rows = {row[0]: row for row in compare_tab.bench.shown_rows()}
    assert rows["mean_ms"][1] == pytest.approx(pair.reference.compute.mean)
    assert rows["mean_ms"][2] == pytest.approx(times.mean(), abs=1e-6)
    assert rows["mean_ms"][3] == pytest.approx(pair.reference.compute.mean / times.mean(), rel=1e-6)
    labels = [p.path.name for p in profiler.profiles]
    assert any(name.endswith("-onnxruntime") for name in labels)
    assert any(name.startswith("bench-host-") for name in labels)
    # Summary of the .om's folder: the parsed numbers
    npu_index = next(i for i, p in enumerate(profiler.profiles) if p.path.name.startswith("bench-host-")
                     and not p.path.name.endswith("-onnxruntime"))
    profiler.profile_box.setCurrentIndex(npu_index)
    facts = {row[0]: row[1] for row in profiler.summary.shown_rows()}
    assert facts["Benchmark"].startswith("msame on testhost")
    assert facts["Latency mean / p50 / p99"].startswith(f"{times.mean():.3f} ms")


def test_dump_on_host_and_compare_from_the_accuracy_panel(qtbot, window, ascend_fixtures, tmp_path):
    reference = facemask_onnx(tmp_path / "facemask.onnx")
    x = np.random.default_rng(1).standard_normal((1, 4, 8, 8)).astype(np.float32)
    image = tmp_path / "image.npy"
    np.save(image, x)
    om = tmp_path / "facemask.om"
    om.write_bytes((ascend_fixtures / "om" / "root_model.om").read_bytes())

    accuracy = window.panels["accuracy"]
    accuracy.host_actions["dump_compare"].trigger()
    dialog = _dialog(qtbot, window)
    dialog.config.setCurrentText("withinput")
    dialog.model.edit.setText(str(om))
    dialog.reference.edit.setText(str(reference))
    dialog.inputs.setPlainText(f"x={image}")
    dialog.accept()
    console = _console(qtbot, window)
    _finished(qtbot, console)
    qtbot.waitUntil(lambda: accuracy.result is not None, timeout=20000)
    assert window.docks["accuracy"].isVisible() and accuracy.model.rowCount() >= 2
    rows = {row.name: row for row in accuracy.result.rows if row.metrics is not None}
    # the "NPU" computed in FP16 (the stand-in app); the CPU in FP32: the cosine, computed here
    golden = (x * np.float32(0.5)).astype(np.float64).ravel()
    target = (x * np.float32(0.5)).astype(np.float16).astype(np.float64).ravel()
    cosine = golden @ target / np.linalg.norm(golden) / np.linalg.norm(target)
    assert rows["conv1"].metrics.cosine == pytest.approx(cosine, abs=1e-9)
    assert rows["conv1"].status == "pass" and rows["relu1"].status == "pass" and bool(accuracy.result)
    assert "consistent" in accuracy.findings.text().lower() or accuracy.findings.text()


def test_dump_on_host_from_the_accuracy_panel_opens_the_dumps(qtbot, window, ascend_fixtures, tmp_path):
    om = tmp_path / "facemask.om"
    om.write_bytes((ascend_fixtures / "om" / "root_model.om").read_bytes())
    accuracy = window.panels["accuracy"]
    accuracy.host_actions["dump"].trigger()
    dialog = _dialog(qtbot, window)
    dialog.model.edit.setText(str(om))
    dialog.mode.setCurrentText("all")
    dialog.accept()
    _finished(qtbot, _console(qtbot, window))
    qtbot.waitUntil(lambda: any(panel == "accuracy" for _, panel in window.routed), timeout=10000)
    path = next(p for p, panel in window.routed if panel == "accuracy")
    assert sorted(f.name.split(".")[0] for f in path.iterdir()) == ["Conv2D", "Relu"]


def test_stop_from_the_panel_kills_the_remote_process_group(qtbot, window):
    """Profile on host from the profiler, then Stop in its console: ``ps`` on the host shows the
    stand-in msprof's process group gone (msprof and the app it started)."""
    window.panels["profiler"].host_actions["profile"].trigger()
    dialog = _dialog(qtbot, window)
    dialog.config.setCurrentText("slow")
    dialog.accept()
    console = _console(qtbot, window)
    qtbot.waitUntil(lambda: "frame 3:" in console.output(), timeout=30000)
    groups = _groups(f"--frames {FRAMES_SLOW}")
    assert groups, "the app runs on the host"
    members = [line for line in _ps() if line[1] in groups]
    assert any("msprof" in args for _, _, args in members) and any("acl_app.py" in args for _, _, args in members)
    console.stop()
    qtbot.waitUntil(lambda: console.state == "stopped", timeout=15000)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(line[1] in groups for line in _ps()):
        time.sleep(0.1)
    assert [line for line in _ps() if line[1] in groups] == []
    assert f"frame {FRAMES_SLOW - 1}:" not in console.output()


def test_without_a_configuration_the_action_opens_edit_configurations(qtbot, make_window, tmp_path, sshd_host,
                                                                     ascend_fixtures):
    win = _window(make_window, tmp_path, sshd_host, ascend_fixtures, configs=False)
    accuracy = win.panels["accuracy"]
    action = accuracy.host_actions["dump"]
    assert action.isEnabled() and "Edit Configurations" in action.toolTip()
    action.trigger()
    from studio.ui.panels.run.dialog import RunConfigDialog

    qtbot.waitUntil(lambda: any(w.isVisible() for w in win.findChildren(RunConfigDialog)), timeout=5000)
    dialog = next(w for w in win.findChildren(RunConfigDialog) if w.isVisible())
    assert "Dump on host" in dialog.problem.text() and "Add one here" in dialog.problem.text()
    assert win.run_controls.host.dialog is None  # no dump dialog without a configuration
    dialog.reject()


def test_without_a_workspace_the_action_says_how_to_make_one(qtbot, make_window, tmp_path, sshd_host, ascend_fixtures):
    win = _window(make_window, tmp_path, sshd_host, ascend_fixtures, workspace=False)
    profiler = win.panels["profiler"]
    profiler.host_actions["bench"].trigger()
    qtbot.waitUntil(lambda: bool(win.notices), timeout=5000)
    notice = win.notices[-1]
    assert "workspace" in notice.message and "File > New Workspace" in f"{notice.message} {notice.details}"
    assert win.run_controls.host.dialog is None


def _ps() -> list[tuple[str, str, str]]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,pgid=,args="], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3:
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def _groups(marker: str) -> set[str]:
    return {pgid for _pid, pgid, args in _ps() if marker in args and "ps -eo" not in args}
