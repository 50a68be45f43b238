"""The accuracy advisor: msaccucmp's expert rules over the comparison rows, in their order.

1. FP16 overflow — the first matched op whose target holds inf/NaN, or |x| > 65504 when the
   target ran in FP16 (FP16 simulation, NPU, or float16 data).
2. Input inconsistency — a network input differs (cosine below the threshold).
3. Whole-network consistency — the first op whose cosine is below the threshold (NaN rows
   skipped): a *problem node* when the network outputs are below the threshold too (the error
   persists), a *single-point error* when they recover; otherwise *consistent*.

Every finding names the op and the numbers.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from studio.tools.accuracy.compare import Row

FP16_MAX = 65504.0  # largest finite float16 (kept here so the panel imports no numpy)

OVERFLOW, INPUT, PROBLEM, SINGLE_POINT, CONSISTENT = (
    "fp16_overflow", "input_inconsistent", "problem_node", "single_point_error", "consistent")

ADVICE = {
    OVERFLOW: "Float16 data overflow occurs: keep this op (or the ones feeding it) in FP32, or scale "
              "its inputs down, then compare again.",
    INPUT: "The network inputs differ: use the same input data on both sides or check the "
           "preprocessing (AIPP, normalisation, layout).",
    PROBLEM: "The error starts here and reaches the network outputs: check this op's precision "
             "(FP16 / quantisation), keep it in FP32 or calibrate, and compare again.",
    SINGLE_POINT: "The error at this op recovers before the outputs, which still pass: usually "
                  "harmless (internal optimisation); check it only if the application's accuracy is low.",
    CONSISTENT: "Every compared tensor meets the thresholds. If the application's accuracy is still "
                "low, check the post-processing of the model's outputs.",
}


@dataclass
class Finding:
    """One verdict: ``type`` (see module constants), the op ``name`` ('' when none), its row."""

    type: str
    name: str
    row: int | None
    message: str
    advice: str

    def as_dict(self) -> dict:
        return asdict(self)


def _overflows(row: Row, fp16_target: bool) -> bool:
    m = row.metrics
    if m is None:
        return False
    if m.target_nonfinite > 0 or math.isinf(m.target_absmax):
        return True
    half = fp16_target or (row.target is not None and row.target.dtype == "float16")
    return half and m.target_absmax > FP16_MAX


def advise(rows: list[Row], cosine_threshold: float = 0.99, fp16_target: bool = False) -> list[Finding]:
    """Findings for ``rows`` (in display order), strongest rule first."""
    findings: list[Finding] = []
    matched = [r for r in rows if r.metrics is not None]
    overflowing = [r for r in matched if _overflows(r, fp16_target)]
    if overflowing:
        first = overflowing[0]
        m = first.metrics
        what = (f"{m.target_nonfinite} inf/NaN value(s)" if m.target_nonfinite
                else f"|max| = {m.target_absmax:.6g} (> {FP16_MAX:g})")
        findings.append(Finding(OVERFLOW, first.name, first.index,
                                f"FP16 overflow first at op {first.name} (row {first.index}, {first.op_type}): "
                                f"target holds {what}; golden |max| = {m.golden_absmax:.6g}. "
                                f"{len(overflowing)} tensor(s) overflow in all.", ADVICE[OVERFLOW]))
    bad_inputs = [r for r in matched if r.is_input and not (r.metrics.cosine >= cosine_threshold)
                  and not math.isnan(r.metrics.cosine)]
    if bad_inputs:
        r = bad_inputs[0]
        findings.append(Finding(INPUT, r.name, r.index,
                                f"Network input {r.name} differs: cosine {r.metrics.cosine:.6f} "
                                f"(< {cosine_threshold}), max abs error {r.metrics.max_abs_err:.6g}.",
                                ADVICE[INPUT]))
    judged = [r for r in matched if not r.is_input and not math.isnan(r.metrics.cosine)]
    below = [r for r in judged if r.metrics.cosine < cosine_threshold]
    if not below:
        if not findings:
            findings.append(Finding(CONSISTENT, "", None,
                                    f"All {len(judged)} compared tensors have cosine >= {cosine_threshold}"
                                    + (f" (lowest {min(r.metrics.cosine for r in judged):.6f} at "
                                       f"{min(judged, key=lambda r: r.metrics.cosine).name})." if judged else "."),
                                    ADVICE[CONSISTENT]))
        return findings
    first = below[0]
    outputs = [r for r in judged if r.is_output] or judged[-1:]
    worst_out = min(outputs, key=lambda r: r.metrics.cosine)
    persists = worst_out.metrics.cosine < cosine_threshold
    kind = PROBLEM if persists else SINGLE_POINT
    tail = (f"the error persists to output {worst_out.name} (cosine {worst_out.metrics.cosine:.6f})"
            if persists else
            f"it recovers: output {worst_out.name} has cosine {worst_out.metrics.cosine:.6f}")
    label = "Problem node" if persists else "Single-point error"
    findings.append(Finding(kind, first.name, first.index,
                            f"{label}: first op below the cosine threshold is {first.name} "
                            f"(row {first.index}, {first.op_type}): cosine {first.metrics.cosine:.6f} "
                            f"(< {cosine_threshold}), max abs error {first.metrics.max_abs_err:.6g}; {tail}. "
                            f"{len(below)} tensor(s) below the threshold in all.", ADVICE[kind]))
    return findings
