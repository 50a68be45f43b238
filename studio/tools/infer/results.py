"""Where an infer run's answers go: one picture's model outputs in, a row, an overlay and the summary out.

:class:`ResultSink` is fed the raw outputs of each picture in order, wherever the model ran (ONNX
Runtime here, or an OM on a host whose outputs came back as files). Post-processing, metrics and
the overlay picture of a picture run on a small thread pool while the caller runs the next
one; the rows are collected (and written to ``results.csv``) in the pictures' order, so a
cancelled run keeps every row it finished and the files are the same however the work was spread.
"""

from __future__ import annotations

import csv
import json
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.serial import to_json
from studio.core.safe_read import read_text
from studio.tools.infer import metrics, postprocess, truth
from studio.tools.infer.preprocess import Preprocess

RESULTS_FORMAT = "studio-infer"
#: Post-processing threads (each picture's answer, metrics and overlay PNG are independent).
POST_WORKERS = 2
#: Pictures waiting for post-processing before the caller waits (bounds the memory of big folders).
MAX_PENDING = 8


@dataclass
class InferResult:
    """Rows (one per picture), the summary, and where they were written."""

    out: Path
    rows: list[dict]
    summary: dict
    preprocess: Preprocess
    notes: list[str] = field(default_factory=list)

    def __json__(self) -> dict:
        """``{format, summary, preprocess, notes, images: [...]}`` (:func:`studio.core.serial.to_json`)."""
        return {"format": RESULTS_FORMAT, "summary": self.summary, "preprocess": self.preprocess,
                "notes": self.notes, "images": self.rows}


def class_names(path: Path | None) -> list[str]:
    """The class names of ``--labels`` (one per line), or none."""
    if path is None:
        return []
    try:
        return [line.strip() for line in read_text(path, "class names file", encoding="utf-8-sig").splitlines()
                if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"Cannot read the class names ({exc})", path, "Give a text file with one name per line.") \
            from exc


def ground_truth(opts, names: list[str]):
    """The run's ground truth (labels, boxes, or the masks folder), or None."""
    if opts.truth is None:
        return None
    if not opts.truth.exists():
        raise UserError("Ground truth not found", opts.truth, "Give a labels CSV, a masks folder, a VOC folder or a "
                                                              "COCO JSON.")
    if opts.task == "classify":
        return truth.read_labels(opts.truth, names)
    if opts.task == "detect":
        return truth.read_boxes(opts.truth)
    if not opts.truth.is_dir():
        raise UserError("Masks must be a folder of PNGs named like the pictures", opts.truth, "Give the masks folder.")
    return opts.truth


