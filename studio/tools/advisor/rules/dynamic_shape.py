"""Dynamic shapes: symbolic input dimensions in the model, ops compiled as ``dynamic`` on the device.

Dynamic-shape ops are compiled at run time and miss static tiling (msprof-analyze's "Operator
Dynamic Shape Issues"); fixing the shapes (or ATC's ``--dynamic_batch_size`` gears) avoids that.
"""

from __future__ import annotations

from studio.tools.advisor.model import Finding, severity_for


def check(ctx) -> list[Finding]:
    findings = []
    if ctx.model is not None:
        graph = ctx.model.main
        dynamic = []
        for name in graph.inputs:
            shape = graph.value(name).shape
            if name not in graph.initializers and shape is not None and any(not isinstance(d, int) or d < 0 for d in shape):
                dynamic.append(f"{name} {graph.value(name).shape_text()}")
        if dynamic:
            findings.append(Finding(
                "dynamic-shapes-model", f"{len(dynamic)} model input(s) with dynamic dimensions", "medium", "shapes",
                [f"inputs with symbolic or unknown dims in {ctx.model_path.name if ctx.model_path else 'the model'}"
                 f" (graph): {', '.join(dynamic)}",
                 "severity medium: the cost shows at compile and first run, not in a step time"],
                "Fix the input shapes for deployment (studio convert --input-shape, ATC --input_shape) or give "
                "ATC a few static gears (--dynamic_batch_size / --dynamic_image_size).", None, None,
                [d.split(" ")[0] for d in dynamic]))
    if ctx.ops is not None and ctx.ops.ops:
        ops = [op for op in ctx.ops.ops if op.dynamic]
        if ops:
            total = sum(op.per_step_us for op in ops) / 1000.0
            step = ctx.step_ms or ctx.ops.device_ms
            findings.append(Finding(
                "dynamic-shapes-ops", f"{len(ops)} of {len(ctx.ops.ops)} ops ran with dynamic shapes",
                severity_for(total, step) if len(ops) < len(ctx.ops.ops) else "medium", "shapes",
                [f"op_summary OP State = dynamic for {len(ops)} op(s), {total:.3f} ms per step "
                 f"({ctx.profile_label})",
                 "examples: " + ", ".join(f"{o.name} ({o.op_type})" for o in ops[:5])],
                "Compile with static shapes: torch_npu.npu.set_compile_mode(jit_compile=False) for PyTorch, "
                "fixed --input_shape for ATC.", None, total, [o.name for o in ops[:200]]))
    return findings
