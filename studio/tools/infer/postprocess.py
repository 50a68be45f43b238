"""Model outputs to answers: top-k classes, per-pixel masks, boxes after non-maximum suppression.

Detection heads differ in how they lay out their numbers; the ones read here:

* ``yolo5``: one output (1, N, 5 + C): centre x, centre y, width, height, objectness, C class
  scores, in input pixels (YOLOv5/v7 exports);
* ``yolo8``: one output (1, 4 + C, N) or (1, N, 4 + C): the same without objectness (YOLOv8+);
* ``yolox``: one output (1, N, 5 + C) not yet decoded: per cell of the stride 8, 16 and 32 grids,
  x and y offsets in cells and log width and height (YOLOX exports without decoding);
* ``ssd``: two outputs, boxes (1, N, 4) as x1, y1, x2, y2 (0..1 or pixels) and scores (1, N, C)
  with class 0 the background.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studio.core.errors import UserError

HEADS = ("yolo5", "yolo8", "yolox", "ssd")
STRIDES = (8, 16, 32)


def softmax_if_needed(scores: np.ndarray) -> tuple[np.ndarray, bool]:
    """Scores as probabilities: a softmax over the last axis unless they already are (returns whether applied)."""
    s = scores.astype(np.float64)
    if s.min() >= 0 and s.max() <= 1 and np.allclose(s.sum(axis=-1), 1.0, atol=1e-3):
        return s, False
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), True


def top_k(output: np.ndarray, k: int = 5) -> list[tuple[int, float]]:
    """(class, probability) of the k best classes of a classifier output (1, C) or (C,)."""
    probs, _ = softmax_if_needed(output.reshape(-1))
    order = np.argsort(-probs, kind="stable")[:k]
    return [(int(i), float(probs[i])) for i in order]


def segment(output: np.ndarray) -> np.ndarray:
    """The class of each pixel (H, W) from a (1, C, H, W) output (C == 1: foreground above 0.5)."""
    out = output[0] if output.ndim == 4 else output
    if out.ndim != 3:
        raise UserError(f"A segmentation output of shape {list(output.shape)} has no (C, H, W) layout", None,
                        "Give the model's per-pixel class output (1, C, H, W).")
    if out.shape[0] == 1:
        plane = out[0]
        if plane.min() < 0 or plane.max() > 1:  # logits
            plane = 1 / (1 + np.exp(-plane))
        return (plane > 0.5).astype(np.uint8)
    return out.argmax(axis=0).astype(np.uint8)


@dataclass
class Detections:
    """Boxes (x1, y1, x2, y2 in picture pixels), scores and classes after NMS."""

    boxes: np.ndarray
    scores: np.ndarray
    classes: np.ndarray

    def __len__(self) -> int:
        return int(self.scores.size)


def guess_head(outputs: list[np.ndarray]) -> str:
    """The detection head whose layout the outputs have (callers say it was a guess)."""
    if len(outputs) >= 2 and outputs[0].ndim == 3 and outputs[0].shape[-1] == 4 and outputs[1].ndim == 3:
        return "ssd"
    out = outputs[0]
    if out.ndim == 3 and out.shape[1] < out.shape[2]:
        return "yolo8"
    return "yolo5"


def guess_head_for(outputs: list[np.ndarray], input_hw: tuple[int, int]) -> str:
    """As :func:`guess_head`, telling YOLOX's undecoded grid output (one row per cell of the
    stride 8/16/32 grids, small offsets) from YOLOv5's decoded pixels."""
    head = guess_head(outputs)
    out = outputs[0]
    if head == "yolo5" and out.ndim == 3 and out.shape[1] == _cells(input_hw) \
            and float(np.abs(out[0, :, :2]).max()) < 8.0:
        return "yolox"
    return head


