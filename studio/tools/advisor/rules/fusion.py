"""Fusions the converter applies exactly: Conv+BN, Conv+Add, Conv+Mul, MatMul+Add.

The patterns are the converter's own: the engine runs its passes on the model in memory
(:func:`studio.tools.convert.rewrite.plan_passes`, the code ``studio convert`` and ``--apply``
run) and this rule reports what they folded, pass by pass — so a finding promises exactly what the
fix then does, including folds one fusion exposes for another (a Conv+Mul folded leaves a
Conv+Add). Its gain estimate is the profiled time of the ops the fusion removes, so a runtime that
fuses them itself already (ONNX Runtime at session start, ATC at build time) shows a gain near
zero and says so.
"""

from __future__ import annotations

from studio.tools.advisor.model import Finding, severity_for
from studio.tools.advisor.rules._graph import consumers, only_reader

KINDS = (
    ("fusion-conv-bn", "ConvBnFusion", "Conv", "BatchNormalization",
     "Fold each BatchNormalization into the Conv before it (exact: new weights and bias)."),
    ("fusion-conv-add", "ConvAddFusion", "Conv", "Add",
     "Fold each per-channel constant Add into the Conv bias (exact)."),
    ("fusion-conv-mul", "ConvMulFusion", "Conv", "Mul",
     "Fold each per-channel constant Mul into the Conv weights (exact)."),
    ("fusion-matmul-add", "MatMulAddFusion", "MatMul", "Add",
     "Turn each MatMul + bias Add into one Gemm (exact)."),
)
GAIN_METHOD = "the profiled time of the ops the fusion removes"


def check(ctx) -> list[Finding]:
    plan = ctx.plan
    if ctx.model is None or plan is None:
        return []
    graph = ctx.model.main
    known = set(graph.node_index())
    readers = consumers(graph)
    where = ctx.model_path.name if ctx.model_path else "the model"
    findings = []
    for rule_id, pass_name, first, second, how in KINDS:
        folds = plan.by_pass(pass_name)
        if not folds:
            continue
        pairs = [tuple(f.nodes[:2]) for f in folds]
        removed = [b for _, b in pairs]
        nodes = [n for pair in pairs for n in pair if n in known]
        evidence = [f"{len(pairs)} {first} -> {second} pair(s) in {where}, as the converter's {pass_name} pass "
                    "folds them: " + ", ".join(f"{a} -> {b}" for a, b in pairs[:6]) + (" ..." if len(pairs) > 6 else ""),
                    "counted with every exact fusion applied together, as `studio convert` and `advise --apply` "
                    "do (one fold can expose another)"
                    + ("; dynamic input dims left open (no sizes known): folds that need static shapes may add "
                       "to these" if plan.dynamic and not plan.input_shape else "")]
        if second == "BatchNormalization":
            index = graph.node_index()
            relus = sum(1 for b in removed if b in index and graph.nodes[index[b]].outputs and only_reader(
                graph, readers, graph.nodes[index[b]].outputs[0], "Relu") is not None)
            if relus:
                evidence.append(f"{relus} of them are followed by a Relu (Conv+BN+ReLU): ATC and ONNX Runtime fuse "
                                "the Relu into the Conv at build / load time once the BN is folded")
        if plan.growth:
            evidence.append(f"applying it also runs the converter's clean-ups: {plan.growth}")
        gain = None
        if ctx.ops is not None and ctx.ops.ops:
            gain = sum(ctx.op_time_us(n) for n in removed) / 1000.0
            if gain > 0:
                evidence.append(f"the {second} ops to remove take {gain:.3f} ms per step in {ctx.profile_label}")
            else:
                evidence.append(f"no {second} kernel of these runs in {ctx.profile_label}: the runtime already "
                                "fuses them when it loads the model; folding them in the file still saves that work "
                                "and lets ATC see a simpler graph")
        findings.append(Finding(
            rule_id, f"{first} + {second} fusion: {len(pairs)} candidate(s)", severity_for(gain, ctx.step_ms),
            "fusion", evidence, how + f" Apply runs the converter's {pass_name} pass.", gain, gain, nodes,
            fix=pass_name, gain_method=GAIN_METHOD if gain is not None else ""))
    return findings
