"""INT8 with task targets: a detector judged on mAP@0.5 against boxes, a segmenter on Dice and IoU
against masks, as ``studio infer --truth`` scores them. The pictures are drawn here (their boxes and
masks are known, not taken from a model), and every figure is recomputed with numpy on plain ONNX
Runtime runs (and ONNX Runtime's own quantiser for the INT8 and single-layer models)."""

from __future__ import annotations

import numpy as np
import pytest

from quantize_helpers import dice_iou, ort_quantize_static
from quantize_task_models import (
    SIDE,
    blob_pictures,
    detector,
    ort_outputs,
    segmenter,
    square_pictures,
    unit_tensor,
)
from studio.commands.quantize import report
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.ops import quantize as op


def _ort_quantize(model, out, tensors, nodes=None):
    """ONNX Runtime's quantize_static on its own: MinMax, QDQ, Conv, ``nodes`` only when given."""
    from onnxruntime.quantization import QuantFormat, QuantType

    return ort_quantize_static(model, out, [{"image": t} for t in tensors], quant_format=QuantFormat.QDQ,
                               nodes_to_quantize=nodes or [], activation_type=QuantType.QUInt8,
                               weight_type=QuantType.QInt8)


# --- independent metrics (Dice and IoU: quantize_helpers.dice_iou) -------------------------------

def _iou(a, b) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0


def _map50(outputs, truth: list[list[tuple]]) -> float:
    """One class: score >= 0.25, greedy NMS at IoU 0.45, then VOC all-point AP at IoU 0.5."""
    found = []  # (score, picture, box)
    for k, out in enumerate(outputs):
        cells = out[0].T.astype(np.float64)           # (N, 5): cx, cy, w, h, score
        keep = [c for c in cells if c[4] >= 0.25]
        keep.sort(key=lambda c: -c[4])
        chosen = []
        for c in keep:
            box = (c[0] - c[2] / 2, c[1] - c[3] / 2, c[0] + c[2] / 2, c[1] + c[3] / 2)
            if all(_iou(box, other) <= 0.45 for _, other in chosen):
                chosen.append((c[4], box))
        found += [(s, k, b) for s, b in chosen]
    found.sort(key=lambda f: -f[0])
    used = [[False] * len(t) for t in truth]
    hits = []
    for _score, k, box in found:
        overlaps = [_iou(box, t) for t in truth[k]]
        best = int(np.argmax(overlaps)) if overlaps else -1
        hit = best >= 0 and overlaps[best] >= 0.5 and not used[k][best]
        if hit:
            used[k][best] = True
        hits.append(hit)
    positives = sum(len(t) for t in truth)
    tp = np.cumsum(hits)
    recall, precision = tp / positives, tp / np.arange(1, len(hits) + 1)
    ap, best_after = 0.0, 0.0
    # all-point interpolation: precision at recall r is the best precision at any recall >= r
    points = list(zip(recall, precision))
    previous = 0.0
    for i, (r, _p) in enumerate(points):
        if r > previous:
            best_after = max(p for _r, p in points[i:])
            ap += (r - previous) * best_after
            previous = r
    return float(ap)


# --- the runs ----------------------------------------------------------------------------------

def _request(model, pictures, truth, tmp_path, **kw) -> op.Request:
    return op.Request(model, tmp_path / "int8.onnx", pictures, truth=truth, preset="unit", resize="stretch",
                      timing=False, **kw)


def test_a_segmenter_meets_a_dice_target_with_its_one_broken_layer_rolled_back(tmp_path):
    model = tmp_path / "seg.onnx"
    layers = segmenter(model)
    masks = blob_pictures(tmp_path / "pics", 6)
    result = run_job(op.run(_request(model, tmp_path / "pics", tmp_path / "masks", tmp_path, max_dice_drop=1.0)))

    pictures = sorted((tmp_path / "pics").iterdir())
    tensors = [unit_tensor(p) for p in pictures]
    truth = [masks[p.stem] for p in pictures]
    fp32 = dice_iou(ort_outputs(model, tensors), truth)
    assert fp32 == (1.0, 1.0)  # the model finds the drawn rectangles exactly
    int8 = dice_iou(ort_outputs(_ort_quantize(model, tmp_path / "all.onnx", tensors), tensors), truth)
    mixed = dice_iou(ort_outputs(result.out, tensors), truth)
    rows = {row.name: row.accuracy for row in result.table}
    assert (rows["FP32"].dice, rows["FP32"].iou) == pytest.approx(fp32, abs=1e-9)
    assert (rows["INT8"].dice, rows["INT8"].iou) == pytest.approx(int8, abs=1e-9)
    assert (rows["mixed"].dice, rows["mixed"].iou) == pytest.approx(mixed, abs=1e-9)
    assert int8[0] < 0.5 and mixed[0] >= fp32[0] - 0.01  # INT8 breaks it; the mixed model meets the target

    assert result.target == "Dice within 1 point(s) of FP32"
    assert result.fallback == ["conv2"]
    assert {f.method: f.rollback for f in result.searches} == {"ddmin": ["conv2"], "ranked-binary": ["conv2"]}
    assert all(f.runs >= 2 for f in result.searches)
    # sensitivity judged on Dice: conv2 first, its Dice that of conv2 quantised alone by ORT's quantiser
    assert [s.name for s in result.sensitivity][0] == "conv2" and len(result.sensitivity) == len(layers)
    alone = dice_iou(ort_outputs(_ort_quantize(model, tmp_path / "c2.onnx", tensors, ["conv2"]), tensors), truth)
    assert (result.sensitivity[0].dice, result.sensitivity[0].iou) == pytest.approx(alone, abs=1e-9)
    assert any("task: segment (from the target" in note for note in result.notes)

    lines = report(result)
    header = next(line for line in lines if "min cosine" in line and "latency" in line)
    assert "Dice" in header and "IoU" in header
    assert any(line.split()[:1] == ["INT8"] and f"{int8[0] * 100:.1f}%" in line for line in lines)


