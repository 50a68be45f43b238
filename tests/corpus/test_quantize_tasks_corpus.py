"""INT8 with task targets on real models nobody here built: PP-OCR's text detector (a per-pixel
text map: a segmenter, judged on Dice against the drawn words' boxes) and ddddocr's character
detector (YOLOX, judged on mAP@0.5 against the drawn glyphs' boxes). The ground truth comes from
what was drawn, not from a model; FP32's and the mixed model's metrics are recomputed with numpy
on plain ONNX Runtime runs."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.ops import quantize as op
from studio.tools.corpus import manifest
from studio.tools.corpus.fetch import model_path
from corpus_helpers import full_only

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def _ort(model, name, tensors):
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return [session.run(None, {name: t})[0] for t in tensors]


def _words(folder, count, side=320):
    """Dark words on light paper; the mask of each word's text line box."""
    rng = np.random.default_rng(2)
    folder.mkdir()
    (folder.parent / "masks").mkdir()
    masks = []
    for i in range(count):
        image = np.full((side, side, 3), int(rng.integers(215, 250)), np.uint8)
        mask = np.zeros((side, side), np.uint8)
        for k in range(3):
            word = ("STUDIO", "Ascend", "quantize", "NPU 42", "layers")[int(rng.integers(0, 5))]
            x, y = int(rng.integers(10, 80)), 60 + k * 95 + int(rng.integers(0, 20))
            cv2.putText(image, word, (x, y), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (20, 20, 20), 3, cv2.LINE_AA)
            (w, h), base = cv2.getTextSize(word, cv2.FONT_HERSHEY_SIMPLEX, 1.2, 3)
            mask[y - h:y + base // 2, x:x + w] = 1
        cv2.imwrite(str(folder / f"s{i:02d}.png"), image)
        cv2.imwrite(str(folder.parent / "masks" / f"s{i:02d}.png"), mask)
        masks.append(mask)
    return masks


def test_ppocr_text_map_int8_with_a_dice_target(corpus_root, tmp_path):
    model = model_path(manifest.entry("ppocr_det"), corpus_root)
    masks = _words(tmp_path / "pics", 3)
    request = op.Request(model, tmp_path / "det_int8.onnx", tmp_path / "pics", truth=tmp_path / "masks",
                         max_dice_drop=1.0, preset="imagenet", bgr=True, resize="stretch", size=(320, 320),
                         timing=False)
    result = run_job(op.run(request))

    # ImageNet's mean and std are RGB figures: with --bgr each goes with its own channel (B first)
    mean, std = np.array([0.406, 0.456, 0.485]) * 255, np.array([0.225, 0.224, 0.229]) * 255
    tensors = [((cv2.imread(str(p)).astype(np.float64) - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)
               for p in sorted((tmp_path / "pics").iterdir())]

    def dice(outputs):
        values = []
        for out, truth in zip(outputs, masks):
            a, b = out[0, 0] > 0.5, truth > 0
            values.append(2 * (a & b).sum() / (a.sum() + b.sum()))
        return float(np.mean(values))

    fp32, mixed = dice(_ort(model, "x", tensors)), dice(_ort(result.out, "x", tensors))
    assert result.table[0].accuracy.dice == pytest.approx(fp32, abs=1e-9) and fp32 > 0.4
    assert result.table[2].accuracy.dice == pytest.approx(mixed, abs=1e-9) and mixed >= fp32 - 0.01
    assert len(result.fallback) < result.layers


def _glyphs(folder, count):
    """Blue capital letters on light paper; a VOC file per picture with each glyph's pixel box."""
    rng = np.random.default_rng(1)
    folder.mkdir()
    (folder.parent / "boxes").mkdir()
    truth = []
    for i in range(count):
        image = np.full((416, 416, 3), int(rng.integers(180, 230)), np.uint8)
        for k in range(5):
            x, y = 30 + k * 75 + int(rng.integers(0, 15)), 120 + int(rng.integers(0, 180))
            cv2.putText(image, "ABCDEFGHKMNPRSTUVWXYZ"[int(rng.integers(0, 21))], (x, y), cv2.FONT_HERSHEY_COMPLEX,
                        1.5, (30, 60, 160), 3, cv2.LINE_AA)
        _n, _labels, stats, _c = cv2.connectedComponentsWithStats((image[:, :, 0] < 120).astype(np.uint8))
        boxes = [(s[0], s[1], s[0] + s[2], s[1] + s[3]) for s in stats[1:] if s[4] > 50]
        cv2.imwrite(str(folder / f"d{i:02d}.png"), image)
        (folder.parent / "boxes" / f"d{i:02d}.xml").write_text("<annotation>" + "".join(
            f"<object><name>0</name><bndbox><xmin>{a}</xmin><ymin>{b}</ymin><xmax>{c}</xmax><ymax>{d}</ymax>"
            f"</bndbox></object>" for a, b, c, d in boxes) + "</annotation>")
        truth.append(boxes)
    return truth


def _yolox_map(outputs, truth, side=416):
    """YOLOX decoding (strides 8, 16, 32), score = objectness x class, >= 0.25, NMS 0.45; VOC AP@0.5."""
    grid = np.concatenate([np.stack(np.meshgrid(np.arange(side // s), np.arange(side // s)), -1).reshape(-1, 2)
                           for s in (8, 16, 32)])
    stride = np.concatenate([np.full(((side // s) ** 2, 1), s) for s in (8, 16, 32)])

    def iou(a, b):
        w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        return w * h / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h)

    found = []
    for k, out in enumerate(outputs):
        raw = out[0].astype(np.float64)
        xy, wh = (raw[:, :2] + grid) * stride, np.exp(raw[:, 2:4]) * stride
        boxes, score = np.concatenate([xy - wh / 2, xy + wh / 2], 1), raw[:, 4] * raw[:, 5]
        kept = []
        for i in np.argsort(-score, kind="stable"):
            if score[i] < 0.25:
                break
            if all(iou(boxes[i], boxes[j]) <= 0.45 for j in kept):
                kept.append(i)
        found += [(score[i], k, boxes[i]) for i in kept]
    found.sort(key=lambda f: -f[0])
    used = [[False] * len(t) for t in truth]
    hits = []
    for _s, k, box in found:
        overlaps = [iou(box, t) for t in truth[k]]
        best = int(np.argmax(overlaps))
        hits.append(overlaps[best] >= 0.5 and not used[k][best])
        used[k][best] = used[k][best] or hits[-1]
    tp = np.cumsum(hits)
    recall, precision = tp / sum(len(t) for t in truth), tp / np.arange(1, len(hits) + 1)
    ap, previous = 0.0, 0.0
    for i, r in enumerate(recall):
        if r > previous:
            ap += (r - previous) * max(precision[i:])
            previous = r
    return ap


# 26 s on CI; the mAP target's search is checked on every run by tests/tools/test_quantize_tasks.py
@full_only
def test_ddddocr_detector_int8_with_a_map_target(corpus_root, tmp_path):
    model = model_path(manifest.entry("ddddocr_det"), corpus_root)
    truth = _glyphs(tmp_path / "pics", 3)
    request = op.Request(model, tmp_path / "det_int8.onnx", tmp_path / "pics", truth=tmp_path / "boxes",
                         max_map_drop=1.0, preset="raw", bgr=True, resize="letterbox", timing=False)
    result = run_job(op.run(request))

    tensors = [np.ascontiguousarray(cv2.imread(str(p)).transpose(2, 0, 1)[None].astype(np.float32))
               for p in sorted((tmp_path / "pics").iterdir())]   # 416x416 already: letterbox changes nothing
    fp32 = _yolox_map(_ort(model, "images", tensors), truth)
    mixed = _yolox_map(_ort(result.out, "images", tensors), truth)
    assert fp32 == pytest.approx(1.0) and result.table[0].accuracy.map50 == pytest.approx(fp32, abs=1e-9)
    assert result.table[2].accuracy.map50 == pytest.approx(mixed, abs=1e-9) and mixed >= fp32 - 0.01
    assert any("yolox" in note for note in result.notes)
