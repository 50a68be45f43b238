"""The profiler's "Benchmark model…": the dialog, the sizes of dynamic dims asked (never guessed), the
timed loops written as a benchmark folder, opened, and its numbers checked against the raw loops."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from PySide6.QtWidgets import QDialogButtonBox, QLabel

from studio.ui.panels.profiler import ProfilerPanel

from convert_helpers import conv_bn_model
from test_cli import run_studio


@pytest.fixture
def panel(make_panel, tmp_path):
    widget = make_panel(ProfilerPanel)
    widget.workspace_folder = tmp_path / "ws"
    return widget


def test_benchmark_a_dynamic_model_here(panel, qtbot, tmp_path, studio_home):
    model = tmp_path / "dyn.onnx"
    onnx.save(conv_bn_model(size=32, batch="N"), model)
    panel.ask_bench(model)
    dialog = panel.bench_dialog
    assert dialog.model_edit.text() == str(model) and dialog.where.count() == 1  # no host added: here only
    dialog.loop.setValue(7)
    dialog.warmup.setValue(1)
    dialog.accept()

    # The batch dim is dynamic: its size is asked, in the benchmark's words.
    qtbot.waitUntil(lambda: panel.shape_dialog is not None and panel.shape_dialog.isVisible(), timeout=20_000)
    shapes = panel.shape_dialog
    intro = " ".join(label.text() for label in shapes.findChildren(QLabel))
    assert "to benchmark it" in intro and "profile" not in intro
    assert shapes.buttons.button(QDialogButtonBox.StandardButton.Ok).text() == "Benchmark"
    shapes.boxes["image"][0].setText("2")
    shapes.accept()
    qtbot.waitUntil(lambda: panel.last_bench is not None, timeout=60_000)

    bench = panel.last_bench
    lat = np.array(bench["latencies_ms"])
    assert bench["tool"] == "onnxruntime" and bench["where"] == "local" and bench["model"] == str(model)
    assert bench["loops"] == 7 == len(lat) and bench["warmup"] == 1 and bench["batch"] == 2
    assert bench["mean_ms"] == pytest.approx(lat.mean()) and bench["p50_ms"] == pytest.approx(np.median(lat))
    assert bench["min_ms"] == lat.min() and bench["max_ms"] == lat.max()
    assert bench["throughput"] == pytest.approx(7 * 2 / (lat.sum() / 1000.0))
    assert any("inputs image: [2, 3, 32, 32]" in note for note in bench["notes"])

    # The folder is a benchmark folder beside the workspace's profiles, open in the panel.
    folder = panel.profiles[-1].path
    assert folder.parent == tmp_path / "ws" / "profiles" and folder.name.startswith("bench-dyn_")
    assert json.loads((folder / "studio_profile.json").read_text())["benchmark"]["loops"] == 7
    trace = panel.profiles[-1].trace
    assert trace.size == 7  # one slice per timed loop
    assert panel.tabs.currentWidget() is panel.summary
    assert "dyn.onnx with onnxruntime on this computer: mean" in panel.info.text()

    # The same keys as the CLI's JSON.
    cli = run_studio("bench", str(model), "--loop", "2", "--warmup", "0", "--input-shape", "image=2,3,32,32", "--json",
                     home=studio_home)
    assert cli.returncode == 0, cli.stderr
    assert set(json.loads(cli.stdout)) == set(bench)


def test_the_dialog_refuses_what_is_not_an_onnx_model(panel, tmp_path):
    panel.ask_bench(tmp_path / "model.om")
    ok = panel.bench_dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled() and "Benchmark .om" in ok.toolTip()
    panel.bench_dialog.model_edit.setText(str(tmp_path / "m.onnx"))
    assert ok.isEnabled()
    panel.bench_dialog.reject()


def test_a_missing_model_is_said_in_the_panel(panel, qtbot, tmp_path):
    posted = []
    stop = panel.runner.board.subscribe(posted.append)
    try:
        panel.ask_bench(tmp_path / "gone.onnx")
        panel.bench_dialog.accept()
        qtbot.waitUntil(lambda: panel.info.text().startswith("Could not benchmark gone.onnx"), timeout=20_000)
    finally:
        stop()
    assert panel.last_bench is None
    # why is on the notice board, once; the panel's line does not say it a second time
    assert len(posted) == 1 and "gone.onnx" in posted[0].message
    assert panel.info.text() == "Could not benchmark gone.onnx"
