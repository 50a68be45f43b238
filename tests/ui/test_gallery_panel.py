"""The gallery: an infer run's pictures sorted worst first, thumbnails for the rows in view,
the large picture, two runs compared by picture, and a run started from the panel."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from studio.core.formats import detect
from studio.ui.panels.gallery import GalleryPanel
from studio.ui.panels.gallery.list_model import ROW_ROLE
from studio.ui.panels.gallery.thumbs import CACHE


def _run_folder(root: Path, name: str, dices: list[float], pictures: int | None = None) -> Path:
    """An infer output folder as `studio infer` writes it, with known Dice per picture."""
    folder = root / name
    (folder / "overlays").mkdir(parents=True)
    rows = []
    for k, dice in enumerate(dices):
        image = f"p{k:05d}.png"
        if pictures is None or k < pictures:
            cv2.imwrite(str(folder / "overlays" / image), np.full((40, 60, 3), k % 255, np.uint8))
        rows.append({"image": image, "ms": 1.0, "dice": dice, "iou": dice / 2, "overlay": f"overlays/{image}"})
    summary = {"images": len(rows), "failed": 0, "dice_mean": float(np.mean(dices)), "iou_mean": 0.0,
               "inference_ms_mean": 1.0}
    (folder / "results.json").write_text(json.dumps({"format": "studio-infer", "summary": summary, "notes": [],
                                                     "preprocess": {}, "images": rows}))
    return folder


@pytest.fixture
def panel(make_panel):
    return make_panel(GalleryPanel)


def _open(qtbot, panel, folder: Path, compare: bool = False) -> None:
    handle = panel.open_results(folder, compare=compare) if compare else None
    if handle is None:
        panel.open_file(detect(folder))
    qtbot.waitUntil(lambda: panel.state.run is not None and (not compare or panel.state.other is not None),
                    timeout=10000)


def test_worst_dice_first_and_thumbnails_of_the_rows_in_view(qtbot, panel, tmp_path):
    panel.show()
    # empty: nothing to sort, filter or compare yet (no empty Sort box)
    assert not panel.view_bar.isVisible() and not panel.compare_button.isEnabled() and panel.empty.isVisible()
    dices = [0.9, 0.2, 0.5, 0.95, 0.1]
    _open(qtbot, panel, _run_folder(tmp_path, "fp32", dices))
    assert panel.view_bar.isVisible() and panel.compare_button.isEnabled()
    assert panel.sort_combo.currentText() and panel.sort_combo.count() > 1
    assert [r["dice"] for r in panel.model.rows] == sorted(dices)  # sorted by Dice, worst first
    panel.show_combo.setCurrentIndex(1)  # worst 20
    assert len(panel.model.rows) == 5
    qtbot.waitUntil(lambda: all(panel.model.key(r) in panel.cache for r in panel.model.rows), timeout=10000)
    panel.grid.setCurrentIndex(panel.model.index(0))
    qtbot.waitUntil(lambda: bool(panel.preview._images), timeout=10000)
    assert "dice: 0.1" in panel.preview.details.toPlainText()


def test_ten_thousand_pictures_load_only_the_thumbnails_in_view(qtbot, panel, tmp_path):
    count = 10_000
    dices = list(np.linspace(0, 1, count))
    _open(qtbot, panel, _run_folder(tmp_path, "big", dices, pictures=200))
    assert len(panel.model.rows) == count
    qtbot.waitUntil(lambda: len(panel.cache._items) > 0, timeout=10000)
    qtbot.wait(300)
    assert len(panel.cache._items) < 400 <= count  # the rows on screen and a margin, not the folder
    assert CACHE < count


def test_two_runs_compared_by_picture(qtbot, panel, tmp_path):
    _open(qtbot, panel, _run_folder(tmp_path, "fp32", [0.9, 0.8, 0.7]))
    _open(qtbot, panel, _run_folder(tmp_path, "fp16", [0.9, 0.4, 0.75]), compare=True)
    data = [panel.sort_combo.itemData(i) for i in range(panel.sort_combo.count())]
    assert "delta:dice" in data
    panel.sort_combo.setCurrentIndex(data.index("delta:dice"))
    first = panel.model.rows[0]
    assert first["image"] == "p00001.png"  # the biggest drop (-0.4) first
    assert "(-0.400)" in panel.model.data(panel.model.index(0))
    panel.grid.setCurrentIndex(panel.model.index(0))
    assert panel.preview.right.isVisibleTo(panel.preview)
    assert "fp16" in panel.preview.details.toPlainText()
    assert panel.model.index(0).data(ROW_ROLE)["image"] == "p00001.png"


def test_run_from_the_panel(qtbot, panel, tmp_path):
    import onnx

    from studio.tools.demo.images import make_demo_images
    from studio.tools.demo.models import build_unet
    from studio.tools.infer.runner import InferOptions

    onnx.save(build_unet(), tmp_path / "unet.onnx")
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    for name, image in list(make_demo_images().items())[:2]:
        cv2.imwrite(str(pictures / f"{name}.png"), image)
    panel.run_infer(InferOptions(tmp_path / "unet.onnx", pictures, tmp_path / "out", "segment"))
    qtbot.waitUntil(lambda: panel.state.run is not None, timeout=60000)
    assert len(panel.model.rows) == 2 and (tmp_path / "out" / "results.csv").is_file()
