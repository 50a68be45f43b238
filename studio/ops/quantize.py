"""INT8 quantisation of an ONNX model here (``studio quantize``): the samples come from a folder of
pictures (``studio infer``'s preprocessing: presets, resize, layout, the same options) or an
``.npz``; ground truth as ``studio infer --truth`` reads it (a labels CSV for top-1, boxes for
mAP, masks for Dice and IoU: :mod:`studio.ops.quantize_judges`); the job is
:func:`studio.tools.quantize.run.quantize`; with ``ascend``, AMCT's configuration, its command
line and the ATC line that takes its output are written beside (:mod:`studio.tools.quantize.amct`).
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from studio.core import options
from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.options import option
from studio.core.serial import to_json
from studio.ops import picture_options
from studio.tools.infer.postprocess import HEADS
from studio.tools.quantize.build import COMPUTE_OPS, FORMATS, METHODS
from studio.tools.quantize.run import SEARCHES

DEFAULT_MIN_COSINE = 0.99


def _path(value, _read=None) -> Path | None:
    return Path(value) if value is not None else None


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _number(value: float) -> str:
    return f"{value:g}"


def _drop(metric: str, what: str) -> object:
    """A task target: ``--max-METRIC-drop P``, at most P points of ``what`` below FP32 (one of the
    exclusive targets)."""
    return option(f"--max-{metric}-drop", default=None, type=float, metavar="P", format=_number, exclusive="target",
                  help=f"target: {what}")


@dataclass
class Request:
    """``studio quantize`` as a request; each field is declared once with its option
    (:mod:`studio.core.options`): the command's parser, ``from_args`` and ``to_argv`` come from them."""

    COMMAND = ("quantize",)

    model: Path = option(type=Path, metavar="MODEL", parse=_path, host="model", help="an ONNX model (FP32)")
    out: Path = option("-o", "--output", type=Path, required=True, metavar="OUT.onnx", parse=_path, host="output",
                       help="the quantised model with the rollback set left in float (written only on success)")
    calib: Path = option("--calib", type=Path, required=True, metavar="DIR|FILE.npz", parse=_path, host="folder",
                         help="calibration data: a folder of pictures (preprocessed as studio infer does) or an .npz "
                              "with one array per input named after it, samples along the first axis")
    # held-out samples to judge on (default: the calibration ones)
    evaluate: Path | None = option("--eval", default=None, type=Path, metavar="DIR|FILE.npz", parse=_path,
                                   host="folder", help="held-out samples the target is judged on (default: the "
                                                       "calibration samples)")
    method: str = option("--method", default="minmax", choices=METHODS, help="calibration method (default minmax)")
    per_channel: bool = option("--per-channel", default=False, action="store_true",
                               help="quantise weights per output channel")
    format: str = option("--format", default="qdq", choices=FORMATS, help="ONNX form of the INT8 model (default qdq)")
    op_types: tuple[str, ...] = option("--op-types", default=COMPUTE_OPS, type=_names, metavar="A,B",
                                       parse=lambda value, _read: tuple(value), format=",".join,
                                       help=f"op types to quantise (default {','.join(COMPUTE_OPS)}: the layers AMCT "
                                            "quantises)")
    exclude: tuple[str, ...] = option("--exclude", default=(), action="append", metavar="NODE",
                                      parse=lambda values, _read: tuple(values or ()),
                                      help="keep this node in float (repeatable)")
    min_cosine: float | None = option("--min-cosine", default=None, type=float, metavar="X", format=_number,
                                      exclusive="target", help="target: every output's cosine against FP32 >= X on "
                                                               "every sample (default 0.99)")
    max_top1_drop: float | None = _drop("top1", "top-1 on the labelled pictures at most P points below FP32 (needs "
                                        "--truth)")
    truth: Path | None = option("--truth", default=None, type=Path, metavar="LABELS.csv|BOXES|MASKS", parse=_path,
                                host="folder", help="ground truth, as studio infer --truth: image,label rows; a folder "
                                                    "of VOC XML or a COCO JSON; a folder of mask PNGs named like the "
                                                    "pictures")
    labels: Path | None = option("--labels", default=None, type=Path, metavar="FILE", parse=_path, host="file",
                                 help="class names, one per line (labels by name)")
    preset: str | None = picture_options.preset_field("normalisation of pictures (as studio infer)")
    resize: str | None = picture_options.resize_field("how pictures are resized (as studio infer)")
    size: tuple[int, int] | None = picture_options.size_field()
    bgr: bool = picture_options.bgr_field()
    layout: str | None = picture_options.layout_field()
    mean: tuple[float, float, float] | None = picture_options.mean_field()
    std: tuple[float, float, float] | None = picture_options.std_field()
    ranges: Path | None = option("--ranges", default=None, type=Path, metavar="FILE", parse=_path, host="file",
                                 help="calibration ranges: saved here, reused when made from the same samples and "
                                      "method (default OUT.ranges.json)")
    budget: float = option("--budget", default=3.0, type=float, metavar="S", format=_number,
                           help="seconds of interleaved timing per comparison (default 3)")
    timing: bool = option("--no-timing", default=True, action="store_false", dest="timing",
                          help="skip the latency comparison")
    ascend: Path | None = option("--ascend", default=None, type=Path, metavar="DIR", parse=_path, host="output",
                                 help="write AMCT's configuration (the rollback set as skip_layers), the samples as "
                                      ".bin, and commands.sh (amct_onnx calibration, then atc) into DIR")
    soc: str | None = option("--soc", default=None, metavar="SOC",
                             help="ATC --soc_version in commands.sh (default Ascend310P3, said)")
    # whose preprocessing defaults apply to pictures (None: the target's task)
    task: str | None = option("--task", default=None, choices=("classify", "detect", "segment"),
                              help="whose preprocessing defaults apply to pictures (default: the target's task, else "
                                   "classify)")
    max_map_drop: float | None = _drop("map", "a detector's mAP@0.5 on the pictures with boxes at most P points below "
                                       "FP32 (needs --truth boxes)")
    max_dice_drop: float | None = _drop("dice", "a segmenter's mean Dice at most P points below FP32 (needs --truth "
                                        "masks)")
    max_iou_drop: float | None = _drop("iou", "a segmenter's mean IoU at most P points below FP32 (needs --truth masks)")
    head: str | None = option("--head", default=None, choices=HEADS,
                              help="detection output layout (as studio infer; default: guessed)")
    conf: float = option("--conf", default=0.25, type=float, format=_number,
                         help="detection score threshold (default 0.25)")
    iou: float = option("--iou", default=0.45, type=float, format=_number,
                        help="detection NMS IoU threshold (default 0.45)")
    search: str = option("--search", default="both", choices=SEARCHES,
                         help="rollback searches to run: both (default; their set sizes and runs compared), ddmin, "
                              "or ranked (msmodelslim's sensitivity-ranked bisection)")

    #: The options in the order ``studio quantize --help`` lists them (the target group together).
    SHOWN = ("model", "out", "calib", "evaluate", "method", "per_channel", "format", "op_types", "exclude", "search",
             "min_cosine", "max_top1_drop", "max_map_drop", "max_dice_drop", "max_iou_drop", "truth", "labels",
             "task", "head", "conf", "iou", "preset", "mean", "std", "resize", "size", "bgr", "layout", "ranges",
             "budget", "timing", "ascend", "soc")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Request:
        """The request the command line's parsed arguments describe."""
        return options.from_args(cls, args)

    def to_argv(self) -> list[str]:
        """The ``studio quantize`` arguments of this request."""
        return options.to_argv(self)

    def for_host(self, paths) -> Request:
        """This request with its files named as on a host (``paths``: a HostPaths)."""
        from studio.ops.host_fields import for_host

        return for_host(self, paths)


