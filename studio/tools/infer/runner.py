"""``run_infer``: a model over a folder of pictures, with answers, metrics and overlay pictures.

A job (generator of Progress): pictures are read, preprocessed, run through ONNX Runtime one at a
time and post-processed; overlays are encoded on a small thread pool while the next picture
runs. Writes ``OUT/results.csv`` (a row per picture, written as it goes, so a cancelled run
keeps what it did), ``OUT/results.json`` (rows and summary) and ``OUT/overlays/<stem>.png``.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.formats import GALLERY, FileFormat, json_object_with, path_only
from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json
from studio.tools.infer import metrics, postprocess, truth
from studio.tools.infer.preprocess import Preprocess, apply, make_preprocess

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
TASKS = ("classify", "detect", "segment")
RESULTS_FORMAT = "studio-infer"


@dataclass
class InferOptions:
    """What to run and how (the CLI's and the gallery's options)."""

    model: Path
    images: Path
    out: Path
    task: str
    labels: Path | None = None          # class names, one per line
    truth: Path | None = None           # labels CSV, masks folder, VOC folder or COCO JSON
    preset: str | None = None
    resize: str | None = None
    size: tuple[int, int] | None = None
    bgr: bool = False
    layout: str | None = None
    mean: tuple[float, float, float] | None = None   # per-channel, on 0..255 pixels (with std: replaces the preset)
    std: tuple[float, float, float] | None = None
    head: str | None = None             # detection head (yolo5, yolo8, ssd); guessed when None
    conf: float = 0.25
    iou: float = 0.45
    top: int = 5
    overlays: bool = True
    providers: list[str] | None = None


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


def list_images(path: Path) -> list[Path]:
    """The pictures in a folder (sorted by name), or the one picture given."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise UserError("Pictures not found", path, "Give a folder of pictures (PNG, JPEG, BMP, TIFF) or one picture.")
    found = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if not found:
        raise UserError("The folder holds no pictures", path, f"Put {', '.join(IMAGE_SUFFIXES)} files in it.")
    return found


def _class_names(path: Path | None) -> list[str]:
    if path is None:
        return []
    try:
        return [line.strip() for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"Cannot read the class names ({exc})", path, "Give a text file with one name per line.") \
            from exc


def run_infer(opts: InferOptions, cancel: CancelToken | None = None) -> Generator[Progress, None, InferResult]:
    """Job: run ``opts.model`` over ``opts.images`` (see the module docstring)."""
    import cv2

    from studio.core.ort_providers import open_session

    if opts.task not in TASKS:
        raise UserError(f"Unknown task {opts.task!r}", None, f"Use one of: {', '.join(TASKS)}.")
    images = list_images(opts.images)
    names = _class_names(opts.labels)
    yield Progress(0.0, f"loading {opts.model.name}")
    session = open_session(opts.model, opts.providers)
    first = session.get_inputs()[0]
    pre = make_preprocess(tuple(first.shape), opts.task, opts.preset, opts.resize, opts.size, opts.bgr, opts.layout,
                          opts.mean, opts.std, input_name=first.name)
    notes = [f"preprocessing: {pre.describe()}"]
    head = opts.head
    ground = _ground_truth(opts, names)
    opts.out.mkdir(parents=True, exist_ok=True)
    overlay_dir = opts.out / "overlays"
    if opts.overlays:
        overlay_dir.mkdir(exist_ok=True)
    rows: list[dict] = []
    predictions: dict[str, tuple] = {}
    started = time.perf_counter()
    infer_s = 0.0
    pool = ThreadPoolExecutor(max_workers=1) if opts.overlays else None
    pending = []
    csv_file = open(opts.out / "results.csv", "w", newline="", encoding="utf-8")
    writer = None
    try:
        for index, image_path in enumerate(images):
            if cancel is not None:
                cancel.raise_if_cancelled()
            row: dict = {"image": image_path.name}
            image = cv2.imread(str(image_path), cv2.IMREAD_COLOR)
            if image is None:
                row["error"] = "not a readable picture"
            else:
                tensor, placement = apply(pre, image)
                t0 = time.perf_counter()
                try:
                    outputs = session.run(None, {first.name: tensor})
                except Exception as exc:  # ORT's own types: the picture fails, the run goes on
                    from studio.core.ortmsg import ort_message

                    row["error"] = f"ONNX Runtime: {ort_message(exc)}"
                    outputs = None
                elapsed = time.perf_counter() - t0
                infer_s += elapsed
                row["ms"] = round(elapsed * 1000, 3)
                if outputs is not None:
                    if opts.task == "detect" and head is None:
                        head = postprocess.guess_head_for(outputs, (pre.height, pre.width))
                        notes.append(f"detection head: {head} (guessed from the outputs' shapes; give --head)")
                    drawn = _answer(opts, pre, outputs, placement, image, image_path.stem, names, head, ground,
                                    row, predictions)
                    if pool is not None and drawn is not None:
                        target = overlay_dir / f"{image_path.stem}.png"
                        # fast PNG settings: overlays are for looking at, and encoding shares the cores
                        pending.append(pool.submit(cv2.imwrite, str(target), drawn, [cv2.IMWRITE_PNG_COMPRESSION, 1]))
                        row["overlay"] = str(Path("overlays") / target.name)
            if writer is None:
                writer = csv.DictWriter(csv_file, fieldnames=_csv_fields(opts.task), extrasaction="ignore")
                writer.writeheader()
            writer.writerow(row)
            rows.append(row)
            if index % 8 == 0 or index == len(images) - 1:
                yield Progress((index + 1) / len(images), f"{index + 1:,} of {len(images):,} pictures")
    finally:
        csv_file.close()
        if pool is not None:
            for future in pending:
                future.result()
            pool.shutdown()
    wall = time.perf_counter() - started
    summary = _summary(opts, rows, predictions, ground, names, wall, infer_s)
    result = InferResult(opts.out, rows, summary, pre, notes)
    (opts.out / "results.json").write_text(json.dumps(to_json(result), indent=1), encoding="utf-8")
    return result