class ResultSink:
    """Rows, ``results.csv``, overlays and the summary of one run (see the module docstring).

    Call :meth:`add` (or :meth:`failed`) once per picture in order, :meth:`close` in a
    ``finally``, then :meth:`finish` for the :class:`InferResult` (which writes results.json).
    """

    def __init__(self, opts, pre: Preprocess, names: list[str], ground, notes: list[str]):
        self.opts, self.pre, self.names, self.ground, self.notes = opts, pre, names, ground, notes
        self.head = opts.head
        self.rows: list[dict] = []
        self.predictions: dict[str, tuple] = {}
        self.infer_s = 0.0
        opts.out.mkdir(parents=True, exist_ok=True)
        self.overlay_dir = opts.out / "overlays"
        if opts.overlays:
            self.overlay_dir.mkdir(exist_ok=True)
        self._pool = ThreadPoolExecutor(max_workers=POST_WORKERS, thread_name_prefix="infer-post")
        self._pending: deque = deque()
        self._csv = open(opts.out / "results.csv", "w", newline="", encoding="utf-8")
        self._writer = csv.DictWriter(self._csv, fieldnames=_csv_fields(opts.task), extrasaction="ignore")
        self._writer.writeheader()

    def add(self, image_path: Path, image: np.ndarray, outputs: list, placement, seconds: float | None) -> None:
        """One picture's model outputs (post-processed on the pool)."""
        row: dict = {"image": image_path.name}
        if seconds is not None:
            self.infer_s += seconds
            row["ms"] = round(seconds * 1000, 3)
        if self.opts.task == "detect" and self.head is None:  # once, before any picture is answered
            self.head = postprocess.guess_head_for(outputs, (self.pre.height, self.pre.width))
            self.notes.append(f"detection head: {self.head} (guessed from the outputs' shapes; give --head)")
        self._queue(self._pool.submit(self._answer_row, row, image_path.stem, image, outputs, placement))

    def failed(self, image_path: Path, error: str, seconds: float | None = None) -> None:
        """A picture that gave no outputs (unreadable, or the model refused it)."""
        row: dict = {"image": image_path.name, "error": error}
        if seconds is not None:
            self.infer_s += seconds
            row["ms"] = round(seconds * 1000, 3)
        self._queue(row)

    def _queue(self, item) -> None:
        self._pending.append(item)
        self._drain(wait=len(self._pending) > MAX_PENDING)

    def _drain(self, wait: bool = False, everything: bool = False) -> None:
        """Write the finished rows at the head of the queue (in order); wait for the oldest when
        ``wait`` (the queue is full), for all when ``everything``."""
        while self._pending:
            head = self._pending[0]
            if isinstance(head, dict):
                row = head
            elif head.done() or wait or everything:
                row = head.result()
                wait = False
            else:
                break
            self._pending.popleft()
            self._writer.writerow(row)
            self.rows.append(row)

    def close(self) -> None:
        """Finish the queued pictures and close results.csv (call it in a ``finally``)."""
        try:
            if self._pending:
                self._drain(everything=True)
        finally:
            self._pool.shutdown(wait=True, cancel_futures=False)
            self._csv.close()

    def finish(self, wall: float) -> InferResult:
        """The result, with the summary; writes results.json."""
        # in the pictures' order, whichever thread answered first
        ordered = {stem: self.predictions[stem] for stem in (Path(r["image"]).stem for r in self.rows)
                   if stem in self.predictions}
        summary = _summary(self.opts, self.rows, ordered, self.ground, wall, self.infer_s)
        result = InferResult(self.opts.out, self.rows, summary, self.pre, self.notes)
        (self.opts.out / "results.json").write_text(json.dumps(to_json(result), indent=1), encoding="utf-8")
        return result

    def _answer_row(self, row: dict, stem: str, image: np.ndarray, outputs: list, placement) -> dict:
        drawn = _answer(self.opts, self.pre, outputs, placement, image, stem, self.names, self.head, self.ground, row,
                        self.predictions)
        if self.opts.overlays and drawn is not None:
            import cv2

            target = self.overlay_dir / f"{stem}.png"
            cv2.imwrite(str(target), drawn, png_fast(cv2))
            row["overlay"] = str(Path("overlays") / target.name)
        return row


def png_fast(cv2) -> list[int]:
    """The PNG settings of overlays: lossless and fast. zlib level 1 on the "sub" filter with
    run-length matching encodes a 640x640 overlay in ~11 ms to ~450 KiB, against ~39 ms and ~470 KiB
    for level 1 with the adaptive filters (measured here); encoding shares the cores with the model."""
    params = [cv2.IMWRITE_PNG_COMPRESSION, 1, cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE]
    if hasattr(cv2, "IMWRITE_PNG_FILTER"):  # OpenCV >= 4.11
        params += [cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_SUB]
    return params


def _csv_fields(task: str) -> list[str]:
    extra = {"classify": ["top1", "top1_name", "top1_score", "truth", "correct_top1", "correct_top5"],
             "segment": ["foreground_share", "dice", "iou"],
             "detect": ["detections", "truth_boxes"]}[task]
    return ["image", "ms", *extra, "overlay", "error"]


