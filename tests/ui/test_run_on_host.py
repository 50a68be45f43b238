"""Run menu host actions against the real sshd: Profile on host, Dump on host, Benchmark, a host run."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from standins import facemask_onnx, fake_om, make_standin_toolkit

from studio.runs.config import RunConfig, save_config
from studio.tools.profiler.msprof_cmd import MsprofOptions
from studio.core.workspace import Workspace

APP = Path(__file__).resolve().parents[1] / "cann_standins" / "app" / "acl_app.py"


@pytest.fixture
def window(make_window, tmp_path, sshd_host, ascend_fixtures):
    from studio.remote.context import HostContext
    from studio.remote.hosts import HostStore

    entry, known = sshd_host
    entry.toolkit = str(make_standin_toolkit(tmp_path / "cann", ascend_fixtures))
    entry.extra["deploy_root"] = str(tmp_path / "host root")
    store = HostStore(tmp_path / "hosts.toml")
    store.put(entry)
    store.save()  # panels built later reload the store from its file
    win = make_window(show=False)
    win.links.host_context = HostContext(store=store, known_hosts=known)
    win.show()
    ws = Workspace.create(tmp_path / "ws")
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    fake_om(app_dir / "facemask.om")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(APP))} --model facemask.om --frames 2"
    save_config(ws, RunConfig("facemask", command, target=entry.name, workdir=str(app_dir)))
    win.open_workspace(ws.folder)
    routed = []
    win.file_routed.connect(lambda d: routed.append((d.path, d.format.panel)))
    win.routed = routed
    return win


def _finished(qtbot, console):
    qtbot.waitUntil(lambda: console.state not in ("starting", "running"), timeout=60000)
    assert console.state == "ok", console.output()


def test_run_on_the_host_streams_into_the_console(qtbot, window):
    console = window.run_controls.run("facemask")
    _finished(qtbot, console)
    assert "[INFO] frame 1: 2 faces, 1 mask" in console.output() and console.where == "testhost"


def test_profile_on_host_opens_the_prof_folder_in_the_profiler(qtbot, window):
    console = window.run_controls.profile("facemask", MsprofOptions(ai_core=True, aic_metrics="Memory"))
    _finished(qtbot, console)
    assert "--aic-metrics=Memory" in console.output() and "Data is saved in" in console.output()
    qtbot.waitUntil(lambda: any(panel == "profiler" for _, panel in window.routed), timeout=10000)
    path = next(p for p, panel in window.routed if panel == "profiler")
    assert path.name.startswith("PROF_") and path.parent.parent == window.workspace.folder / "profiles"
    # asked from the Run menu: the console the user reads stays, the profile loads behind it
    assert window.is_in_front("run") and not window.is_in_front("profiler")
    assert "opened in the Profiler panel" in window.statusBar().full_message()


def test_dump_on_host_opens_the_dumps_in_the_accuracy_panel(qtbot, window, ascend_fixtures, tmp_path):
    om = tmp_path / "facemask.om"
    om.write_bytes((ascend_fixtures / "om" / "root_model.om").read_bytes())
    console = window.run_controls.dump("facemask", om, mode="all")
    _finished(qtbot, console)
    qtbot.waitUntil(lambda: any(panel == "accuracy" for _, panel in window.routed), timeout=10000)
    path = next(p for p, panel in window.routed if panel == "accuracy")
    assert sorted(f.name.split(".")[0] for f in path.iterdir()) == ["Conv2D", "Relu"]


def test_benchmark_on_the_host(qtbot, window, tmp_path):
    console = window.run_controls.bench("facemask", fake_om(tmp_path / "m.om"), "ais_bench", loop=10, warmup=1)
    _finished(qtbot, console)
    text = console.output()
    assert "NPU_compute_time (ms)" in text and "latency mean / p50 / p99:" in text
    assert console.outcome.npu.where == "testhost" and console.outcome.npu.loops == 10
    qtbot.waitUntil(lambda: any(panel == "profiler" for _, panel in window.routed), timeout=10000)
    path = next(p for p, panel in window.routed if panel == "profiler")
    assert path.name.startswith("bench-host-") and (path / "studio_profile.json").is_file()


def test_dump_on_host_and_compare_shows_the_comparison(qtbot, window, ascend_fixtures, tmp_path):
    import numpy as np

    reference = facemask_onnx(tmp_path / "facemask.onnx")
    image = tmp_path / "image.npy"
    np.save(image, np.random.default_rng(1).standard_normal((1, 4, 8, 8)).astype(np.float32))
    command = (f"{shlex.quote(sys.executable)} {shlex.quote(str(APP))} --model facemask.om --frames 1 "
               "--input image.npy")
    save_config(window.workspace, RunConfig("withinput", command, target="testhost", workdir=str(tmp_path / "app")))
    om = tmp_path / "facemask.om"
    om.write_bytes((ascend_fixtures / "om" / "root_model.om").read_bytes())
    console = window.run_controls.dump_compare("withinput", om, reference, {"x": image})
    _finished(qtbot, console)
    accuracy = window.panels["accuracy"]
    qtbot.waitUntil(lambda: getattr(accuracy, "result", None) is not None, timeout=10000)
    names = {row.name for row in accuracy.result.rows if row.metrics is not None}
    assert {"conv1", "relu1"} <= names and bool(accuracy.result)
    assert window.is_in_front("run") and not window.is_in_front("accuracy")  # asked from the Run menu
    assert "the result is in the Accuracy panel" in window.statusBar().full_message()


def test_upload_first_shows_the_plan_then_runs(qtbot, window, tmp_path):
    from studio.tools.deploy.deployments import Deployment, DeploymentStore

    project = tmp_path / "project"
    project.mkdir()
    fake_om(project / "facemask.om")
    remote = tmp_path / "deployed"
    store = DeploymentStore()
    store.put(Deployment("fm", "testhost", str(project), str(remote)))
    store.save()
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(APP))} --model facemask.om --frames 1"
    save_config(window.workspace, RunConfig("deployed", command, target="testhost", workdir=str(remote), upload="fm"))
    console = window.run_controls.run("deployed")
    _finished(qtbot, console)
    text = console.output()
    assert "upload plan of fm:" in text and "facemask.om" in text
    assert text.index("upload plan of fm:") < text.index("[INFO] frame 0: 2 faces, 1 mask")
    assert (remote / "facemask.om").read_bytes() == (project / "facemask.om").read_bytes()
