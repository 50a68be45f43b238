"""What a quantised model is judged on: its outputs against FP32 on the same samples (cosine, as
``accuracy precision`` reads it), a task metric against ground truth (top-1 on labelled samples
here; mAP, Dice and IoU through a judge the operations layer builds from ``studio infer``'s
post-processing and metrics), and its latency against FP32 timed interleaved
(:func:`studio.core.ab.interleaved`).

Every metric is plain numpy over ONNX Runtime's outputs, written to be checked by hand.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two tensors flattened (float64); both all zero -> 1, one -> 0."""
    x, y = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0.0 and ny == 0.0:
        return 1.0
    if nx == 0.0 or ny == 0.0 or not (np.isfinite(nx) and np.isfinite(ny)):
        return 0.0
    return min(1.0, float(np.dot(x, y) / (nx * ny)))


def min_cosine(reference: list[list[np.ndarray]], outputs: list[list[np.ndarray]]) -> float:
    """The lowest cosine over every sample and every float output."""
    values = [cosine(r, o) for ref, out in zip(reference, outputs) for r, o in zip(ref, out)
              if np.asarray(r).dtype.kind == "f"]
    return min(values) if values else 1.0


def top1(outputs: list[list[np.ndarray]], labels: list[int]) -> float:
    """The share of samples whose first output's largest score is at the label's index."""
    hits = [int(np.argmax(np.asarray(out[0]).reshape(-1))) == label for out, label in zip(outputs, labels)]
    return float(np.mean(hits)) if hits else float("nan")


def run_all(model: Path, samples: list[dict]) -> list[list[np.ndarray]]:
    """Every output of ``model`` for each sample (CPU, one session, its threads not spinning)."""
    return list(run_each(model, samples))


def run_each(model: Path, samples: list[dict]):
    """``model``'s outputs for one sample after another (one session): a caller may stop early."""
    session = open_cpu(model, spinning=False)
    for feeds in samples:
        try:
            outputs = session.run(None, feeds)
        except Exception as exc:  # ORT's own types
            from studio.core.ortmsg import ort_message

            raise UserError(f"ONNX Runtime cannot run {Path(model).name}: {ort_message(exc)}", model,
                            "Check that the samples match the model's inputs.") from exc
        yield outputs


def open_cpu(model: Path, spinning: bool = True):
    """A quiet CPU session of ``model`` (a path). ``spinning=False``: its worker threads sleep
    between ops instead of spinning, the same results (same threads, same partitioning) in less
    time on a loaded machine (a U-Net run 0.19-0.25 -> 0.12 s at load 7 on 2 cores); timing keeps
    ONNX Runtime's default, as a deployment runs it."""
    from studio.core.ort_providers import open_session

    options = None
    if not spinning:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return open_session(Path(model), ["CPUExecutionProvider"], options)


#: Task metrics a judge can report (fractions 0..1, larger is better), with the names a user reads.
TASK_METRICS = {"top1": "top-1", "map50": "mAP@0.5", "dice": "Dice", "iou": "IoU"}


@dataclass
class Accuracy:
    """One model's accuracy on the evaluation samples: cosine against FP32 and the task metrics
    the judge measured (None when it measures none of them)."""

    min_cosine: float
    top1: float | None = None      # None without labels
    map50: float | None = None     # detection: mAP at IoU 0.5 on the pictures with boxes
    dice: float | None = None      # segmentation: mean foreground Dice on the pictures with masks
    iou: float | None = None       # segmentation: mean foreground IoU

    __json_round__ = {"min_cosine": 6, "top1": 4, "map50": 6, "dice": 6, "iou": 6}


class Top1:
    """The judge of a classifier: top-1 of the first output against one label per sample."""

    metrics = ("top1",)

    def __init__(self, labels: list[int]):
        self.labels = list(labels)

    def measure(self, outputs: list[list[np.ndarray]]) -> dict[str, float]:
        return {"top1": top1(outputs, self.labels)}


def as_judge(judge):
    """``judge`` as an object with ``metrics`` and ``measure(outputs) -> {metric: value}``: a list of
    labels becomes :class:`Top1`; None stays None (cosine only)."""
    if judge is None or hasattr(judge, "measure"):
        return judge
    return Top1(judge) if len(judge) else None


def accuracy_of(reference, outputs, judge) -> Accuracy:
    """Accuracy of ``outputs`` against the FP32 ``reference``, and the judge's task metrics (a list
    of labels, a judge object, or None)."""
    judge = as_judge(judge)
    return Accuracy(min_cosine(reference, outputs), **(judge.measure(outputs) if judge is not None else {}))


@dataclass
class Row:
    """One line of the table: a model, its accuracy and its latency against FP32."""

    name: str
    path: str
    rolled_back: int
    accuracy: Accuracy
    latency: object | None = None   # studio.core.ab.Change against FP32 (None for FP32 itself)
    notes: list[str] = field(default_factory=list)


def time_against(base: Path, new: Path, feeds: dict, budget_s: float,
                 cancel: CancelToken | None = None) -> Generator[Progress, None, object]:
    """Job: ``new`` against ``base`` (both on CPU), timed interleaved with repeats; the Change."""
    import time

    from studio.core import ab

    sessions = [open_cpu(base), open_cpu(new)]

    def timer(session):
        def once() -> float:
            t0 = time.perf_counter_ns()
            session.run(None, feeds)
            return (time.perf_counter_ns() - t0) / 1e6
        return once

    return (yield from ab.interleaved(timer(sessions[0]), timer(sessions[1]), budget_s, floor=ab.SESSION_FLOOR,
                                      cancel=cancel))