def _answer(opts, pre, outputs, placement, image, stem, names, head, ground, row, predictions):
    """Post-process one picture into ``row`` (and ``predictions`` for mAP); the overlay to write."""
    from studio.tools.infer import overlay

    def name(i: int) -> str:
        return names[i] if 0 <= i < len(names) else str(i)

    if opts.task == "classify":
        top = postprocess.top_k(outputs[0], max(opts.top, 5))
        row.update(top1=top[0][0], top1_name=name(top[0][0]), top1_score=round(top[0][1], 6),
                   top=[{"class": c, "name": name(c), "score": round(s, 6)} for c, s in top[:opts.top]])
        if ground is not None and stem in ground:
            row["truth"] = ground[stem]
            row["correct_top1"] = int(top[0][0] == ground[stem])
            row["correct_top5"] = int(ground[stem] in [c for c, _ in top[:5]])
        return overlay.draw_classes(image, [(name(c), s) for c, s in top]) if opts.overlays else None
    if opts.task == "segment":
        import cv2

        mask = postprocess.segment(outputs[0])
        mask = mask_to_image(mask, pre, placement, cv2)
        row["foreground_share"] = round(float(np.count_nonzero(mask)) / mask.size, 6)
        if ground is not None:
            reference = truth.read_mask(ground, stem)
            if reference is not None:
                if reference.shape != mask.shape:
                    reference = cv2.resize(reference, (mask.shape[1], mask.shape[0]), interpolation=cv2.INTER_NEAREST)
                dice, iou = metrics.dice_iou(mask, reference)
                row.update(dice=round(dice, 6), iou=round(iou, 6))
        return overlay.draw_mask(image, mask) if opts.overlays else None
    found = postprocess.detect(outputs, head, (pre.height, pre.width), opts.conf, opts.iou)
    boxes = placement.to_image(found.boxes) if len(found) else found.boxes
    row["detections"] = len(found)
    row["boxes"] = [{"box": [round(float(v), 2) for v in b], "score": round(float(s), 6), "class": int(c),
                     "name": name(int(c))} for b, s, c in zip(boxes, found.scores, found.classes)]
    predictions[stem] = (boxes, found.scores, [name(int(c)) for c in found.classes])
    if ground is not None and stem in ground:
        row["truth_boxes"] = len(ground[stem].names)
    return overlay.draw_boxes(image, boxes, found.scores, found.classes, names) if opts.overlays else None


def mask_to_image(mask: np.ndarray, pre: Preprocess, placement, cv2) -> np.ndarray:
    """The mask in picture pixels: undo the letterbox or crop, then resize (nearest) (also what
    ``studio quantize`` judges a segmenter's masks on)."""
    top, left = int(round(placement.offset_y)), int(round(placement.offset_x))
    if pre.resize == "letterbox":
        h = int(round(placement.image_height * placement.scale_y))
        w = int(round(placement.image_width * placement.scale_x))
        mask = mask[top:top + h, left:left + w]
    return cv2.resize(mask, (placement.image_width, placement.image_height), interpolation=cv2.INTER_NEAREST)


def _summary(opts, rows, predictions, ground, wall, infer_s) -> dict:
    done = [r for r in rows if "error" not in r]
    summary = {"model": str(opts.model), "pictures": str(opts.images), "images": len(rows), "failed": len(rows) - len(done), "task": opts.task,
               "wall_s": round(wall, 3), "images_per_s": round(len(rows) / wall, 2) if wall else None,
               "inference_ms_mean": round(infer_s * 1000 / len(done), 3) if done else None}
    if opts.task == "classify":
        scored = [r for r in done if "correct_top1" in r]
        if scored:
            summary.update(top1_accuracy=round(float(np.mean([r["correct_top1"] for r in scored])), 6),
                           top5_accuracy=round(float(np.mean([r["correct_top5"] for r in scored])), 6),
                           scored_images=len(scored))
    elif opts.task == "segment":
        scored = [r for r in done if "dice" in r]
        if scored:
            summary.update(dice_mean=round(float(np.mean([r["dice"] for r in scored])), 6),
                           iou_mean=round(float(np.mean([r["iou"] for r in scored])), 6), scored_images=len(scored))
    elif ground is not None:
        truth_boxes = {stem: (b.boxes, b.names) for stem, b in ground.items()}
        value, per_class = metrics.mean_ap(predictions, truth_boxes)
        summary.update(map50=round(value, 6), ap50_per_class={k: round(v, 6) for k, v in per_class.items()},
                       scored_images=len(truth_boxes))
    return summary
