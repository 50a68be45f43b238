"""The gallery answers the task the model has: a U-Net (output [1, 2, 256, 256]) left to its output
shape runs as segment and says it guessed; asked to classify, it is refused (its "classes" would be
131,072 pixels) in the window and on the command line. The Run… dialog remembers the model and
pictures, a rerun gets its own folder, and the preview does not keep the last run's picture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from studio.core.errors import UserError
from studio.core.jobs import run_job


@pytest.fixture
def unet(tmp_path) -> tuple[Path, Path]:
    from studio.tools.demo.images import make_demo_images
    from studio.tools.demo.models import build_unet

    model = tmp_path / "unet.onnx"
    onnx.save(build_unet(), model)
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    for name, image in list(make_demo_images().items())[:2]:
        cv2.imwrite(str(pictures / f"{name}.png"), image)
    return model, pictures


def _output_shape(model: Path) -> list:
    return ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).get_outputs()[0].shape


def test_a_classify_of_a_segmentation_map_is_refused(unet, tmp_path):
    from studio.tools.infer.runner import InferOptions, run_infer

    model, pictures = unet
    shape = _output_shape(model)
    assert shape == [1, 2, 256, 256] and int(np.prod(shape[1:])) == 131072  # what "classes" would be
    with pytest.raises(UserError) as info:
        run_job(run_infer(InferOptions(model, pictures, tmp_path / "out", "classify")))
    assert "131,072" in info.value.what and "mask" in info.value.where
    assert "--task segment" in info.value.fix


def test_the_cli_guesses_the_task_and_says_so_and_refuses_classify(unet, tmp_path):
    model, pictures = unet
    command = [sys.executable, "-m", "studio", "infer", str(model), str(pictures)]
    guessed = subprocess.run([*command, "-o", str(tmp_path / "a")], capture_output=True, text=True, timeout=300)
    assert guessed.returncode == 0, guessed.stderr
    assert "task: segment (guessed: output [1, 2, 256, 256] is a per-pixel map" in guessed.stdout
    refused = subprocess.run([*command, "-o", str(tmp_path / "b"), "--task", "classify"], capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode != 0 and "top-1" not in refused.stdout
    assert "error:" in refused.stderr and "fix:" in refused.stderr and "--task segment" in refused.stderr


def test_run_twice_from_the_window(qtbot, make_window, unet, tmp_path):
    model, pictures = unet
    window = make_window(build_all=True)
    qtbot.waitExposed(window)
    window.resize(1280, 720)
    window.open_workspace(tmp_path / "ws", create=True)
    gallery = window.panels["gallery"]
    window.show_panel("gallery")

    gallery._on_run_clicked()
    dialog = gallery.run_dialog
    assert dialog.task.currentText() == "from the model's output shape"  # not classify by default
    dialog.model.edit.setText(str(model))
    dialog.images.edit.setText(str(pictures))
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: gallery.state.run is not None, timeout=120000)
    first = gallery.state.run
    assert first.folder == tmp_path / "ws" / "infer" / "unet_pictures"
    assert first.summary["task"] == "segment" and "task segment (guessed" in gallery.summary.text()
    assert "top-1" not in gallery.summary.text()
    gallery.grid.setCurrentIndex(gallery.model.index(0))
    qtbot.waitUntil(lambda: gallery.preview.left.pixmap() is not None and not gallery.preview.left.pixmap().isNull(),
                    timeout=10000)

    gallery._on_run_clicked()  # the dialog starts from the last run
    dialog = gallery.run_dialog
    assert (dialog.model.path(), dialog.images.path()) == (model, pictures)
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: gallery.state.run is not first, timeout=120000)
    second = gallery.state.run
    assert second.folder == tmp_path / "ws" / "infer" / "unet_pictures_2"
    assert (first.folder / "results.json").is_file()  # the first run is still there
    assert gallery.preview.left.pixmap().isNull() and gallery.preview.details.toPlainText() == ""
