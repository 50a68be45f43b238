"""Journey 6 (the part that runs on this computer) in the main window at 1,280 × 720: the demo's MindX
SDK pipeline is opened from the Workspace tree → it draws as a graph → its check names the missing
``mxpi_tensorinfer0.modelPath`` → the property is set to the demo U-Net in the details panel and
saved → the Gallery runs that model over the demo pictures and shows each mask with its numbers.

Every step is a click or typed text. Checked independently: the saved file differs from the one
written by the demo in that one value only; the model's own ONNX Runtime run on a demo picture
gives the foreground share the gallery shows.
"""

from __future__ import annotations

import json

import cv2
import numpy as np
import onnxruntime as ort
from journey_shots import journey_size, shot
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QToolButton

from studio.core.jobs import run_job
from studio.core.workspace import Workspace

PIPELINE = "app/pipeline/unet_simple_opencv.pipeline"
ELEMENT = "unet_mindx/mxpi_tensorinfer0"


def _tree_rows(tree):
    rows, stack = [], [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())][::-1]
    while stack:
        item = stack.pop()
        rows.append(item)
        stack.extend(item.child(i) for i in range(item.childCount() - 1, -1, -1))
    return rows


def _double_click_row(qtbot, tree, item) -> None:
    tree.scrollToItem(item)
    point = tree.visualItemRect(item).center()
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.mouseDClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=point)


def _open_in_workspace_tree(qtbot, window, path) -> None:
    """Expand the tree down to ``path`` and double-click it, as a user does."""
    tree = window.workspace_tree
    view, model = tree.view, tree.model
    for part in [*path.relative_to(tree.folder).parents][-2::-1] + [path.relative_to(tree.folder)]:
        target = str(tree.folder / part)
        qtbot.waitUntil(lambda t=target: model.index(t).isValid(), timeout=10000)
        index = model.index(target)
        view.scrollTo(index)
        rect = view.visualRect(index)
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        if (tree.folder / part).is_dir():
            qtbot.waitUntil(lambda i=index: view.isExpanded(i), timeout=5000)


def _foreground_share(model, picture) -> float:
    """The share of pixels the U-Net calls foreground, computed here: RGB / 255, NCHW, argmax."""
    image = cv2.cvtColor(cv2.imread(str(picture)), cv2.COLOR_BGR2RGB).astype(np.float32) / 255.0
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: image.transpose(2, 0, 1)[None]})[0]
    return float(np.count_nonzero(out[0].argmax(axis=0))) / (out.shape[2] * out.shape[3])