def choices(name: str) -> tuple[str, ...]:
    """The words the Request's option ``name`` accepts (``method``, ``format``, ``preset``, ``resize``,
    ``head``, ``task``...): what a form offers is what the command takes."""
    from studio.core.options import option_of

    return tuple(option_of(Request.__dataclass_fields__[name]).arg["choices"])


@dataclass
class Samples:
    """Feeds for the model, where they came from, and the label of each (None: not labelled)."""

    feeds: list[dict]
    source: str
    labels: list[int | None] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stems: list[str] = field(default_factory=list)       # pictures: each sample's file stem
    placements: list = field(default_factory=list)       # pictures: where each sits in the input
    pre: object | None = None                            # pictures: the preprocessing applied


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None,
        target=None) -> Generator[Progress, None, object]:
    """Quantise as ``request`` says on this computer (the search runs ONNX Runtime hundreds of times:
    it runs here); with a host ``where`` (or a ``target``), the ``--ascend`` folder's AMCT and ATC
    commands then run there and the deployable model and .om come back
    (:mod:`studio.ops.quantize_host`)."""
    from studio.tools.quantize.build import Settings
    from studio.tools.quantize.run import quantize
    from studio.tools.quantize.search import Target

    on_host = where not in (None, "", "local") or target is not None
    if on_host and request.ascend is None:
        raise UserError("--host runs AMCT and ATC on the host: they need the folder --ascend writes", "--host",
                        "Add --ascend DIR (the AMCT configuration, samples and commands.sh go there).")
    model = Path(request.model)
    if not model.is_file():
        raise UserError("Model not found", model, "Give the path of an .onnx model.")
    if request.out.resolve() == model.resolve():
        raise UserError("-o would overwrite the model itself", request.out, "Write the INT8 model to another file.")
    settings = Settings(request.method, request.per_channel, request.format, tuple(request.op_types),
                        tuple(request.exclude))
    drops = {"max_top1_drop": request.max_top1_drop, "max_map_drop": request.max_map_drop,
             "max_dice_drop": request.max_dice_drop, "max_iou_drop": request.max_iou_drop}
    given = request.min_cosine is not None or any(v is not None for v in drops.values())
    goal = Target(request.min_cosine if given else DEFAULT_MIN_COSINE, given=given, **drops)
    request, task_note = _with_task(request, goal, model)
    _check_excludes(model, request.exclude)
    yield Progress(None, f"reading calibration samples from {request.calib}")
    calib = load_samples(request, request.calib, cancel)
    evaluation = load_samples(request, request.evaluate, cancel) if request.evaluate else calib
    labels = None
    notes = ([task_note] if task_note else []) + list(calib.notes)
    if request.evaluate is None:
        notes.append("judged on the calibration samples (give --eval for held-out ones)")
    if goal.metric in ("map50", "dice", "iou"):
        eval_feeds, labels, judge_notes = _task_judge(request, evaluation, goal)
        notes += judge_notes
    elif goal.max_top1_drop is not None:
        labelled = [(f, y) for f, y in zip(evaluation.feeds, evaluation.labels) if y is not None]
        if not labelled:
            raise UserError("No picture of the evaluation set has a label", request.truth or "--truth",
                            "Give --truth LABELS.csv with image,label rows for the pictures "
                            f"of {request.evaluate or request.calib}.")
        if len(labelled) < len(evaluation.feeds):
            notes.append(f"top-1 on the {len(labelled)} labelled picture(s) of {len(evaluation.feeds)}")
        eval_feeds, labels = [f for f, _ in labelled], [y for _, y in labelled]
    else:
        eval_feeds = evaluation.feeds
    result = yield from quantize(model, request.out, calib.feeds, eval_feeds, settings, goal, labels,
                                 request.ranges, request.budget, request.timing, search=request.search,
                                 cancel=cancel)
    result.notes = notes + result.notes
    if request.ascend is not None:
        result.ascend = _write_ascend(request, result.fallback, calib.feeds)
    if on_host:
        from studio.ops.quantize_host import run_ascend

        if target is None:
            from studio.targets import target_for

            target = target_for(context, where)
        ran = yield from run_ascend(Path(request.ascend), result.ascend, target, cancel)
        result.ascend.update({"ran_on": ran.host, "work": ran.work, "seconds": ran.seconds,
                              "deploy_model_local": str(ran.deploy_model), "om_local": str(ran.om),
                              "log": str(ran.log)})
    return result


