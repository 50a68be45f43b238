"""``studio infer`` on real models nobody here built — a classifier, a detector, a segmenter — with
every answer and metric checked against a plain ONNX Runtime run and numpy in the test."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.corpus import manifest
from studio.tools.corpus.fetch import model_path
from studio.tools.infer.runner import InferOptions, run_infer

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def _session(model: Path):
    import onnxruntime as ort

    return ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])


def _pictures(folder: Path, count: int = 4) -> Path:
    from studio.tools.demo.images import make_demo_images

    folder.mkdir()
    for name, image in list(make_demo_images(seed=7).items())[:count]:
        cv2.imwrite(str(folder / f"{name}.png"), image)
    return folder


def test_resnet50_top1_and_top5_against_labels(corpus_root, tmp_path):
    model = model_path(manifest.entry("resnet50_light"), corpus_root)
    pictures = _pictures(tmp_path / "p")
    session = _session(model)
    expected, labels = {}, []
    for k, path in enumerate(sorted(pictures.iterdir())):
        image = cv2.imread(str(path))
        side = 224 / 0.875 / min(image.shape[:2])
        big = cv2.resize(image, (round(image.shape[1] * side), round(image.shape[0] * side)))
        top, left = (big.shape[0] - 224) // 2, (big.shape[1] - 224) // 2
        rgb = big[top:top + 224, left:left + 224, ::-1].astype(np.float32)
        x = ((rgb - [123.675, 116.28, 103.53]) / [58.395, 57.12, 57.375]).astype(np.float32)
        probs = session.run(None, {"gpu_0/data_0": x.transpose(2, 0, 1)[None]})[0][0]
        order = np.argsort(-probs)
        expected[path.name] = order[:5]
        labels.append(f"{path.name},{order[0] if k % 2 == 0 else order[1]}")  # half right at top-1, all in top-5
    (tmp_path / "labels.csv").write_text("\n".join(labels))
    result = run_job(run_infer(InferOptions(model, pictures, tmp_path / "out", "classify",
                                            truth=tmp_path / "labels.csv")))
    for row in result.rows:
        assert [t["class"] for t in row["top"]] == expected[row["image"]].tolist()
    assert result.summary["top1_accuracy"] == 0.5 and result.summary["top5_accuracy"] == 1.0


def test_ppocr_text_detector_masks_against_a_plain_run(corpus_root, tmp_path):
    model = model_path(manifest.entry("ppocr_det"), corpus_root)
    pictures = _pictures(tmp_path / "p", 2)
    masks = tmp_path / "masks"
    masks.mkdir()
    session = _session(model)
    planes = {}
    for k, path in enumerate(sorted(pictures.iterdir())):
        image = cv2.imread(str(path))
        x = cv2.resize(image, (640, 640))[:, :, ::-1].astype(np.float32) / 255.0
        plane = session.run(None, {"x": x.transpose(2, 0, 1)[None]})[0][0, 0]
        mask = cv2.resize((plane > 0.5).astype(np.uint8), image.shape[1::-1], interpolation=cv2.INTER_NEAREST)
        planes[path.name] = mask
        truth = mask if k == 0 else np.zeros_like(mask)  # the first: its own answer; the second: nothing
        cv2.imwrite(str(masks / path.name), truth)
    result = run_job(run_infer(InferOptions(model, pictures, tmp_path / "out", "segment", truth=masks,
                                            size=(640, 640))))
    first, second = result.rows
    assert first["dice"] == 1.0 and first["iou"] == 1.0
    share = float(np.count_nonzero(planes[second["image"]])) / planes[second["image"]].size
    assert second["foreground_share"] == pytest.approx(share, abs=1e-6)
    assert second["dice"] == (0.0 if share > 0 else 1.0)


def test_ddddocr_detector_boxes_equal_an_independent_decode(corpus_root, tmp_path):
    model = model_path(manifest.entry("ddddocr_det"), corpus_root)
    image = np.full((416, 416, 3), 230, np.uint8)
    for letter, x, y in (("A", 40, 100), ("K", 200, 150), ("Q", 300, 320)):
        cv2.putText(image, letter, (x, y), cv2.FONT_HERSHEY_SIMPLEX, 2.5, (20, 20, 20), 6)
    pictures = tmp_path / "p"
    pictures.mkdir()
    cv2.imwrite(str(pictures / "letters.png"), image)
    raw = _session(model).run(None, {"images": image.astype(np.float32).transpose(2, 0, 1)[None]})[0][0]
    cells = [(s, gy, gx) for s in (8, 16, 32) for gy in range(416 // s) for gx in range(416 // s)]
    stride = np.array([c[0] for c in cells], float)
    cx = (raw[:, 0] + [c[2] for c in cells]) * stride
    cy = (raw[:, 1] + [c[1] for c in cells]) * stride
    w, h = np.exp(raw[:, 2]) * stride, np.exp(raw[:, 3]) * stride
    score = raw[:, 4] * raw[:, 5]
    best = int(np.argmax(score))
    result = run_job(run_infer(InferOptions(model, pictures, tmp_path / "out", "detect", preset="raw", bgr=True,
                                            conf=0.05)))
    assert any("yolox" in note for note in result.notes)
    top = result.rows[0]["boxes"][0]
    np.testing.assert_allclose(top["box"], [cx[best] - w[best] / 2, cy[best] - h[best] / 2,
                                            cx[best] + w[best] / 2, cy[best] + h[best] / 2], atol=0.01)
    assert top["score"] == pytest.approx(float(score[best]), abs=1e-5)
