"""Pictures with the answer drawn on them: boxes with labels, a tinted mask, the top class."""

from __future__ import annotations

import numpy as np

# BGR colours per class (class 0 of a mask is the background and stays untinted)
_COLOURS = np.array([(0, 0, 0), (40, 40, 230), (40, 200, 40), (230, 120, 30), (30, 210, 240), (200, 40, 200),
                     (230, 220, 40), (20, 140, 255), (140, 80, 40), (100, 200, 160)], np.uint8)


def colour(index: int) -> tuple[int, int, int]:
    """The BGR colour of class ``index``."""
    return tuple(int(c) for c in _COLOURS[1 + (index - 1) % (len(_COLOURS) - 1)]) if index else (200, 200, 200)


def _label(image: np.ndarray, text: str, x: int, y: int, bgr: tuple[int, int, int]) -> None:
    import cv2

    scale = max(0.4, min(image.shape[:2]) / 700)
    (w, h), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
    y = max(y, h + base + 2)
    cv2.rectangle(image, (x, y - h - base - 2), (x + w + 4, y), bgr, -1)
    ink = (0, 0, 0) if sum(bgr) > 380 else (255, 255, 255)
    cv2.putText(image, text, (x + 2, y - base - 1), cv2.FONT_HERSHEY_SIMPLEX, scale, ink, 1, cv2.LINE_AA)


def draw_classes(image: np.ndarray, top: list[tuple[str, float]]) -> np.ndarray:
    """The picture with its best classes written at the top left."""
    out = image.copy()
    for k, (name, score) in enumerate(top[:3]):
        _label(out, f"{name} {score:.2f}", 4, 4 + (k + 1) * max(14, min(image.shape[:2]) // 18), colour(k + 1))
    return out


def draw_mask(image: np.ndarray, mask: np.ndarray, alpha: float = 0.45) -> np.ndarray:
    """The picture with each non-background class tinted (whole-image passes: a few ms for 640x640)."""
    import cv2

    lut = _COLOURS[1 + (np.arange(256) - 1) % (len(_COLOURS) - 1)]
    tint = lut[mask]  # class -> colour for every pixel
    blended = cv2.addWeighted(image, 1 - alpha, tint, alpha, 0)
    return np.where((mask > 0)[:, :, None], blended, image)


def draw_boxes(image: np.ndarray, boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray,
               names: list[str]) -> np.ndarray:
    """The picture with each box outlined and labelled with its class and score."""
    import cv2

    out = image.copy()
    thickness = max(1, min(image.shape[:2]) // 300)
    for box, score, cls in zip(boxes, scores, classes):
        x1, y1, x2, y2 = (int(round(v)) for v in box)
        bgr = colour(int(cls))
        cv2.rectangle(out, (x1, y1), (x2, y2), bgr, thickness)
        name = names[int(cls)] if 0 <= int(cls) < len(names) else str(int(cls))
        _label(out, f"{name} {score:.2f}", x1, y1, bgr)
    return out