def _csv_fields(task: str) -> list[str]:
    extra = {"classify": ["top1", "top1_name", "top1_score", "truth", "correct_top1", "correct_top5"],
             "segment": ["foreground_share", "dice", "iou"],
             "detect": ["detections", "truth_boxes"]}[task]
    return ["image", "ms", *extra, "overlay", "error"]


def _ground_truth(opts: InferOptions, names: list[str]):
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
        mask = _mask_to_image(mask, pre, placement, cv2)
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


def _mask_to_image(mask: np.ndarray, pre: Preprocess, placement, cv2) -> np.ndarray:
    """The mask in picture pixels: undo the letterbox or crop, then resize (nearest)."""
    top, left = int(round(placement.offset_y)), int(round(placement.offset_x))
    if pre.resize == "letterbox":
        h = int(round(placement.image_height * placement.scale_y))
        w = int(round(placement.image_width * placement.scale_x))
        mask = mask[top:top + h, left:left + w]
    return cv2.resize(mask, (placement.image_width, placement.image_height), interpolation=cv2.INTER_NEAREST)


def _summary(opts, rows, predictions, ground, names, wall, infer_s) -> dict:
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


def read_results(folder: Path) -> dict:
    """The ``results.json`` of an infer run (for the gallery and comparisons)."""
    path = Path(folder) / "results.json" if Path(folder).is_dir() else Path(folder)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"Cannot read infer results ({exc})", path, "Give the -o folder of `studio infer`.") from exc
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        raise UserError("Not the results of `studio infer`", path, "Give the -o folder of `studio infer`.")
    return data


def match_infer_results(path: Path, head: bytes) -> bool:
    """The ``results.json`` of ``studio infer``, by its format key."""
    return json_object_with(head, r'"format"\s*:\s*"studio-infer"')


def match_infer_dir(path: Path) -> bool:
    """The ``-o`` folder of ``studio infer`` (its results.json says so in its first bytes)."""
    results = path / "results.json"
    if not results.is_file():
        return False
    try:
        with results.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return False
    return b'"studio-infer"' in head


INFER_RESULTS = FileFormat("infer_results", "Results of studio infer (pictures, answers, metrics)", GALLERY,
                           match_infer_results, path_only(read_results))
INFER_DIR = FileFormat("infer_dir", "Results of studio infer", GALLERY, match_infer_dir, path_only(read_results),
                       folder=True)