#: The task each task target is judged on.
TARGET_TASKS = {"top1": "classify", "map50": "detect", "dice": "segment", "iou": "segment"}


def _with_task(request: Request, goal, model: Path) -> tuple[Request, str | None]:
    """``request`` with its task and the line saying where it came from: the one given; else the
    target's; else, for pictures, the one the model's outputs say (as ``studio infer`` guesses it:
    a U-Net's pictures are not centre-cropped as a classifier's); else classify."""
    from dataclasses import replace

    wanted = TARGET_TASKS.get(goal.metric)
    if request.task is not None:
        if wanted is not None and request.task != wanted:
            raise UserError(f"A {goal.describe()} target judges a {wanted} model, but --task is {request.task}",
                            "--task", f"Give --task {wanted}, or leave --task out.")
        return request, None
    if wanted is not None:
        note = f"task: {wanted} (from the target; give --task to choose)" if wanted != "classify" else None
        return replace(request, task=wanted), note
    if not Path(request.calib).is_dir():  # arrays, not pictures: no preprocessing to choose
        return replace(request, task="classify"), None
    from studio.core.ort_session import declared_outputs
    from studio.tools.infer.task_guess import guess_task

    task, why = guess_task(list(declared_outputs(model).values()))
    if task is None:
        return replace(request, task="classify"), (f"task: classify, whose picture preprocessing is used "
                                                   f"({why}; give --task to choose)")
    return replace(request, task=task), f"task: {task} (guessed: {why}; give --task to choose)"