def test_pipeline_to_gallery_in_the_window(qtbot, make_window, tmp_path):
    from studio.tools.demo.workspace import ensure_demo_workspace
    from studio.tools.graph.demo import add_to_demo

    demo = tmp_path / "demo"
    run_job(ensure_demo_workspace(demo, with_tools=False))  # what `studio demo create` writes, but the profiles
    run_job(add_to_demo(demo))  # the graph's part: the MindX app's pipeline
    Workspace.create(demo, name="Demo")
    pipeline = demo / PIPELINE
    written = pipeline.read_bytes()
    size = journey_size()
    window = make_window(build_all=True)
    qtbot.waitExposed(window)
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    assert window.open_workspace(demo) is not None
    graph, gallery = window.panels["graph"], window.panels["gallery"]

    # 1. the pipeline, double-clicked in the Workspace tree, draws as a graph of its six elements
    _open_in_workspace_tree(qtbot, window, pipeline)
    qtbot.waitUntil(lambda: graph.left.view is not None and graph.left.model.path == pipeline, timeout=20000)
    assert window.is_in_front("graph")
    elements = {item.name for item in graph.left.view.items if item.kind == "node"}
    assert elements == {f"unet_mindx/{name}" for name in json.loads(written)["unet_mindx"] if name != "stream_config"}
    shot(window, "pipeline", "1_opened")

    # 2. the check names the model path that does not exist
    details = graph.details
    rows = _tree_rows(details)
    check = next(r for r in rows if r.text(0).startswith("Check:"))
    assert check.text(0).startswith("Check: 1 error(s)")
    finding = check.child(0)
    assert "mxpi_tensorinfer0" in finding.text(0) and finding.text(1).startswith("modelPath:")
    assert not (demo / "app" / "model" / "unet.om").exists()  # independently: the file is not there

    # 3. double-click the finding: the element is selected; double-click its modelPath, type, Save
    _double_click_row(qtbot, details, finding)
    qtbot.waitUntil(lambda: graph.left.selected_node >= 0
                    and graph.left.graph.nodes[graph.left.selected_node].name == ELEMENT, timeout=5000)
    model_row = next(r for r in _tree_rows(details) if r.text(0) == "modelPath")
    assert model_row.text(1) == "./model/unet.om"
    typed = []

    def fill_dialog():
        dialog = QApplication.activeModalWidget()
        if dialog is None:
            QTimer.singleShot(50, fill_dialog)
            return
        dialog.value_edit.selectAll()
        qtbot.keyClicks(dialog.value_edit, "../models/unet.onnx")
        typed.append(dialog.value)
        shot(dialog, "pipeline", "3_property_dialog")
        qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)

    QTimer.singleShot(0, fill_dialog)
    _double_click_row(qtbot, details, model_row)
    assert typed == ["../models/unet.onnx"]
    qtbot.waitUntil(lambda: graph.left.model is not None and not graph.left.model.findings
                    and graph.left.selected_node >= 0, timeout=20000)  # saved, read again, checked: clean
    # the file on disk changed in that value only
    assert pipeline.read_bytes() == written.replace(b'"./model/unet.om"', b'"../models/unet.onnx"')
    assert not any(r.text(0).startswith("Check:") for r in _tree_rows(details))
    shot(window, "pipeline", "3_saved")

    # 4. the Gallery: Run…, the model the pipeline now names and the demo pictures, typed; Run
    window.show_panel("gallery")
    run_button = next(b for b in gallery.findChildren(QToolButton) if b.text() == "Run…")
    qtbot.mouseClick(run_button, Qt.MouseButton.LeftButton)
    dialog = gallery.run_dialog
    qtbot.waitUntil(dialog.isVisible)
    model = (pipeline.parent.parent / "../models/unet.onnx").resolve()
    qtbot.keyClicks(dialog.model.edit, str(model))
    qtbot.keyClicks(dialog.images.edit, str(demo / "images"))
    shot(dialog, "pipeline", "4_run_dialog")
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: gallery.state.run is not None, timeout=120000)

    # 5. masks, segmentation guessed from the output shape, and each picture's numbers
    run = gallery.state.run
    pictures = sorted(p.name for p in (demo / "images").glob("*.png"))
    assert sorted(row["image"] for row in run.rows) == pictures
    assert "task segment (guessed" in gallery.summary.text() and "top-1" not in gallery.summary.text()
    assert gallery.sort_combo.currentText() == "foreground share"
    for row in run.rows:
        overlay = cv2.imread(str(run.folder / row["overlay"]))
        original = cv2.imread(str(demo / "images" / row["image"]))
        assert overlay.shape == original.shape and np.abs(overlay.astype(int) - original).max() > 0  # a mask drawn
        assert 0.0 <= row["foreground_share"] <= 1.0 and row["ms"] > 0
    square = next(row for row in run.rows if row["image"] == "segmentation_256.png")  # 256 x 256: no resizing
    assert abs(square["foreground_share"] - _foreground_share(model, demo / "images" / "segmentation_256.png")) < 1e-5
    captions = [gallery.model.index(i).data() for i in range(gallery.model.rowCount())]
    assert all("foreground share" in caption for caption in captions), captions
    index = next(gallery.model.index(i) for i in range(gallery.model.rowCount())
                 if "segmentation_256" in gallery.model.index(i).data())
    qtbot.mouseClick(gallery.grid.viewport(), Qt.MouseButton.LeftButton, pos=gallery.grid.visualRect(index).center())
    qtbot.waitUntil(lambda: gallery.preview.left.pixmap() is not None and not gallery.preview.left.pixmap().isNull(),
                    timeout=10000)
    assert "foreground_share" in gallery.preview.details.toPlainText()
    qtbot.waitUntil(lambda: not window.runner.active_jobs, timeout=30000)  # the thumbnails are in
    shot(window, "pipeline", "5_gallery")
    assert (window.width(), window.height()) == size
    bar = window.statusBar()
    assert bar.isVisible() and bar.mapTo(window, bar.rect().bottomLeft()).y() < size[1]
