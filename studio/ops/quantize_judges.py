"""Task judges for ``studio quantize``: a detector's mAP@0.5 against boxes, a segmenter's Dice and
IoU against masks, computed exactly as ``studio infer --truth`` computes them.

A judge is built once for the evaluation pictures (their names, where each picture sits in the
model's input, the ground truth read with infer's readers) and then measures any model's outputs
on those pictures: the FP32 model, every layer quantised alone, every rollback set the searches
try. The post-processing (box decoding and NMS with the same head, ``--conf`` and ``--iou``; the
per-pixel class, mapped back to the picture's pixels) and the metrics are infer's own functions
(:mod:`studio.tools.infer.postprocess`, :mod:`studio.tools.infer.metrics`), composed here because
the quantisation engine does not import the inference engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Picture:
    """One evaluation picture: its stem (how ground truth is matched) and its Placement."""

    stem: str
    placement: object      # studio.tools.infer.preprocess.Placement


class BoxJudge:
    """mAP@0.5 of a detector's boxes (as ``studio infer --task detect --truth BOXES``)."""

    metrics = ("map50",)

    def __init__(self, pictures: list[Picture], truth: dict, names: list[str], head: str,
                 input_hw: tuple[int, int], conf: float, iou: float):
        self.pictures, self.names, self.head = pictures, names, head
        self.input_hw, self.conf, self.iou = input_hw, conf, iou
        # infer's summary form: stem -> (boxes, class names), only the pictures judged
        self.truth = {p.stem: (truth[p.stem].boxes, truth[p.stem].names) for p in pictures}

    def _name(self, index: int) -> str:
        return self.names[index] if 0 <= index < len(self.names) else str(index)

    def predictions(self, outputs: list[list[np.ndarray]]) -> dict:
        """``{stem: (boxes in picture pixels, scores, class names)}`` as infer's rows hold them."""
        from studio.tools.infer.postprocess import detect

        out = {}
        for picture, sample in zip(self.pictures, outputs):
            found = detect(list(sample), self.head, self.input_hw, self.conf, self.iou)
            boxes = picture.placement.to_image(found.boxes) if len(found) else found.boxes
            out[picture.stem] = (boxes, found.scores, [self._name(int(c)) for c in found.classes])
        return out

    def measure(self, outputs: list[list[np.ndarray]]) -> dict[str, float]:
        from studio.tools.infer.metrics import mean_ap

        value, _per_class = mean_ap(self.predictions(outputs), self.truth)
        return {"map50": value}


class MaskJudge:
    """Mean foreground Dice and IoU of a segmenter's masks (as ``studio infer --task segment
    --truth MASKS``): the first output's class per pixel, mapped back to the picture, against
    the mask PNG (resized, nearest, when its size differs)."""

    metrics = ("dice", "iou")

    def __init__(self, pictures: list[Picture], masks: list[np.ndarray], pre):
        self.pictures, self.masks, self.pre = pictures, masks, pre

    def measure(self, outputs: list[list[np.ndarray]]) -> dict[str, float]:
        import cv2

        from studio.tools.infer.metrics import dice_iou
        from studio.tools.infer.postprocess import segment
        from studio.tools.infer.results import mask_to_image

        dice, iou = [], []
        for picture, reference, sample in zip(self.pictures, self.masks, outputs):
            mask = mask_to_image(segment(sample[0]), self.pre, picture.placement, cv2)
            if reference.shape != mask.shape:
                reference = cv2.resize(reference, (mask.shape[1], mask.shape[0]), interpolation=cv2.INTER_NEAREST)
            d, i = dice_iou(mask, reference)
            dice.append(d)
            iou.append(i)
        return {"dice": float(np.mean(dice)), "iou": float(np.mean(iou))}
