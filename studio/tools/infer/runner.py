"""``run_infer``: a model over a folder of pictures, with answers, metrics and overlay pictures.

A job (generator of Progress): a loader thread reads and preprocesses the next pictures while
ONNX Runtime runs one; the outputs go to a :class:`~studio.tools.infer.results.ResultSink`,
whose pool post-processes, scores and draws them meanwhile. Writes ``OUT/results.csv`` (a row
per picture, written as it goes, so a cancelled run keeps what it did), ``OUT/results.json``
(rows and summary) and ``OUT/overlays/<stem>.png``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import GALLERY, FileFormat, json_object_with, path_only
from studio.core.jobs import CancelToken, Progress
from studio.core.safe_read import load_json
from studio.tools.infer.preprocess import Preprocess, make_preprocess, preset_for_input
from studio.tools.infer.results import RESULTS_FORMAT, InferResult, ResultSink, class_names, ground_truth

__all__ = ["IMAGE_SUFFIXES", "TASKS", "RESULTS_FORMAT", "InferOptions", "InferResult", "list_images", "run_infer",
           "load_ahead", "read_results"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
TASKS = ("classify", "detect", "segment")
#: ONNX Runtime's input types -> numpy's, for the types a picture can be fed as.
ORT_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(uint8)": "uint8"}


@dataclass
class InferOptions:
    """What to run and how (the CLI's and the gallery's options)."""

    model: Path
    images: Path
    out: Path
    task: str | None  # None: taken from the first output's shape (and said in the notes)
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


def run_infer(opts: InferOptions, cancel: CancelToken | None = None) -> Generator[Progress, None, InferResult]:
    """Job: run ``opts.model`` over ``opts.images`` (see the module docstring)."""
    from studio.core.ort_providers import open_session

    from studio.tools.infer.task_guess import check_task

    if opts.task is not None and opts.task not in TASKS:
        raise UserError(f"Unknown task {opts.task!r}", None, f"Use one of: {', '.join(TASKS)}.")
    images = list_images(opts.images)
    names = class_names(opts.labels)
    yield Progress(0.0, f"loading {opts.model.name}")
    session = open_session(opts.model, opts.providers, _session_options())
    opts, task_note = _with_task(opts, session)
    output = session.get_outputs()[0]
    check_task(opts.task, output.shape, opts.model.name, output.name)
    first = session.get_inputs()[0]
    dtype = ORT_TYPES.get(first.type, "float32")
    pre = make_preprocess(tuple(first.shape), opts.task, preset_for_input(dtype, opts.preset, opts.mean), opts.resize,
                          opts.size, opts.bgr, opts.layout, opts.mean, opts.std, input_name=first.name)
    # A guessed task is said first (it decides what every number means); a given one needs no note.
    notes = [note for note in (task_note, f"preprocessing: {pre.describe()}") if note]
    sink = ResultSink(opts, pre, names, ground_truth(opts, names), notes)
    started = time.perf_counter()
    try:
        for index, (image_path, loaded) in enumerate(load_ahead(images, pre, cancel, dtype=dtype)):
            if loaded is None:
                sink.failed(image_path, "not a readable picture")
            else:
                image, tensor, placement = loaded
                t0 = time.perf_counter()
                try:
                    outputs = session.run(None, {first.name: tensor})
                except Exception as exc:  # ORT's own types: the picture fails, the run goes on
                    from studio.core.ortmsg import ort_message

                    sink.failed(image_path, f"ONNX Runtime: {ort_message(exc)}", time.perf_counter() - t0)
                else:  # a dynamic output is judged on what the model gave (a map is no class list)
                    check_task(opts.task, list(outputs[0].shape), opts.model.name, output.name)
                    sink.add(image_path, image, outputs, placement, time.perf_counter() - t0)
            if index % 8 == 0 or index == len(images) - 1:
                yield Progress((index + 1) / len(images), f"{index + 1:,} of {len(images):,} pictures")
    finally:
        sink.close()
    return sink.finish(time.perf_counter() - started)


def _with_task(opts: InferOptions, session) -> tuple[InferOptions, str | None]:
    """``opts`` with a task (the given one, else the one the outputs' shapes say) and, for a guessed
    one, the line saying so."""
    from dataclasses import replace

    from studio.tools.infer.task_guess import guess_task

    shapes = [o.shape for o in session.get_outputs()]
    if opts.task is not None:
        return opts, None
    task, why = guess_task(shapes)
    if task is None:
        raise UserError(f"Cannot tell the task of {opts.model.name}: {why}", f"{opts.model.name}, outputs {shapes}",
                        "Give the task: --task classify, detect or segment (the gallery's Task field).")
    return replace(opts, task=task), f"task: {task} (guessed: {why}; give --task to choose)"


def _session_options():
    """ONNX Runtime's threads sleep between pictures instead of spinning: the loader and the
    post-processing pool use those moments (spinning kept them off the cores: 0.78x a plain
    ORT loop's pictures/s with it, 1.2x to 1.5x without, on a loaded 2-core machine)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def load_ahead(images: list[Path], pre: Preprocess | None, cancel: CancelToken | None = None, ahead: int = 4,
               dtype: str = "float32") -> Iterator[tuple[Path, tuple | None]]:
    """``(path, (image, tensor, placement))`` for each picture in order, read and preprocessed on a
    thread ``ahead`` pictures in front of the caller (None for an unreadable picture; the tensor,
    of numpy type ``dtype``, is None without ``pre``). Checks ``cancel`` before each picture."""
    import cv2

    from studio.tools.infer.preprocess import apply

    def load(path: Path):
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            return None
        if pre is None:
            return image, None, None
        tensor, placement = apply(pre, image)
        return image, tensor if dtype == "float32" else tensor.astype(dtype), placement

    queued: deque = deque()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="infer-load") as loader:
        try:
            for position, path in enumerate(images):
                while len(queued) < ahead and position + len(queued) < len(images):
                    queued.append(loader.submit(load, images[position + len(queued)]))
                if cancel is not None:
                    cancel.raise_if_cancelled()
                yield path, queued.popleft().result()
        finally:
            for future in queued:
                future.cancel()


def read_results(folder: Path) -> dict:
    """The ``results.json`` of an infer run (for the gallery and comparisons)."""
    path = Path(folder) / "results.json" if Path(folder).is_dir() else Path(folder)
    try:
        data = load_json(path, "infer results")
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
