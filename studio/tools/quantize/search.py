"""The fewest layers to roll back to float so the quantised model meets an accuracy target.

Two searches over the same check (a build with the set rolled back, run on the evaluation
samples, judged against the target):

* delta debugging (:func:`studio.core.ddmin.ddmin`, the FP16 search's): from every quantised
  layer rolled back, drop halves, quarters, ... of the set while the model still meets the target;
  the set is 1-minimal under removal of any chunk;
* sensitivity-ranked binary search (msmodelslim's ``binary_fallback``): roll back the k most
  sensitive layers, the smallest k that meets the target found by bisection (it assumes the
  error falls as k grows).

Each search counts its own checks (its own cache), so their run counts compare.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.core.ddmin import ddmin
from studio.core.errors import UserError
from studio.core.jobs import CancelToken
from studio.tools.quantize.measure import TASK_METRICS, Accuracy, accuracy_of, as_judge, min_cosine, run_each


#: Each task target's option and the metric it reads (:data:`~studio.tools.quantize.measure.TASK_METRICS`).
DROP_TARGETS = {"max_top1_drop": "top1", "max_map_drop": "map50", "max_dice_drop": "dice", "max_iou_drop": "iou"}


@dataclass
class Target:
    """The accuracy to meet: ``min_cosine`` of the outputs against FP32 (>=), or a task metric no
    more than its drop (in points) below FP32's on the samples with ground truth: top-1 (labels),
    mAP@0.5 (boxes), Dice or IoU (masks)."""

    min_cosine: float | None = None
    max_top1_drop: float | None = None
    given: bool = True                 # False: the default, said in the output
    max_map_drop: float | None = None
    max_dice_drop: float | None = None
    max_iou_drop: float | None = None

    def __post_init__(self) -> None:
        drops = {k: getattr(self, k) for k in DROP_TARGETS if getattr(self, k) is not None}
        if (self.min_cosine is not None) + len(drops) != 1:
            raise UserError("Give one accuracy target", "--min-cosine / --max-top1-drop / --max-map-drop / "
                            "--max-dice-drop / --max-iou-drop",
                            "Use --min-cosine 0.99, or one task target such as --max-top1-drop 1 --truth LABELS.")
        if self.min_cosine is not None and not -1.0 <= self.min_cosine <= 1.0:
            raise UserError(f"--min-cosine {self.min_cosine} is outside -1..1", "--min-cosine", "Give e.g. 0.99.")
        for key, value in drops.items():
            if not 0.0 <= value <= 100.0:
                flag = "--" + key.replace("_", "-")
                raise UserError(f"{flag} {value:g} is outside 0..100 points", flag,
                                f"Give the {TASK_METRICS[DROP_TARGETS[key]]} points you accept to lose, e.g. 1.")

    @property
    def metric(self) -> str | None:
        """The task metric the target reads (``top1``, ``map50``, ``dice``, ``iou``), None for cosine."""
        return next((m for k, m in DROP_TARGETS.items() if getattr(self, k) is not None), None)

    @property
    def drop(self) -> float | None:
        """The points the task metric may lose against FP32."""
        return next((getattr(self, k) for k in DROP_TARGETS if getattr(self, k) is not None), None)

    def met(self, accuracy: Accuracy, fp32: Accuracy) -> bool:
        if self.min_cosine is not None:
            return accuracy.min_cosine >= self.min_cosine
        value, base = getattr(accuracy, self.metric), getattr(fp32, self.metric)
        return value is not None and value >= base - self.drop / 100.0 - 1e-12

    def score(self, accuracy: Accuracy) -> float:
        """The figure the target reads (larger is better)."""
        return accuracy.min_cosine if self.min_cosine is not None else getattr(accuracy, self.metric)

    def describe(self) -> str:
        if self.min_cosine is not None:
            text = f"min cosine >= {self.min_cosine:g} against FP32"
        else:
            text = f"{TASK_METRICS[self.metric]} within {self.drop:g} point(s) of FP32"
        return text + ("" if self.given else " (not given: the default)")

    def show(self, accuracy: Accuracy) -> str:
        if self.min_cosine is not None:
            return f"min cosine {accuracy.min_cosine:.6f}"
        return f"{TASK_METRICS[self.metric]} {getattr(accuracy, self.metric) * 100:.2f} %"


class Checker:
    """Builds and judges rollback sets; remembers each set's accuracy and counts distinct checks.

    With a cosine target and no task judge, a check stops at the first sample below the target
    (``order``: the samples the fully quantised model does worst on first): the verdict is known,
    the other samples cannot raise a minimum. Such a check's accuracy is the worst seen so far;
    :meth:`accuracy` completes it on every sample when a figure is reported."""

    def __init__(self, builder, samples, reference, judge, target: Target, fp32: Accuracy, cancel=None,
                 measured: dict | None = None, order: list[int] | None = None):
        self.builder, self.samples, self.reference, self.judge = builder, samples, reference, as_judge(judge)
        self.target, self.fp32, self.cancel = target, fp32, cancel
        self.seen: dict[frozenset, Accuracy] = {}
        # sets already measured (shared between searches): measured once, still counted by each search;
        # each value (accuracy, stopped early)
        self.measured = measured if measured is not None else {}
        self.order = list(order) if order is not None else list(range(len(samples)))
        self._early = target.min_cosine is not None and self.judge is None

    def accuracy(self, rollback) -> Accuracy:
        """The set's accuracy on every sample."""
        return self.seen[self._check(rollback, early=False)]

    def passes(self, rollback) -> bool:
        return self.target.met(self.seen[self._check(rollback, early=self._early)], self.fp32)

    def _check(self, rollback, early: bool) -> frozenset:
        key = frozenset(rollback)
        known = self.measured.get(key)
        if known is None or known[1] and not early:
            if self.cancel is not None:
                self.cancel.raise_if_cancelled()
            known = self.measured[key] = self._measure(key, early)
        self.seen[key] = known[0]
        return key

    def _measure(self, key: frozenset, early: bool) -> tuple[Accuracy, bool]:
        outputs: dict[int, list] = {}
        worst = 1.0
        for index, out in zip(self.order, run_each(self.builder.build(key), [self.samples[i] for i in self.order])):
            outputs[index] = out
            worst = min(worst, min_cosine([self.reference[index]], [out]))
            if early and worst < self.target.min_cosine:
                return Accuracy(worst), True
        return accuracy_of(self.reference, [outputs[i] for i in range(len(self.samples))], self.judge), False

    @property
    def runs(self) -> int:
        return len(self.seen)


