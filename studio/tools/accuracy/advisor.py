"""The accuracy advisor: msaccucmp's expert rules over the comparison rows, in their order.

0. Golden not finite — the reference itself holds inf/NaN: those elements judge nothing.
1. FP16 overflow — the first matched op whose target holds inf/NaN where the golden value is
   finite, or |x| > 65504 when the target ran in FP16 (FP16 simulation, NPU, or float16 data).
   When that op blew up on an input that FP16 flushed to 0 (see :mod:`.underflow`), it is an
   FP16 *underflow* instead, and the finding names the op whose output underflows.
2. Input inconsistency — a network input differs (cosine below the threshold).
3. Whole-network consistency — the first op whose cosine is below the threshold (NaN rows
   skipped): a *problem node* when the network outputs are below the threshold too (the error
   persists), a *single-point error* when they recover; otherwise *consistent*.

Every finding names the op and the numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from studio.tools.accuracy.row import Row

FP16_MAX = 65504.0  # largest finite float16 (kept here so the panel imports no numpy)

OVERFLOW, INPUT, PROBLEM, SINGLE_POINT, CONSISTENT = (
    "fp16_overflow", "input_inconsistent", "problem_node", "single_point_error", "consistent")
UNDERFLOW, GOLDEN_NONFINITE = "fp16_underflow", "golden_nonfinite"
MASK, NONFINITE_OUTPUT = "attention_mask", "nonfinite_output"
# Beyond msaccucmp: rows that fail other thresholds (or cannot be judged by cosine) while no
# cosine falls below its threshold, and parts of the model the dumps did not cover.
THRESHOLDS, NOT_COVERED = "threshold_violations", "not_covered"

ADVICE = {
    OVERFLOW: "Float16 data overflow occurs: keep this op (or the ones feeding it) in FP32, or scale "
              "its inputs down, then compare again.",
    UNDERFLOW: "A small value (an epsilon) becomes 0 in FP16 and the op reading it divides by it or takes its "
               "log: keeping only that reader in FP32 still reads the 0. Keep the op that makes the value and "
               "its reader in FP32 together, or use a constant of at least 6.1e-5 (FP16's smallest normal).",
    MASK: "Nothing to do: a mask's large negative values only decide which scores Softmax ignores, and "
          "-65504 (or -inf) ignores them as well as -3.4e38. Converters clamp such constants to the FP16 range.",
    NONFINITE_OUTPUT: "A model output holding inf/NaN is never harmless: fix the op named here (see the overflow or "
                      "underflow finding) before judging anything else.",
    GOLDEN_NONFINITE: "The reference run itself gives inf/NaN here, so these elements judge nothing: check the "
                      "input data (range, dtype, pre-processing) or the model; the metrics of these tensors "
                      "cover only their finite elements.",
    INPUT: "The network inputs differ: use the same input data on both sides or check the "
           "preprocessing (AIPP, normalisation, layout).",
    PROBLEM: "The error starts here and reaches the network outputs: check this op's precision "
             "(FP16 / quantisation), keep it in FP32 or calibrate, and compare again.",
    SINGLE_POINT: "The error at this op recovers before the outputs, which still pass: usually "
                  "harmless (internal optimisation); check it only if the application's accuracy is low.",
    CONSISTENT: "Every compared tensor meets the thresholds. If the application's accuracy is still "
                "low, check the post-processing of the model's outputs.",
    THRESHOLDS: "These tensors fail a threshold other than cosine similarity (relative Euclidean distance, "
                "KL divergence, RMSE, mean relative error) or could not be compared by cosine: open them in "
                "the drill-down to see where the values differ.",
    NOT_COVERED: "Ops inside If/Loop/Scan bodies ran but their tensors are not dumped: only the outputs of "
                 "the If/Loop/Scan nodes were compared. Check those outputs, or export the model without "
                 "control flow to compare op by op.",
}


@dataclass
class Finding:
    """One verdict: ``type`` (see module constants), the op ``name`` ('' when none), its row."""

    type: str
    name: str
    row: int | None
    message: str
    advice: str


def new_nonfinite(m) -> int:
    """inf/NaN the target holds where the golden value is finite (tables without that count:
    the target's beyond the golden's)."""
    if m.target_only_nonfinite:
        return m.target_only_nonfinite
    if m.finite_pairs is None:  # read from a table that does not carry it
        return max(0, m.target_nonfinite - m.golden_nonfinite)
    return 0


def overflows(row: Row, fp16_target: bool, dtype_as_run: bool = False) -> bool:
    """True when the target of ``row`` went non-finite where the golden did not, or (FP16) beyond 65504.

    ``dtype_as_run``: the target dump stores each tensor in the dtype its op computed in (see
    ``DTYPE_AS_RUN_MODES``), so a float32 or float64 tensor comes from an op kept in FP32, where
    values beyond 65504 are what the golden holds, not an overflow.
    """
    m = row.metrics
    if m is None:
        return False
    if new_nonfinite(m) > 0:
        return True
    dtype = (row.target.dtype if row.target is not None else "") or ""
    # Only float tensors run in FP16: an int64 Slice bound of 2**63-1 is not an overflow.
    is_float = dtype.startswith("float") or dtype in ("", "half", "bfloat16", "NaN")
    if dtype_as_run and dtype in ("float32", "float64", "double"):
        return False
    half = fp16_target or dtype == "float16"
    return half and is_float and m.target_absmax > FP16_MAX and not math.isinf(m.golden_absmax)



def advise(rows: list[Row], cosine_threshold: float = 0.99, fp16_target: bool = False,
           uncovered: dict | None = None, thresholds=None, dtype_as_run: bool = False) -> list[Finding]:
    """Findings for ``rows`` (in display order), strongest rule first.

    ``dtype_as_run``: the target's dtypes are those its ops computed in (see :func:`overflows`).

    ``uncovered``: what the dumps did not show (``{"subgraph_ops": n, ...}``); a model is never
    called consistent without saying so. ``thresholds`` (a Thresholds): the limits the messages quote.
    """
    findings: list[Finding] = []
    masked = [r for r in rows if r.mask and r.metrics is not None and not r.metrics.empty]
    # Attention-mask tensors saturate in FP16 by design: said once, judged nowhere else.
    matched = [r for r in rows if r.metrics is not None and not r.metrics.empty and not r.mask]
    broken_golden = [r for r in matched if r.metrics.golden_nonfinite]
    if broken_golden:
        findings.append(_golden_finding(broken_golden))
    overflowing = [r for r in matched if overflows(r, fp16_target, dtype_as_run)]
    if overflowing:
        findings += _overflow_findings(overflowing)
    broken_outputs = [r for r in matched if r.is_output and new_nonfinite(r.metrics) > 0]
    if broken_outputs:
        findings.append(_nonfinite_output_finding(broken_outputs, overflowing))
    bad_inputs = [r for r in matched if r.is_input and not (r.metrics.cosine >= cosine_threshold)
                  and not math.isnan(r.metrics.cosine)]
    if bad_inputs:
        r = bad_inputs[0]
        findings.append(Finding(INPUT, r.name, r.index,
                                f"Network input {r.name} differs: cosine {r.metrics.cosine:.6f} "
                                f"(< {cosine_threshold}), max abs error {r.metrics.max_abs_err:.6g}.",
                                ADVICE[INPUT]))
    # Tensors holding inf/NaN are judged by the findings above; their cosine covers only part of them.
    finite = [r for r in matched if not (r.metrics.target_nonfinite or r.metrics.golden_nonfinite)]
    judged = [r for r in finite if not r.is_input and not math.isnan(r.metrics.cosine)]
    below = [r for r in judged if r.metrics.cosine < cosine_threshold]
    if below:
        findings.append(_cosine_finding(below, judged, cosine_threshold, broken_outputs))
    failing = [r for r in finite if r.violations and r not in below and r not in bad_inputs]
    if failing and not below:
        first = failing[0]
        unjudged = [r for r in failing if math.isnan(r.metrics.cosine)]
        detail = "; ".join(explain_violation(first.metrics, name, thresholds) for name in first.violations
                           if name != "cosine")
        why = (detail or first.metrics.reason or "cosine cannot be computed").rstrip(".")
        findings.append(Finding(THRESHOLDS, first.name, first.index,
                                f"{len(failing)} compared tensor(s) fail a threshold although no cosine is below "
                                f"{cosine_threshold}: first {first.name} (row {first.index}, {first.op_type}, "
                                f"cosine {first.metrics.cosine:.6f}): {why}."
                                + (f" {len(unjudged)} of them cannot be judged by cosine." if unjudged else ""),
                                ADVICE[THRESHOLDS]))
    ops = int((uncovered or {}).get("subgraph_ops", 0))
    if ops:
        nodes = (uncovered or {}).get("subgraph_nodes", [])
        inside = " (FP16 simulation was applied inside them)" if (uncovered or {}).get("fp16_simulated_inside") else ""
        findings.append(Finding(NOT_COVERED, nodes[0] if nodes else "", None,
                                f"Not covered: {ops} op(s) inside the bodies of {len(nodes) or 'some'} "
                                f"If/Loop/Scan node(s)" + (f" ({', '.join(nodes[:5])}{' ...' if len(nodes) > 5 else ''})"
                                                           if nodes else "")
                                + f" ran but were not dumped{inside}; only the nodes' outputs were compared.",
                                ADVICE[NOT_COVERED]))
    if masked:
        findings.append(_mask_finding(masked))
    if not [f for f in findings if f.type != MASK] and judged:
        lowest = min(judged, key=lambda r: r.metrics.cosine)
        # Say what the count covers, so it adds up with the summary line (which counts inputs too).
        inputs = sum(1 for r in matched if r.is_input)
        besides = f" (and the {inputs} model input(s) match)" if inputs else ""
        findings.append(Finding(CONSISTENT, "", None,
                                f"All {len(judged)} op outputs have cosine >= {cosine_threshold} "
                                f"(lowest {lowest.metrics.cosine:.6f} at {lowest.name}) and meet every "
                                f"threshold{besides}.",
                                ADVICE[CONSISTENT]))
    elif not [f for f in findings if f.type != MASK]:
        findings.append(Finding(THRESHOLDS, "", None, "Nothing was compared: no tensor holds data on both sides.",
                                "Check that both dumps come from the same model (see the one-side-only rows)."))
    return findings


def explain_violation(m, name: str, thresholds=None) -> str:
    """Which limit a metric breaks, with its value and limit, and why when the cause is known.

    A mean relative error averages |t/g - 1|: a golden element near 0 weighs as much as a large
    one, so a handful of them can fail a tensor whose cosine is 0.99999 (``rel_err_near_zero``
    says how much of it they make).
    """
    if name == "nonfinite":
        return f"inf/NaN: {m.target_nonfinite} in the target, {m.golden_nonfinite} in the golden"
    limit = getattr(thresholds, name, None) if thresholds is not None else None
    text = f"{name} {getattr(m, name, math.nan):.6g}" + (f" (limit {limit:g})" if limit is not None else "")
    near = m.rel_err_near_zero
    if name == "mean_rel_err" and near:
        text += (f", {near['share']:.0%} of it from {near['elements']} element(s) whose golden value is near "
                 f"zero (|g| < {near['below']:.2g}, 1e-3 of its |max|), where a tiny absolute error is a large "
                 f"relative one; {near['without']:.3g} over the other elements")
    return text


def _golden_finding(broken: list[Row]) -> Finding:
    first = broken[0]
    m = first.metrics
    return Finding(GOLDEN_NONFINITE, first.name, first.index,
                   f"The reference holds inf/NaN, first at op {first.name} (row {first.index}, {first.op_type}): "
                   f"{m.golden_nonfinite} of {m.size} golden element(s) are not finite"
                   + (f" (and {m.target_nonfinite} in the target)" if m.target_nonfinite else "")
                   + f". {len(broken)} tensor(s) in all; their metrics cover only the elements finite on both sides.",
                   ADVICE[GOLDEN_NONFINITE])


def _overflow_findings(overflowing: list[Row]) -> list[Finding]:
    """The FP16 overflow finding, or the underflow one when the first op that went wrong blew up
    on a value FP16 flushed to 0 (and then an overflow finding for any op beyond 65504 before it)."""
    first = overflowing[0]
    m = first.metrics
    out_rows = [r for r in overflowing if r.is_output]
    reach = (f" It reaches model output {_tensor(out_rows[0])} (op {out_rows[0].name})."
             if out_rows and out_rows[0] is not first else "" if out_rows else " No model output overflows.")
    under = next((r for r in overflowing if r.underflow), None)
    findings = []
    if under is not None:
        u = under.underflow
        chain = u.get("chain") or [u["op"], under.name]
        through = f" through {', '.join(chain[1:-1])}" if len(chain) > 2 else ""
        bad = new_nonfinite(under.metrics)
        findings.append(Finding(
            UNDERFLOW, u["op"], u["row"],
            f"FP16 underflow at op {u['op']} ({u['op_type']}, row {u['row']}): its output {u['tensor']} is finite "
            f"and non-zero in FP32 but 0 or subnormal in FP16 at {u['elements']} of {u['size']} element(s) (e.g. "
            f"{u['golden']:.3g} -> {u['target']:.3g}); op {under.name} ({under.op_type}, row {under.index}) reads "
            f"it{through} and gives " + (f"{bad} inf/NaN value(s)" if bad else "values beyond 65504")
            + f". This is not an overflow: keeping {under.name} alone in FP32 still reads the 0. Keep "
            f"{', '.join(chain[:-1])} and {under.name} in FP32 (studio convert --keep-fp32 {','.join(chain)}). "
            f"{len(overflowing)} tensor(s) hold inf/NaN or exceed 65504 in all.{reach}", ADVICE[UNDERFLOW]))
        before = [r for r in overflowing if r.index < under.index]
        if not before:
            return findings
        first, m = before[0], before[0].metrics
    what = (f"{new_nonfinite(m)} inf/NaN value(s)" if new_nonfinite(m)
            else f"|max| = {m.target_absmax:.6g} (> {FP16_MAX:g})")
    golden = (f"golden |max| = {m.golden_absmax:.6g}" if not math.isnan(m.golden_absmax)
              else "golden holds no finite value")
    if m.golden_nonfinite:
        golden += f" ({m.golden_nonfinite} inf/NaN value(s) in golden too)"
    where = f" — its output {_tensor(first)} is a model output" if first.is_output else ""
    findings.insert(0, Finding(OVERFLOW, first.name, first.index,
                               f"FP16 overflow first at op {first.name} (row {first.index}, {first.op_type}{where}): "
                               f"target holds {what}; {golden}. "
                               f"{len(overflowing)} tensor(s) overflow in all.{reach}", ADVICE[OVERFLOW]))
    return findings


def _tensor(row: Row) -> str:
    """The tensor a row shows (its ONNX value name when the dump knows it)."""
    entry = row.target or row.golden
    return entry.tensor if entry is not None and entry.tensor else row.name


def _mask_finding(masked: list[Row]) -> Finding:
    first = masked[0]
    worst = max((r.metrics.target_nonfinite for r in masked), default=0)
    return Finding(MASK, first.name, first.index,
                   f"{len(masked)} tensor(s) on attention-mask paths (first {first.name}, row {first.index}, "
                   f"{first.op_type}) hold the mask's large negative values, which saturate in FP16 (golden |max| "
                   f"{first.metrics.golden_absmax:.3g}" + (f"; up to {worst} -inf per tensor" if worst else "")
                   + "): harmless, since every path from them ends in a Softmax or a max; not judged.",
                   ADVICE[MASK])


def _nonfinite_output_finding(broken: list[Row], overflowing: list[Row]) -> Finding:
    """A model output that holds inf/NaN where FP32 is finite, and where it starts."""
    out = broken[0]
    m = out.metrics
    start = overflowing[0] if overflowing else out
    origin = (f"; it starts at op {start.name} (row {start.index}, {start.op_type})" if start is not out else "")
    return Finding(NONFINITE_OUTPUT, out.name, out.index,
                   f"Model output {_tensor(out)} (op {out.name}) holds {new_nonfinite(m)} inf/NaN value(s) of "
                   f"{m.size} where FP32 is finite{origin}. {len(broken)} model output(s) hold inf/NaN.",
                   ADVICE[NONFINITE_OUTPUT])


def _cosine_finding(below: list[Row], judged: list[Row], cosine_threshold: float,
                    broken_outputs: list[Row] = ()) -> Finding:
    """Problem node or single-point error: where the first op below the threshold leads (never a
    recovery while a model output holds inf/NaN)."""
    first = below[0]
    outputs = [r for r in judged if r.is_output]
    if broken_outputs:
        worst = broken_outputs[0]
        return Finding(PROBLEM, first.name, first.index,
                       f"Problem node: first op below the cosine threshold is {first.name} (row {first.index}, "
                       f"{first.op_type}): cosine {first.metrics.cosine:.6f} (< {cosine_threshold}), max abs error "
                       f"{first.metrics.max_abs_err:.6g}; model output {worst.name} holds "
                       f"{new_nonfinite(worst.metrics)} inf/NaN value(s). {len(below)} tensor(s) below the threshold "
                       "in all.", ADVICE[PROBLEM])
    if outputs:
        worst_out = min(outputs, key=lambda r: r.metrics.cosine)
        persists = worst_out.metrics.cosine < cosine_threshold
        tail = (f"the error persists to model output {worst_out.name} (cosine {worst_out.metrics.cosine:.6f})"
                if persists else
                f"it recovers: model output {worst_out.name} has cosine {worst_out.metrics.cosine:.6f}")
    else:
        # No model output could be judged (none dumped, or its cosine is NaN): the last judged
        # tensor stands in, and is called what it is.
        last = judged[-1]
        persists = last.metrics.cosine < cosine_threshold
        tail = (f"{'the error persists to' if persists else 'it recovers by'} the last compared tensor {last.name} "
                f"(cosine {last.metrics.cosine:.6f}; no model output could be judged by cosine)")
    kind = PROBLEM if persists else SINGLE_POINT
    label = "Problem node" if persists else "Single-point error"
    return Finding(kind, first.name, first.index,
                   f"{label}: first op below the cosine threshold is {first.name} "
                   f"(row {first.index}, {first.op_type}): cosine {first.metrics.cosine:.6f} "
                   f"(< {cosine_threshold}), max abs error {first.metrics.max_abs_err:.6g}; {tail}. "
                   f"{len(below)} tensor(s) below the threshold in all.", ADVICE[kind])
