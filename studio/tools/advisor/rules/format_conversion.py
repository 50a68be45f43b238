"""Format conversions: TransData (Ascend 5HD/NZ <-> ND), Transpose, ONNX Runtime's NCHWc reorders.

From the profile: how many run and their share of the step (MindStudio's wording: "Total time of
TransData task is xx us, accounted for xx % of the total tasks"). From the model alone: the
Transpose count. Fires when any conversion takes at least 1 % of the step, or, without a
profile, when the model has Transposes between compute ops.

Their time is only an upper bound of what removing them saves: ONNX Runtime inserts its NCHWc
reorders itself, for blocked convolutions that may save more than the reorders cost. So the
finding names the setting that removes them as its lever, and the engine measures it (see
:mod:`studio.tools.advisor.gains`) before the finding may rate ``high``.
"""

from __future__ import annotations

from studio.tools.advisor.model import Finding, severity_for

CONVERSION_TYPES = ("TransData", "TransDataRNN", "Transpose", "TransposeD", "ReorderInput", "ReorderOutput")
MIN_SHARE = 0.01
NO_LAYOUT_LEVER = "ort:graph_optimization_level=ORT_ENABLE_EXTENDED"  # ORT without its NCHWc layout pass
GAIN_METHOD = "the conversions' own profiled time (an upper bound: the ops around them may run slower without them)"


def check(ctx) -> list[Finding]:
    if ctx.ops is not None and ctx.ops.ops:
        rows = [op for op in ctx.ops.ops if op.op_type in CONVERSION_TYPES or op.name.startswith("Reorder")]
        total_ms = sum(op.per_step_us for op in rows) / 1000.0
        step = ctx.step_ms or ctx.ops.device_ms
        if not rows or not step or total_ms / step < MIN_SHARE:
            return []
        by_type: dict[str, tuple[int, float]] = {}
        for op in rows:
            kind = op.op_type or "Reorder"
            n, t = by_type.get(kind, (0, 0.0))
            by_type[kind] = (n + op.count // max(1, ctx.ops.steps) or 1, t + op.per_step_us)
        evidence = [f"{kind}: {n} per step, {t / 1000:.3f} ms ({t / 1000 / step:.1%} of the {step:.3f} ms step) "
                    f"in {ctx.profile_label}" for kind, (n, t) in sorted(by_type.items(), key=lambda kv: -kv[1][1])]
        formats = sorted({f"{op.input_formats} -> {op.output_formats}" for op in rows if op.input_formats})[:4]
        if formats:
            evidence.append("formats: " + "; ".join(formats))
        slowest = sorted(rows, key=lambda o: -o.per_step_us)[:5]
        evidence.append("slowest: " + ", ".join(f"{o.name} {o.per_step_us:.1f} us" for o in slowest))
        reorders = [op for op in rows if _is_reorder(op)]
        own = [op for op in rows if not _is_reorder(op)]
        on_ort = bool(reorders) or (ctx.trace is not None and "onnxruntime" in ctx.trace.facts)
        advice = []
        if reorders:
            advice.append(f"{len(reorders)} of them are ONNX Runtime's NCHWc reorders around its blocked-layout "
                          "convolutions: fewer layout switches happen when consecutive ops all run blocked (Conv, "
                          "pooling, element-wise), i.e. without Transpose/Reshape/Softplus-like ops between Convs; or "
                          "compare with graph_optimization_level=ORT_ENABLE_EXTENDED.")
        if own and on_ort:
            advice.append(f"{len(own)} are the model's own Transposes: remove those between compute layers where "
                          "the layout can be kept (re-export with the consumer's layout).")
        elif own:
            advice.append("Keep tensors in the device's native format between ops: feed NC1HWC0/NZ-friendly shapes "
                          "(channels a multiple of 16), avoid Transpose/Reshape between Conv and MatMul layers, and "
                          "let ATC insert the TransData once at the model's input and output (or use AIPP).")
        return [Finding("format-conversions", f"Format conversions take {total_ms / step:.1%} of the step",
                        severity_for(total_ms, step), "format", evidence, " ".join(advice),
                        total_ms, total_ms, [o.name for o in rows], gain_method=GAIN_METHOD,
                        lever=NO_LAYOUT_LEVER if reorders else None)]
    if ctx.model is None:
        return []
    graph = ctx.model.main
    nodes = [n.name for n in graph.nodes if n.type in CONVERSION_TYPES]
    if not nodes:
        return []
    return [Finding("format-conversions", f"{len(nodes)} layout conversion op(s) in the model", "low", "format",
                    [f"{len(nodes)} Transpose/TransData node(s) in {ctx.model_path.name if ctx.model_path else 'the model'}"
                     " (graph); no profile given, so their time is unknown"],
                    "Profile the model to see what they cost; remove Transposes between compute layers where the "
                    "layout can be kept.", None, None, nodes)]


def _is_reorder(op) -> bool:
    """ONNX Runtime's NCHWc layout reorders (it inserts them itself; the model has no such node)."""
    return op.name.startswith("Reorder") or op.op_type.startswith("Reorder")
