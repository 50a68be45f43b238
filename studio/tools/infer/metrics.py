"""Task metrics against ground truth: Dice and IoU per picture, top-1/top-5, mAP at IoU 0.5.

Dice and IoU are those of the MindX SDK segmentation tutorial: for the foreground (every class
but 0), ``2|A∩B| / (|A| + |B|)`` and ``|A∩B| / |A∪B|``; a picture with no foreground in either
mask scores 1. mAP@0.5 is Pascal VOC's: per class, the area under the precision-recall curve
with every point interpolated (VOC 2010 and later), averaged over the classes with ground truth.
"""

from __future__ import annotations

import numpy as np

from studio.tools.infer.postprocess import box_iou


def dice_iou(predicted: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(Dice, IoU) of the foreground of two class masks of the same size."""
    a, b = predicted > 0, truth > 0
    inter = int(np.count_nonzero(a & b))
    total = int(np.count_nonzero(a)) + int(np.count_nonzero(b))
    union = int(np.count_nonzero(a | b))
    if total == 0:
        return 1.0, 1.0
    return 2.0 * inter / total, inter / union


def average_precision(recall: np.ndarray, precision: np.ndarray) -> float:
    """Area under a precision-recall curve, precision made monotone (all-point interpolation)."""
    r = np.concatenate([[0.0], recall, [1.0]])
    p = np.concatenate([[0.0], precision, [0.0]])
    p = np.maximum.accumulate(p[::-1])[::-1]
    steps = np.flatnonzero(r[1:] != r[:-1])
    return float(np.sum((r[steps + 1] - r[steps]) * p[steps + 1]))


def mean_ap(predictions: dict[str, tuple[np.ndarray, np.ndarray, list[str]]],
            truth: dict[str, tuple[np.ndarray, list[str]]], iou_threshold: float = 0.5) -> tuple[float, dict[str, float]]:
    """mAP and AP per class. ``predictions``: stem -> (boxes, scores, class names); ``truth``: stem ->
    (boxes, class names). Pictures missing from ``predictions`` count as having no detections."""
    classes = sorted({n for _b, names in truth.values() for n in names})
    per_class: dict[str, float] = {}
    for name in classes:
        gt = {stem: boxes[[n == name for n in names]] for stem, (boxes, names) in truth.items()}
        positives = sum(len(b) for b in gt.values())
        found = []  # (score, stem, box)
        for stem, (boxes, scores, names) in predictions.items():
            for box, score, n in zip(boxes, scores, names):
                if n == name:
                    found.append((float(score), stem, box))
        found.sort(key=lambda f: -f[0])
        used = {stem: np.zeros(len(b), bool) for stem, b in gt.items()}
        tp = np.zeros(len(found))
        for k, (_score, stem, box) in enumerate(found):
            boxes = gt.get(stem, np.zeros((0, 4)))
            if len(boxes):
                overlaps = box_iou(box, boxes)
                best = int(np.argmax(overlaps))
                if overlaps[best] >= iou_threshold and not used[stem][best]:
                    used[stem][best] = True
                    tp[k] = 1
        hits = np.cumsum(tp)
        recall = hits / max(positives, 1)
        precision = hits / np.arange(1, len(found) + 1) if found else np.zeros(0)
        per_class[name] = average_precision(recall, precision) if positives else 0.0
    return (float(np.mean(list(per_class.values()))) if per_class else 0.0), per_class