def test_an_iou_target_reads_iou(tmp_path):
    model = tmp_path / "seg.onnx"
    segmenter(model)
    blob_pictures(tmp_path / "pics", 4, seed=5)
    result = run_job(op.run(_request(model, tmp_path / "pics", tmp_path / "masks", tmp_path, max_iou_drop=0.0)))
    assert result.target == "IoU within 0 point(s) of FP32" and result.fallback == ["conv2"]
    assert result.table[2].accuracy.iou == result.table[0].accuracy.iou == 1.0


def test_a_detector_meets_a_map_target_with_its_one_broken_layer_rolled_back(tmp_path):
    model = tmp_path / "det.onnx"
    detector(model)
    boxes = square_pictures(tmp_path / "pics", 6)
    (tmp_path / "names.txt").write_text("square\n")
    result = run_job(op.run(_request(model, tmp_path / "pics", tmp_path / "boxes", tmp_path, max_map_drop=1.0,
                                     labels=tmp_path / "names.txt")))

    pictures = sorted((tmp_path / "pics").iterdir())
    tensors = [unit_tensor(p) for p in pictures]
    truth = [boxes[p.stem] for p in pictures]
    fp32 = _map50(ort_outputs(model, tensors), truth)
    assert fp32 == pytest.approx(1.0)  # every drawn square found, each ahead of any stray box
    int8 = _map50(ort_outputs(_ort_quantize(model, tmp_path / "all.onnx", tensors), tensors), truth)
    mixed = _map50(ort_outputs(result.out, tensors), truth)
    rows = {row.name: row.accuracy for row in result.table}
    assert rows["FP32"].map50 == pytest.approx(fp32, abs=1e-9)
    assert rows["INT8"].map50 == pytest.approx(int8, abs=1e-9)
    assert rows["mixed"].map50 == pytest.approx(mixed, abs=1e-9)
    assert int8 < 0.5 and mixed >= fp32 - 0.01

    assert result.target == "mAP@0.5 within 1 point(s) of FP32"
    assert result.fallback == ["conv2"]
    assert {f.method: f.rollback for f in result.searches} == {"ddmin": ["conv2"], "ranked-binary": ["conv2"]}
    assert result.sensitivity[0].name == "conv2"
    alone = _map50(ort_outputs(_ort_quantize(model, tmp_path / "c2.onnx", tensors, ["conv2"]), tensors), truth)
    assert result.sensitivity[0].map50 == pytest.approx(alone, abs=1e-9)
    assert any("detection head: yolo8 (guessed" in note for note in result.notes)
    assert "mAP@0.5" in next(line for line in report(result) if "min cosine" in line and "latency" in line)


def test_task_targets_refuse_what_they_cannot_judge(tmp_path):
    model = tmp_path / "det.onnx"
    detector(model)
    square_pictures(tmp_path / "pics", 2)
    # boxes named after no picture
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "zz.xml").write_text("<annotation></annotation>")
    with pytest.raises(UserError, match="No picture of .* has ground truth"):
        run_job(op.run(_request(model, tmp_path / "pics", tmp_path / "other", tmp_path, max_map_drop=1.0)))
    # a task that is not the target's
    with pytest.raises(UserError, match="--task is segment"):
        run_job(op.run(_request(model, tmp_path / "pics", tmp_path / "boxes", tmp_path, max_map_drop=1.0,
                                task="segment")))
    # samples from an .npz have no pictures to match boxes to
    np.savez(tmp_path / "s.npz", image=np.zeros((2, 3, SIDE, SIDE), np.float32))
    with pytest.raises(UserError, match="judged on pictures"):
        run_job(op.run(_request(model, tmp_path / "s.npz", tmp_path / "boxes", tmp_path, max_map_drop=1.0)))
    # masks given as a file
    with pytest.raises(UserError, match="folder of PNGs"):
        run_job(op.run(_request(model, tmp_path / "pics", tmp_path / "s.npz",
                                tmp_path, max_dice_drop=1.0)))
    assert not (tmp_path / "int8.onnx").exists()


def test_a_segmenters_pictures_get_a_segmenters_preprocessing_without_task_or_target(tmp_path):
    """No --task and a cosine target: the task is guessed from the outputs, as studio infer guesses
    it, and said; a per-pixel map is not centre-cropped and ImageNet-normalised as a classifier's input."""
    model = tmp_path / "seg.onnx"
    segmenter(model)
    blob_pictures(tmp_path / "pics", 4)
    result = run_job(op.run(op.Request(model, tmp_path / "int8.onnx", tmp_path / "pics", timing=False)))
    assert any(n.startswith("task: segment (guessed: output [1, 2, 16, 16] is a per-pixel map") for n in result.notes)
    pre = next(n for n in result.notes if n.startswith("preprocessing:"))
    assert "stretch" in pre and "preset unit" in pre and "center-crop" not in pre and "imagenet" not in pre