def _task_judge(request: Request, evaluation: Samples, goal) -> tuple[list[dict], object, list[str]]:
    """The evaluation feeds that have ground truth, the judge of their boxes or masks, and notes."""
    from studio.ops.quantize_judges import BoxJudge, MaskJudge, Picture
    from studio.tools.infer.postprocess import HEADS, guess_head_for
    from studio.tools.infer.results import class_names
    from studio.tools.infer.truth import read_boxes, read_mask
    from studio.tools.quantize.measure import TASK_METRICS, run_all

    flag = "--" + next(k for k in ("max_map_drop", "max_dice_drop", "max_iou_drop")
                       if getattr(request, k) is not None).replace("_", "-")
    kind = "boxes (a folder of VOC XML files or a COCO JSON)" if goal.metric == "map50" else \
        "masks (a folder of PNGs named like the pictures, class per pixel)"
    if request.truth is None:
        raise UserError(f"{flag} needs --truth", "--truth", f"Give the pictures' {kind}, as studio infer --truth.")
    if not request.truth.exists():
        raise UserError("Ground truth not found", request.truth, f"Give the pictures' {kind}.")
    if evaluation.pre is None:
        raise UserError(f"A {TASK_METRICS[goal.metric]} target is judged on pictures; the evaluation samples are "
                        "an .npz", request.evaluate or request.calib,
                        "Give a folder of pictures to --calib (or --eval) so the boxes or masks can be matched.")
    pictures = [Picture(stem, placement) for stem, placement in zip(evaluation.stems, evaluation.placements)]
    if goal.metric == "map50":
        truth = read_boxes(request.truth)
        keep = [i for i, p in enumerate(pictures) if p.stem in truth]
    else:
        if not request.truth.is_dir():
            raise UserError("Masks must be a folder of PNGs named like the pictures", request.truth,
                            "Give the masks folder.")
        masks = {p.stem: read_mask(request.truth, p.stem) for p in pictures}
        keep = [i for i, p in enumerate(pictures) if masks[p.stem] is not None]
    source = request.evaluate or request.calib
    if not keep:
        raise UserError(f"No picture of {source} has ground truth in {request.truth.name}", request.truth,
                        f"Name the {'annotation files' if goal.metric == 'map50' else 'mask PNGs'} after the "
                        "pictures (same stem), as studio infer --truth matches them.")
    notes = []
    if len(keep) < len(pictures):
        notes.append(f"{TASK_METRICS[goal.metric]} on the {len(keep)} picture(s) of {len(pictures)} with ground truth")
    feeds, pictures = [evaluation.feeds[i] for i in keep], [pictures[i] for i in keep]
    if goal.metric != "map50":
        return feeds, MaskJudge(pictures, [masks[p.stem] for p in pictures], evaluation.pre), notes
    pre = evaluation.pre
    head = request.head
    if head is None:  # as infer does: from the first picture's outputs, and said
        head = guess_head_for(run_all(request.model, feeds[:1])[0], (pre.height, pre.width))
        notes.append(f"detection head: {head} (guessed from the outputs' shapes; give --head)")
    elif head not in HEADS:
        raise UserError(f"Unknown detection head {head!r}", "--head", f"Use one of: {', '.join(HEADS)}.")
    judge = BoxJudge(pictures, truth, class_names(request.labels), head, (pre.height, pre.width), request.conf,
                     request.iou)
    notes.append(f"detections: {head} head, score >= {request.conf:g}, NMS IoU {request.iou:g} (as studio infer)")
    return feeds, judge, notes


