"""The accuracy panel's FP16 menu: after a failing FP16 check, a repro opens in the graph and the
FP32 set is shown with the command that applies it; both use the check's own input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from studio.ui.panels.accuracy import AccuracyPanel


@pytest.fixture
def panel(make_panel, tmp_path):
    widget = make_panel(AccuracyPanel)
    widget.workspace_folder = tmp_path
    return widget


def test_reduce_and_fp32_set_from_a_failing_fp16_check(qtbot, panel, tmp_path):
    from studio.tools.demo.journeys import build_fp16_frontend, frames_with_silence

    model = tmp_path / "fp16_frontend.onnx"
    onnx.save(build_fp16_frontend(), model)
    np.save(tmp_path / "silent.npy", frames_with_silence())
    assert not panel.fp16_button.isEnabled()
    panel.check_fp16(model, shapes={}, files={"frames": tmp_path / "silent.npy"})
    qtbot.waitUntil(lambda: panel.result is not None, timeout=60000)
    assert not panel.result and panel.fp16_button.isEnabled()
    opened: list[Path] = []
    panel.request_load.connect(opened.append)  # into the graph, quietly: the user stays on the findings
    handle = panel.reduce_failure()
    qtbot.waitUntil(lambda: not handle.active, timeout=60000)
    assert opened == [tmp_path / "accuracy" / "fp16_frontend_repro" / "model.onnx"]
    assert "Repro" in panel.findings.text() and "log/add_floor" in panel.findings.text()  # the silent input was used
    handle = panel.find_fp32_set()
    qtbot.waitUntil(lambda: not handle.active, timeout=60000)
    assert "--keep-fp32 log/add_floor,log/log" in panel.findings.text()


def test_the_searches_can_check_against_the_converted_fp16_onnx(qtbot, panel, tmp_path):
    from studio.tools.demo.journeys import build_fp16_frontend, frames_with_silence

    model = tmp_path / "fp16_frontend.onnx"
    onnx.save(build_fp16_frontend(), model)
    np.save(tmp_path / "silent.npy", frames_with_silence())
    panel.check_fp16(model, shapes={}, files={"frames": tmp_path / "silent.npy"})
    qtbot.waitUntil(lambda: panel.result is not None, timeout=60000)
    assert panel.fp16_sim_action.isChecked()
    panel.fp16_onnx_action.trigger()
    assert panel.fp16_onnx_action.isChecked() and not panel.fp16_sim_action.isChecked()
    handle = panel.reduce_failure()
    qtbot.waitUntil(lambda: not handle.active, timeout=60000)
    assert "target runs (fp16)" in panel.findings.text()
    handle = panel.find_fp32_set()
    qtbot.waitUntil(lambda: not handle.active, timeout=60000)
    # ONNX Runtime hands the Add's FP32 value on to the Log: on this target the Add alone is enough
    assert "--keep-fp32 log/add_floor</code>" in panel.findings.text() and "checks on fp16" in panel.findings.text()
    # the set, found with the fusion passes off, judged again on the build the shown command makes
    assert "verified on the build with the converter&#x27;s default passes" in panel.findings.text()
    saved = json.loads((tmp_path / "accuracy" / "fp16_frontend_fp32_set" / "precision.json").read_text())
    assert saved["default_build_check"]["verified"] is True


def test_two_msprobe_dumps_show_the_module_tree_beside_the_rows(qtbot, panel, ascend_fixtures):
    from studio.core.formats import detect

    root = ascend_fixtures / "real/msprobe/quick_start_gpu_dump_resnet/gpu_dump"
    panel.open_file(detect(root / "step0" / "proc2016" / "dump.json"))
    panel.open_file(detect(root / "step1" / "proc2016"))
    qtbot.waitUntil(lambda: panel.msprobe_result is not None, timeout=30000)
    view = panel.msprobe_view
    assert view.isVisibleTo(panel) and not panel.splitter.isVisibleTo(panel)
    assert view.rows.rowCount() == 2822 and "Tensor.add_.0.forward" in view.summary.text()
    module = next(view.tree.topLevelItem(i) for i in range(view.tree.topLevelItemCount())
                  if view.tree.topLevelItem(i).data(0, 0x0100))
    view.tree.setCurrentItem(module)
    inside = {r.target_api for r in view.rows.rows}
    assert 0 < view.rows.rowCount() < 2822
    assert all(module.data(0, 0x0100) in panel.msprobe_result.target.module_path(api) for api in inside)


def test_an_msprobe_comparison_csv_reopens_in_the_panel(qtbot, panel, ascend_fixtures, tmp_path):
    import subprocess
    import sys

    from studio.core.formats import detect

    root = ascend_fixtures / "real/msprobe/quick_start_gpu_dump_resnet/gpu_dump"
    done = subprocess.run([sys.executable, "-m", "studio", "compare", str(root / "step0"), str(root / "step1"),
                           "-o", str(tmp_path / "r.csv")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    panel.open_file(detect(tmp_path / "r.msprobe.csv"))
    qtbot.waitUntil(lambda: panel.msprobe_result is not None, timeout=30000)
    view = panel.msprobe_view
    assert view.isVisibleTo(panel) and view.rows.rowCount() == 2822
    assert "r.msprobe.csv" in view.summary.text() and "Tensor.add_.0.forward" in view.summary.text()
    assert "64 error" in view.summary.text()
