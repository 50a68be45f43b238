"""One FP16 diagnosis: the verdict on a model's outputs, its cause, the op to fix and how.

Every FP16 tool ends here — the conversion's validation, ``fp16-check``, ``compare``, ``accuracy
reduce`` and ``accuracy precision``, and the Accuracy panel — so they say the same thing about one
model. The verdict is on the model *outputs* (what the application sees); inner tensors only
explain it:

========================  =====================================================================
``nonfinite_output``      an output holds inf/NaN where FP32 is finite — never harmless
``overflow``              ... and it starts where values pass ±65504 (the op named)
``underflow``             ... or where a non-zero value becomes 0 in FP16 (an epsilon before a
                          log or a division, logits of 1e-13): the op that makes the tiny value
``precision_loss``        the outputs are finite but break a threshold (the first op that does)
``none``                  every output passes; inner drift that does not reach them is a note
========================  =====================================================================

Attention-mask tensors (:func:`studio.core.fp16_graph.mask_tensors`) saturate in FP16 by design;
they are a note, never a cause. An output that is all zero where FP32 is not is a total loss at
any scale (cosine undefined, relative Euclidean distance 1).

Each diagnosis carries the thresholds it judged by, printed beside the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from studio.tools.accuracy import advisor as rules

if TYPE_CHECKING:
    from studio.tools.accuracy.metrics import Thresholds
    from studio.tools.accuracy.row import Row

PASS, FAIL = "pass", "fail"
NONE, OVERFLOW, UNDERFLOW = "none", "overflow", "underflow"
NONFINITE_OUTPUT, PRECISION_LOSS = "nonfinite_output", "precision_loss"
FP16_SMALLEST_NORMAL = 6.1e-5


@dataclass
class Diagnosis:
    """The verdict on the outputs, the cause, the op that causes it, the fix; truthy when it passes."""

    verdict: str
    cause: str = NONE
    op: str = ""
    op_type: str = ""
    tensor: str = ""
    message: str = ""
    fix: str = ""
    thresholds: dict = field(default_factory=dict)
    outputs: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.verdict == PASS

    def thresholds_text(self) -> str:
        """``cosine > 0.99, rel_euclidean < 0.05, ...`` — the limits every output was held to."""
        from studio.core.diagnosis_text import describe_thresholds

        return describe_thresholds(self.thresholds)

    def __str__(self) -> str:
        from studio.core.diagnosis_text import diagnosis_lines
        from studio.core.serial import to_json

        return "\n".join(diagnosis_lines(to_json(self)))


def thresholds_dict(thresholds: Thresholds | None) -> dict:
    """The limits of a :class:`~studio.tools.accuracy.metrics.Thresholds` as a dict, in print order."""
    from studio.tools.accuracy.metrics import Thresholds

    return (thresholds or Thresholds()).as_dict()


def output_status(row: Row) -> str:
    """``passes``, ``inf/NaN``, ``all zero`` or ``fails <limits>`` for one compared output row."""
    m = row.metrics
    if rules.new_nonfinite(m):
        return "inf/NaN"
    if is_zero_loss(row):
        return "all zero"
    if row.violations:
        return "fails " + ", ".join(row.violations)
    return "passes"


def is_zero_loss(row: Row) -> bool:
    """The target is all zero where the golden tensor is not (any scale)."""
    m = row.metrics
    return (m is not None and not m.empty and m.target_absmax == 0 and m.golden_absmax > 0
            and not math.isinf(m.golden_absmax))


def diagnose(rows: list[Row], findings: list, thresholds: Thresholds | None = None) -> Diagnosis:
    """The diagnosis of one comparison (rows in graph order, the advisor's findings on them)."""
    limits = thresholds_dict(thresholds)
    compared = [r for r in rows if r.metrics is not None and not r.metrics.empty and not r.mask]
    outputs = [r for r in compared if r.is_output]
    notes = []
    if not outputs and compared:
        outputs = [compared[-1]]
        notes.append(f"the dumps mark no model output: the last compared tensor, {compared[-1].name}, stands in")
    per_output = [{"name": _tensor(r), "op": r.name, "status": output_status(r), "cosine": r.metrics.cosine,
                   "rel_euclidean": r.metrics.rel_euclidean, "max_abs_err": r.metrics.max_abs_err,
                   "nonfinite": rules.new_nonfinite(r.metrics)} for r in outputs]
    failing = [(r, o) for r, o in zip(outputs, per_output) if o["status"] != "passes"]
    masked = sum(1 for r in rows if r.mask)
    if masked:
        notes.append(f"{masked} attention-mask tensor(s) saturate in FP16 (harmless: they end in Softmax); not judged")
    if not compared:
        return Diagnosis(FAIL, NONE, message="Nothing was compared: no tensor holds data on both sides.",
                         fix="Check that both sides come from the same model.", thresholds=limits, notes=notes)
    if not failing:
        inner = [r for r in compared if r.violations and not r.is_output]
        if inner:
            notes.append(f"{len(inner)} inner tensor(s) break a threshold (first {inner[0].name}, {inner[0].op_type}: "
                         f"{output_status(inner[0])}) but every output passes")
        names = ", ".join(f"{o['name']} (cosine {_num(o['cosine'])}, rel_euclidean {_num(o['rel_euclidean'])})"
                          for o in per_output)
        return Diagnosis(PASS, NONE, message=f"Every model output passes: {names}.", thresholds=limits,
                         outputs=per_output, notes=notes)
    row, out = failing[0]
    what = (f"{len(failing)} of {len(outputs)} model output(s) fail; first {out['name']}: "
            + _output_text(row, out))
    return _cause(compared, findings, row, what, limits, per_output, notes)


def _cause(compared: list[Row], findings: list, out_row: Row, what: str, limits: dict, per_output: list,
           notes: list) -> Diagnosis:
    """Why the outputs fail: the underflow or overflow that starts it, or the first op that drifts."""
    by_type = {}
    for f in findings:
        by_type.setdefault(f.type, f)
    under = next((r for r in compared if r.underflow), None)
    if under is not None:
        u = under.underflow
        chain = u.get("chain") or [u["op"], under.name]
        return Diagnosis(FAIL, UNDERFLOW, u["op"], u["op_type"], u["tensor"],
                         f"{what}. It starts with an FP16 underflow: {u['op']} ({u['op_type']}) makes values that "
                         f"are 0 in FP16 ({u['elements']} of {u['size']}, e.g. {u['golden']:.3g} -> {u['target']:.3g}) "
                         f"and {under.name} ({under.op_type}) turns them into inf/NaN.",
                         f"keep {', '.join(chain)} in FP32 together (studio convert --keep-fp32 {','.join(chain)}), "
                         f"or raise the small constant to at least {FP16_SMALLEST_NORMAL:g}", limits, per_output, notes)
    overflow = by_type.get(rules.OVERFLOW)
    if overflow is not None:
        row = next((r for r in compared if r.name == overflow.name), None)
        return Diagnosis(FAIL, OVERFLOW, overflow.name, row.op_type if row else "", _tensor(row) if row else "",
                         f"{what}. It starts with an FP16 overflow: {overflow.message}",
                         f"keep {overflow.name} (and the ops feeding it that pass 65504) in FP32 (studio convert "
                         f"--keep-fp32 {overflow.name}; studio accuracy precision finds the fewest), or scale its "
                         "input down", limits, per_output, notes)
    zeros = [r for r in compared if is_zero_loss(r) and r.op_type not in ("Constant", "Input")]
    if zeros:
        zero, m = zeros[0], zeros[0].metrics
        # Every op from the first all-zero one on keeps values FP16 cannot hold: keeping only the
        # first in FP32 hands its tiny output to an FP16 op, which rounds it to 0 again.
        chain = list(dict.fromkeys(r.name for r in zeros))
        return Diagnosis(FAIL, UNDERFLOW, zero.name, zero.op_type, _tensor(zero),
                         f"{what}. It starts with an FP16 underflow: {zero.name} ({zero.op_type}) gives values up to "
                         f"{m.golden_absmax:.3g} in FP32, all 0 in FP16 (its smallest value is 6e-8): a total loss"
                         + (f"; {len(chain) - 1} op(s) after it are all zero too" if len(chain) > 1 else "") + ".",
                         f"keep {', '.join(chain)} in FP32 (studio convert --keep-fp32 {','.join(chain)}), or rescale "
                         "the weights so the values are at least 6.1e-5", limits, per_output, notes)
    if rules.new_nonfinite(out_row.metrics):
        start = next((r for r in compared if rules.new_nonfinite(r.metrics)), out_row)
        return Diagnosis(FAIL, NONFINITE_OUTPUT, start.name, start.op_type, _tensor(start),
                         f"{what}. The first op whose output holds inf/NaN where FP32 is finite is {start.name} "
                         f"({start.op_type}).",
                         f"keep {start.name} in FP32 (studio accuracy reduce cuts out the smallest repro)",
                         limits, per_output, notes)
    first = next((r for r in compared if r.violations), out_row)
    return Diagnosis(FAIL, PRECISION_LOSS, first.name, first.op_type, _tensor(first),
                     f"{what}. The first op that breaks a threshold is {first.name} ({first.op_type}): "
                     f"{output_status(first)}.",
                     "find the fewest ops to keep in FP32: studio accuracy precision MODEL -o DIR",
                     limits, per_output, notes)


def _output_text(row: Row, out: dict) -> str:
    m = row.metrics
    if out["status"] == "inf/NaN":
        return f"{out['nonfinite']} inf/NaN value(s) of {m.size} where FP32 is finite"
    if out["status"] == "all zero":
        return (f"all zero where FP32 holds values up to {m.golden_absmax:.3g} (cosine undefined, relative "
                "Euclidean distance 1: a total loss)")
    detail = "; ".join(rules.explain_violation(m, name) for name in row.violations if name != "nonfinite")
    return f"{out['status']} ({detail})"


def _tensor(row: Row) -> str:
    entry = row.target or row.golden
    return entry.tensor if entry is not None and entry.tensor else row.name


def _num(value) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.6g}"