def _check_excludes(model: Path, exclude) -> None:
    import onnx

    if not exclude:
        return
    names = {n.name for n in onnx.load(str(model), load_external_data=False).graph.node}
    unknown = [n for n in exclude if n not in names]
    if unknown:
        raise UserError(f"--exclude names no node of the model: {', '.join(unknown)}", model,
                        "Give node names as `studio graph` lists them.")


def _write_ascend(request: Request, skip: list[str], feeds: list[dict]) -> dict:
    """AMCT's files into ``request.ascend`` (written aside, then renamed into place)."""
    from studio.tools.quantize.amct import write_amct

    final = Path(request.ascend)
    tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        shutil.copyfile(request.model, tmp / Path(request.model).name)  # AMCT reads it beside its commands
        written = write_amct(tmp, Path(request.model), skip, feeds, request.soc)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"folder": str(final), "commands": str(final / "commands.sh"), "config": str(final / "amct.cfg"),
            "amct": written["amct_argv"], "atc": written["atc_argv"], "deploy_model": written["deploy_model"],
            "om": written["om"]}


def load_samples(request: Request, source: Path, cancel: CancelToken | None = None) -> Samples:
    """Samples from an .npz, or from a folder of pictures (or one) with the infer preprocessing."""
    from studio.core.model_inputs import session_specs
    from studio.tools.quantize.calib import check_samples, npz_samples
    from studio.tools.quantize.measure import open_cpu

    source = Path(source)
    session = open_cpu(request.model)
    inputs = {i.name: tuple(d if isinstance(d, int) else None for d in i.shape) for i in session.get_inputs()}
    if source.suffix.lower() == ".npz":
        if not source.is_file():
            raise UserError("Calibration file not found", source, "Give an .npz or a folder of pictures.")
        feeds = check_samples(npz_samples(source, inputs), inputs, source)
        return Samples(feeds, str(source), [None] * len(feeds))
    return _pictures(request, source, session, inputs, cancel)


def _pictures(request: Request, source: Path, session, inputs: dict, cancel) -> Samples:
    import cv2

    from studio.tools.infer.preprocess import apply, make_preprocess, preset_for_input
    from studio.tools.infer.results import class_names
    from studio.tools.infer.runner import ORT_TYPES, list_images
    from studio.tools.infer.truth import read_labels
    from studio.tools.quantize.calib import check_samples

    if len(inputs) != 1:
        raise UserError(f"The model has {len(inputs)} inputs; pictures feed one", source,
                        "Give an .npz with one array per input (samples along the first axis).")
    try:
        images = list_images(source)
    except PermissionError as exc:
        raise UserError(f"Cannot read the calibration folder ({exc.strerror})", source,
                        "Give a folder you can read.") from exc
    first = session.get_inputs()[0]
    dtype = ORT_TYPES.get(first.type, "float32")
    pre = make_preprocess(tuple(first.shape), request.task or "classify", preset_for_input(dtype, request.preset, request.mean),
                          request.resize, request.size, request.bgr, request.layout, request.mean, request.std,
                          input_name=first.name)
    # labels only for a classifier: boxes and masks are read by the task judge
    truth = read_labels(request.truth, class_names(request.labels)) if request.truth and request.max_top1_drop is not None \
        else {}
    feeds, labels, unreadable, stems, placements = [], [], [], [], []
    for path in images:
        if cancel is not None:
            cancel.raise_if_cancelled()
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            unreadable.append(path.name)
            continue
        tensor, placement = apply(pre, image)
        feeds.append({first.name: tensor.astype(dtype)})
        labels.append(truth.get(path.stem))
        stems.append(path.stem)
        placements.append(placement)
    if not feeds:
        raise UserError(f"None of the {len(images)} picture(s) could be read", source,
                        "Give PNG, JPEG, BMP or TIFF files that open in an image viewer.")
    notes = [f"preprocessing: {pre.describe()}"]
    if unreadable:
        notes.append(f"skipped {len(unreadable)} unreadable picture(s): {', '.join(unreadable[:5])}")
    return Samples(check_samples(feeds, inputs, source), str(source), labels, notes, stems, placements, pre)


def result_json(result) -> dict:
    """The ``--json`` form of a result."""
    return to_json(result)
