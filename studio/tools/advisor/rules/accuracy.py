"""Accuracy findings from an accuracy result: FP16 overflow or underflow, a reference holding inf/NaN,
first problem node, inputs that differ.

The verdicts are the accuracy engine's own (msaccucmp's expert rules, in their order); this rule
turns them into findings with the node they concern. Their severity is not a share of time:
overflow, a problem node and inconsistent inputs are ``high`` (the model's answers are wrong), a
single-point deviation is ``low`` (the outputs still pass).
"""

from __future__ import annotations

from studio.tools.advisor.model import Finding

_MAP = {
    "fp16_overflow": ("accuracy-fp16-overflow", "FP16 overflow", "high",
                      " Keep it in FP32: `studio convert --output-type FP16 --keep-fp32 NODE`, or ATC "
                      "--keep_dtype / --precision_mode allow_mix_precision."),
    # The op named makes a value FP16 flushes to 0; the finding's message names its reader too.
    "fp16_underflow": ("accuracy-fp16-underflow", "FP16 underflow", "high", ""),
    "golden_nonfinite": ("accuracy-golden-nonfinite", "The reference run holds inf/NaN", "high", ""),
    "problem_node": ("accuracy-problem-node", "First problem node", "high", ""),
    "input_inconsistent": ("accuracy-input", "Network inputs differ", "high", ""),
    "single_point_error": ("accuracy-single-point", "Single-point deviation", "low", ""),
    # Not a time share either: rows failing another metric, and ops the comparison could not see,
    # must reach the report so that it never reads as "accurate" over tensors nobody checked.
    "threshold_violations": ("accuracy-thresholds", "Other thresholds exceeded", "medium", ""),
    "not_covered": ("accuracy-not-covered", "Not checked: ops inside subgraph bodies", "medium", ""),
}


def check(ctx) -> list[Finding]:
    acc = ctx.accuracy
    if acc is None:
        return []
    findings = []
    for f in acc.findings:
        entry = _MAP.get(f.type)
        if entry is None:
            continue
        rule_id, label, severity, extra = entry
        evidence = [f"{f.message} (accuracy result {acc.path}"
                    + (f", target {acc.target_mode}" if acc.target_mode else "") + ")"]
        if acc.summary:
            evidence.append(acc.summary)
        findings.append(Finding(rule_id, f"{label}: {f.name}" if f.name else label, severity, "accuracy",
                                evidence, f.advice + extra, None, None, [f.name] if f.name else []))
    return findings
