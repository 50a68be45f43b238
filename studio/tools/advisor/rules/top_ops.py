"""Where the time goes: one hot op, or a long tail of tiny ones.

* Hot spot: a single op with at least 25 % of the device time per step — tuning it (AOE, a
  different algorithm, lower precision) pays most.
* Long tail: at least 30 ops each under 1 % of the device time and 20 us a run (median), together
  at least 20 % of it — launch and scheduling overhead; fusing or batching helps more than tuning.

Op times are the op table's: self time, median per execution times executions per step, on the
step's scale (:mod:`..optable`). Outlier executions (stalls) are not an op's cost: they are named
apart in the evidence, never what makes an op the top one.
"""

from __future__ import annotations

from studio.tools.advisor.model import Finding, severity_for
from studio.tools.advisor.optable import OUTLIER_RATIO

HOT_SHARE = 0.25
TAIL_OPS, TAIL_OP_SHARE, TAIL_AVG_US, TAIL_SHARE = 30, 0.01, 20.0, 0.20


def check(ctx) -> list[Finding]:
    if ctx.ops is None or not ctx.ops.ops or not ctx.ops.device_ms:
        return []
    device_us = ctx.ops.device_ms * 1000.0
    findings = []
    top = ctx.ops.ops[0]
    share = top.per_step_us / device_us
    if share >= HOT_SHARE:
        top5 = ", ".join(f"{o.name} ({o.op_type}) {o.per_step_us / device_us:.1%}" for o in ctx.ops.ops[:5])
        per_step = top.count / max(1, ctx.ops.steps)
        evidence = [f"{top.per_step_us / 1000:.3f} ms of {ctx.ops.device_ms:.3f} ms op time per step "
                    f"({ctx.profile_label}, {ctx.ops.source}): median self time {top.median_us:.1f} us x "
                    f"{per_step:g} run(s) per step" + (f", scaled by {ctx.ops.scale:.3f} to the step"
                                                         if ctx.ops.scale != 1.0 else ""),
                    f"top 5: {top5}"]
        stalls = outlier_text(ctx.ops.outliers)
        if stalls:
            evidence.append(stalls)
        findings.append(Finding(
            "top-op", f"{top.name} ({top.op_type}) takes {share:.0%} of the device time",
            severity_for(top.per_step_us / 1000.0, ctx.step_ms), "top-ops", evidence,
            "Tune this op first: check its roofline point (compute-, memory- or latency-bound), try AOE operator "
            "tuning on Ascend, another algorithm or a lower precision.", None, top.per_step_us / 1000.0,
            [top.name]))
    tail = [o for o in ctx.ops.ops if o.per_step_us / device_us < TAIL_OP_SHARE and o.median_us < TAIL_AVG_US]
    tail_us = sum(o.per_step_us for o in tail)
    if len(tail) >= TAIL_OPS and tail_us / device_us >= TAIL_SHARE:
        findings.append(Finding(
            "long-tail", f"{len(tail)} tiny ops take {tail_us / device_us:.0%} of the device time",
            severity_for(tail_us / 1000.0, ctx.step_ms), "top-ops",
            [f"{len(tail)} ops each below {TAIL_OP_SHARE:.0%} of the op time and {TAIL_AVG_US:g} us a run: "
             f"{tail_us / 1000:.3f} ms per step ({ctx.profile_label})"],
            "The time is launch overhead, not arithmetic: fuse element-wise chains, remove Reshape/Cast/Transpose "
            "between layers, or raise the batch size.", None, tail_us / 1000.0, [o.name for o in tail[:200]]))
    return findings


def outlier_text(ops: list, limit: int = 5) -> str:
    """One evidence line naming the outlier executions kept out of the op times ("" for none)."""
    if not ops:
        return ""
    shown = "; ".join(f"{o.name} ({o.op_type}) {o.outliers}x, {o.outlier_us / 1000:.3f} ms in all "
                      f"(median run {o.median_us:.1f} us)" for o in ops[:limit])
    more = f"; and {len(ops) - limit} more op(s)" if len(ops) > limit else ""
    return (f"left out as outliers (a run at least {OUTLIER_RATIO:g}x its op's median): {shown}{more} — stalls "
            "of the machine or the runtime, not the ops' cost")