def _cells(input_hw: tuple[int, int]) -> int:
    return sum((input_hw[0] // s) * (input_hw[1] // s) for s in STRIDES)


def _yolox_decode(raw: np.ndarray, input_hw: tuple[int, int]) -> np.ndarray:
    """Grid offsets and log sizes -> centre x, centre y, width, height in input pixels."""
    if len(raw) != _cells(input_hw):
        raise UserError(f"A YOLOX output needs {_cells(input_hw):,} rows for a {input_hw[0]}x{input_hw[1]} input "
                        f"(strides 8, 16, 32); it has {len(raw):,}", None, "Give the right --head or --size.")
    grids, strides = [], []
    for s in STRIDES:
        gy, gx = np.meshgrid(np.arange(input_hw[0] // s), np.arange(input_hw[1] // s), indexing="ij")
        grids.append(np.stack([gx, gy], axis=-1).reshape(-1, 2))
        strides.append(np.full((gx.size, 1), s))
    grid, stride = np.concatenate(grids), np.concatenate(strides)
    out = raw.copy()
    out[:, :2] = (raw[:, :2] + grid) * stride
    out[:, 2:4] = np.exp(raw[:, 2:4]) * stride
    return out


def detect(outputs: list[np.ndarray], head: str, input_hw: tuple[int, int], conf: float = 0.25,
           iou: float = 0.45) -> Detections:
    """Decoded, thresholded boxes in input pixels (map them to the picture with the Placement)."""
    if head == "ssd":
        boxes, scores = outputs[0][0].astype(np.float64), outputs[1][0].astype(np.float64)
        inverted = float(np.mean((boxes[:, 2] <= boxes[:, 0]) | (boxes[:, 3] <= boxes[:, 1]))) if len(boxes) else 0.0
        if inverted > 0.05:  # decoded boxes have x2 > x1; regression offsets are centred on 0
            raise UserError(f"The boxes output does not hold decoded boxes: {inverted:.0%} have x2 <= x1 or "
                            "y2 <= y1, as raw SSD regression offsets do", None,
                            "Export the model with its box decoding (priors applied, x1,y1,x2,y2 out), or give "
                            "--head yolo5/yolo8 if it is a YOLO head.")
        if boxes.size and boxes.max() <= 1.5:  # normalised coordinates
            boxes = boxes * np.array([input_hw[1], input_hw[0], input_hw[1], input_hw[0]])
        scores = scores[:, 1:]  # class 0 is the background
        offset = 1
    else:
        raw = outputs[0][0].astype(np.float64)
        if head == "yolo8" and raw.shape[0] < raw.shape[1]:
            raw = raw.T
        if head == "yolox":
            raw = _yolox_decode(raw, input_hw)
        xywh = raw[:, :4]
        scores = raw[:, 5:] * raw[:, 4:5] if head in ("yolo5", "yolox") else raw[:, 4:]
        boxes = np.concatenate([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], axis=1)
        offset = 0
    if scores.shape[1] == 0:
        return Detections(np.zeros((0, 4)), np.zeros(0), np.zeros(0, np.int64))
    classes = scores.argmax(axis=1)
    best = scores[np.arange(len(scores)), classes]
    keep = best >= conf
    boxes, best, classes = boxes[keep], best[keep], classes[keep]
    chosen = nms(boxes, best, classes, iou)
    return Detections(boxes[chosen], best[chosen], classes[chosen] + offset)


def box_iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of one box with many (x1, y1, x2, y2)."""
    x1 = np.maximum(box[0], boxes[:, 0])
    y1 = np.maximum(box[1], boxes[:, 1])
    x2 = np.minimum(box[2], boxes[:, 2])
    y2 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    union = area + areas - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def nms(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou: float, limit: int = 300) -> np.ndarray:
    """Indices kept by per-class greedy non-maximum suppression, best first."""
    order = np.argsort(-scores, kind="stable")
    kept: list[int] = []
    suppressed = np.zeros(len(scores), bool)
    for position, i in enumerate(order):
        if suppressed[i]:
            continue
        kept.append(int(i))
        if len(kept) >= limit:
            break
        rest = order[position + 1:]
        same = rest[(classes[rest] == classes[i]) & ~suppressed[rest]]
        if same.size:
            suppressed[same[box_iou(boxes[i], boxes[same]) > iou]] = True
    return np.array(kept, dtype=np.int64)
