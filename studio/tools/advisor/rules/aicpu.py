"""Ops that left the accelerator: AI CPU tasks on Ascend, CPU-provider fallbacks in ONNX Runtime.

AI CPU: op_summary's Task Type ``AI_CPU``; reported, as msprof-analyze does, when such ops exist
and the longest of them takes at least 20 us; DOUBLE / INT64 inputs get the dtype advice.
Fallback: in an ONNX Runtime profile with an accelerator provider, the nodes that ran on
``CPUExecutionProvider`` (each costs a copy back and forth).
"""

from __future__ import annotations

from studio.tools.advisor.model import Finding, severity_for

MIN_TASK_US = 20.0


def check(ctx) -> list[Finding]:
    if ctx.ops is None or not ctx.ops.ops:
        return []
    findings = []
    step = ctx.step_ms or ctx.ops.device_ms
    aicpu = [op for op in ctx.ops.ops if op.task_type.upper() == "AI_CPU"]
    if aicpu and max(op.total_us / max(1, op.count) for op in aicpu) >= MIN_TASK_US:
        total = sum(op.per_step_us for op in aicpu) / 1000.0
        evidence = [f"{len(aicpu)} op(s) ran as AI_CPU tasks: {total:.3f} ms per step"
                    + (f" ({total / step:.1%} of the step)" if step else "") + f" (op_summary Task Type, {ctx.profile_label})",
                    "longest: " + ", ".join(f"{o.name} ({o.op_type}) {o.per_step_us:.1f} us"
                                            for o in sorted(aicpu, key=lambda o: -o.per_step_us)[:5])]
        wide = [o.name for o in aicpu if any(t in o.input_dtypes.upper() for t in ("DOUBLE", "INT64", "FLOAT64"))]
        advice = ("Avoid these ops or change their dtype so AI Core kernels exist (e.g. INT64 -> INT32, "
                  "DOUBLE -> FLOAT); fuse neighbouring AI CPU ops to cut AI CPU <-> AI Core switches.")
        if wide:
            evidence.append(f"{len(wide)} of them take DOUBLE/INT64 inputs: {', '.join(wide[:5])}")
        findings.append(Finding("ai-cpu-ops", f"{len(aicpu)} AI CPU op(s)", severity_for(total, step), "ai-cpu",
                                evidence, advice, total, total, [o.name for o in aicpu],
                                gain_method="the AI CPU ops' profiled time (an upper bound: their replacements "
                                            "take time too)"))
    providers = {op.task_type for op in ctx.ops.ops if op.task_type.endswith("ExecutionProvider")}
    if len(providers) > 1 and "CPUExecutionProvider" in providers:
        cpu = [op for op in ctx.ops.ops if op.task_type == "CPUExecutionProvider"]
        total = sum(op.per_step_us for op in cpu) / 1000.0
        others = ", ".join(sorted(providers - {"CPUExecutionProvider"}))
        findings.append(Finding(
            "cpu-fallback", f"{len(cpu)} op(s) fell back to the CPU execution provider",
            severity_for(total, step), "ai-cpu",
            [f"{len(cpu)} node(s) ran on CPUExecutionProvider next to {others}: {total:.3f} ms per step "
             f"({ctx.profile_label}, op_summary Task Type)",
             "op types: " + ", ".join(sorted({o.op_type for o in cpu}))],
            f"Replace these op types with ones {others} supports, or change their dtypes; each fallback also "
            "copies tensors between devices.", total, total, [o.name for o in cpu],
            gain_method="the fallback ops' profiled time (an upper bound: they take time on the accelerator too)"))
    return findings
