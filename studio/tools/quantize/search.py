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
from studio.tools.quantize.measure import Accuracy, accuracy_of, run_all


@dataclass
class Target:
    """The accuracy to meet: ``min_cosine`` of the outputs against FP32 (>=), or a top-1 no more
    than ``max_top1_drop`` points below FP32's on the labelled samples."""

    min_cosine: float | None = None
    max_top1_drop: float | None = None
    given: bool = True                 # False: the default, said in the output

    def __post_init__(self) -> None:
        if (self.min_cosine is None) == (self.max_top1_drop is None):
            raise UserError("Give one accuracy target", "--min-cosine / --max-top1-drop",
                            "Use --min-cosine 0.99, or --max-top1-drop 1 --truth LABELS.")
        if self.min_cosine is not None and not -1.0 <= self.min_cosine <= 1.0:
            raise UserError(f"--min-cosine {self.min_cosine} is outside -1..1", "--min-cosine", "Give e.g. 0.99.")
        if self.max_top1_drop is not None and not 0.0 <= self.max_top1_drop <= 100.0:
            raise UserError(f"--max-top1-drop {self.max_top1_drop} is outside 0..100 points", "--max-top1-drop",
                            "Give the top-1 points you accept to lose, e.g. 1.")

    def met(self, accuracy: Accuracy, fp32: Accuracy) -> bool:
        if self.min_cosine is not None:
            return accuracy.min_cosine >= self.min_cosine
        return accuracy.top1 is not None and accuracy.top1 >= fp32.top1 - self.max_top1_drop / 100.0 - 1e-12

    def score(self, accuracy: Accuracy) -> float:
        """The figure the target reads (larger is better)."""
        return accuracy.min_cosine if self.min_cosine is not None else accuracy.top1

    def describe(self) -> str:
        if self.min_cosine is not None:
            text = f"min cosine >= {self.min_cosine:g} against FP32"
        else:
            text = f"top-1 within {self.max_top1_drop:g} point(s) of FP32"
        return text + ("" if self.given else " (not given: the default)")

    def show(self, accuracy: Accuracy) -> str:
        if self.min_cosine is not None:
            return f"min cosine {accuracy.min_cosine:.6f}"
        return f"top-1 {accuracy.top1 * 100:.2f} %"


class Checker:
    """Builds and judges rollback sets; remembers each set's accuracy and counts distinct checks."""

    def __init__(self, builder, samples, reference, labels, target: Target, fp32: Accuracy, cancel=None):
        self.builder, self.samples, self.reference, self.labels = builder, samples, reference, labels
        self.target, self.fp32, self.cancel = target, fp32, cancel
        self.seen: dict[frozenset, Accuracy] = {}

    def accuracy(self, rollback) -> Accuracy:
        key = frozenset(rollback)
        if key not in self.seen:
            if self.cancel is not None:
                self.cancel.raise_if_cancelled()
            outputs = run_all(self.builder.build(key), self.samples)
            self.seen[key] = accuracy_of(self.reference, outputs, self.labels)
        return self.seen[key]

    def passes(self, rollback) -> bool:
        return self.target.met(self.accuracy(rollback), self.fp32)

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
