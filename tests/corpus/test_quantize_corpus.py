"""INT8 on a real classifier nobody here built (PP-OCR's text direction classifier) with a labelled
folder: upright text strips (class 0) and the same turned 180 degrees (class 1). Every figure of the
result is recomputed here from plain ONNX Runtime runs, ORT's own quantiser and numpy."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.ops import quantize as op
from studio.tools.corpus import manifest
from studio.tools.corpus.fetch import model_path

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

WORDS = ("STUDIO", "Ascend", "quantize", "hello 42", "NPU test", "model", "layers", "INT8 ok")


def _strips(folder, count: int, seed: int = 3) -> list[int]:
    """Text strips 48x192 as the classifier reads them; odd ones turned 180 degrees. Their labels."""
    rng = np.random.default_rng(seed)
    folder.mkdir()
    labels = []
    for i in range(count):
        image = np.full((48, 192, 3), int(rng.integers(200, 256)), np.uint8)
        cv2.putText(image, WORDS[i % len(WORDS)], (int(rng.integers(2, 20)), int(rng.integers(30, 40))),
                    cv2.FONT_HERSHEY_SIMPLEX, float(rng.uniform(0.8, 1.1)), (int(rng.integers(0, 60)),) * 3, 2,
                    cv2.LINE_AA)
        if i % 2:
            image = cv2.rotate(image, cv2.ROTATE_180)
        cv2.imwrite(str(folder / f"t{i:03d}.png"), image)
        labels.append(i % 2)
    return labels


def _tensor(path) -> np.ndarray:
    """PaddleOCR's own preprocessing, by hand: BGR as read, (x / 255 - 0.5) / 0.5, NCHW."""
    image = cv2.imread(str(path)).astype(np.float32)
    return ((image / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)[None].astype(np.float32)


def _outputs(model, tensors):
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return [session.run(None, {"x": t})[0] for t in tensors]


def test_ppocr_classifier_int8_with_a_top1_target_on_labelled_pictures(corpus_root, tmp_path):
    model = model_path(manifest.entry("ppocr_cls"), corpus_root)
    labels = _strips(tmp_path / "strips", 8)
    pictures = sorted((tmp_path / "strips").iterdir())
    (tmp_path / "labels.csv").write_text("".join(f"{p.name},{y}\n" for p, y in zip(pictures, labels)))
    request = op.Request(model, tmp_path / "cls_int8.onnx", tmp_path / "strips", truth=tmp_path / "labels.csv",
                         max_top1_drop=0.0, preset="symmetric", resize="stretch", size=(48, 192), bgr=True,
                         budget=0.3)
    result = run_job(op.run(request))

    tensors = [_tensor(p) for p in pictures]
    reference = _outputs(model, tensors)
    fp32_top1 = np.mean([np.argmax(r) == y for r, y in zip(reference, labels)])
    assert fp32_top1 == 1.0 and result.table[0].accuracy.top1 == fp32_top1
    mixed = _outputs(result.out, tensors)
    mixed_top1 = np.mean([np.argmax(o) == y for o, y in zip(mixed, labels)])
    assert result.table[2].accuracy.top1 == pytest.approx(mixed_top1) and mixed_top1 == fp32_top1
    cosines = [float(r.ravel() @ o.ravel() / np.linalg.norm(r) / np.linalg.norm(o)) for r, o in zip(reference, mixed)]
    assert result.table[2].accuracy.min_cosine == pytest.approx(min(cosines), abs=1e-6)

    # the top layer's sensitivity: ORT's quantiser alone, calibrated on the same tensors, that layer only
    from quantize_helpers import ort_quantize_static

    top = result.sensitivity[0]
    ort_quantize_static(model, tmp_path / "alone.onnx", [{"x": t} for t in tensors], nodes_to_quantize=[top.name])
    alone = _outputs(tmp_path / "alone.onnx", tensors)
    alone_cos = min(float(r.ravel() @ o.ravel() / np.linalg.norm(r) / np.linalg.norm(o))
                    for r, o in zip(reference, alone))
    assert top.min_cosine == pytest.approx(alone_cos, abs=1e-6)
    assert all(top.error >= s.error for s in result.sensitivity)

    assert result.layers == 54 and len(result.sensitivity) == 54
    sizes = {found.method: (found.size, found.runs) for found in result.searches}
    assert set(sizes) == {"ddmin", "ranked-binary"}
    assert len(result.fallback) == min(size for size, _ in sizes.values()) < result.layers
    for row in result.table[1:]:
        change = row.latency
        assert change.low <= change.ratio <= change.high and change.base_ms > 0 and change.new_ms > 0
        assert change.verdict in ("faster", "slower", "no significant change")