@dataclass
class Found:
    """One search's answer: the set rolled back, its accuracy, and the checks it took."""

    method: str
    rollback: list[str]
    runs: int
    accuracy: Accuracy
    notes: list[str] = field(default_factory=list)

    __json_extra__ = ("size",)

    @property
    def size(self) -> int:
        return len(self.rollback)


def search_ddmin(checker: Checker, candidates: list[str], cancel: CancelToken | None = None) -> Found:
    """Delta debugging from the whole set (see the module docstring), ``candidates`` in the order
    given (most sensitive first groups the layers that matter in the same chunks), then each layer
    left tried away alone, so the set is 1-minimal: removing any one layer misses the target."""
    if checker.passes([]):
        return Found("ddmin", [], checker.runs, checker.accuracy([]))
    if not checker.passes(candidates):
        return Found("ddmin", list(candidates), checker.runs, checker.accuracy(candidates))
    keep = ddmin(candidates, checker.passes, cancel)
    for name in list(keep):
        if len(keep) > 1 and checker.passes([k for k in keep if k != name]):
            keep = [k for k in keep if k != name]
    return Found("ddmin", keep, checker.runs, checker.accuracy(keep))


def search_ranked(checker: Checker, ranked: list[str]) -> Found:
    """The smallest k such that the k most sensitive layers rolled back meet the target (bisection)."""
    if checker.passes([]):
        return Found("ranked-binary", [], checker.runs, checker.accuracy([]))
    low, high = 0, len(ranked)          # top-low fails (known for 0), top-high is the answer if any passes
    if not checker.passes(ranked):
        return Found("ranked-binary", list(ranked), checker.runs, checker.accuracy(ranked))
    while high - low > 1:
        middle = (low + high) // 2
        if checker.passes(ranked[:middle]):
            high = middle
        else:
            low = middle
    return Found("ranked-binary", list(ranked[:high]), checker.runs, checker.accuracy(ranked[:high]))
