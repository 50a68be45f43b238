"""Fusion candidates the converter applies exactly: Conv+BN(+ReLU), Conv+Add, Conv+Mul, MatMul+Add.

Each finding lists the pairs; its gain is the profiled time of the ops the fusion removes (the BN,
the Add, the Mul), so a runtime that fuses them itself already (ONNX Runtime at session start,
ATC at build time) shows a gain near zero and says so.
"""

from __future__ import annotations

from studio.tools.advisor.model import Finding, severity_for
from studio.tools.advisor.rules._graph import consumers, is_const, only_reader

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


def candidates(graph, first: str, second: str) -> list[tuple[int, int]]:
    """(first node, second node) pairs where ``second`` alone reads ``first``'s output and folds."""
    readers = consumers(graph)
    pairs = []
    for i, node in enumerate(graph.nodes):
        if node.type != first or not node.outputs:
            continue
        j = only_reader(graph, readers, node.outputs[0], second)
        if j is None:
            continue
        other = graph.nodes[j]
        if second == "BatchNormalization":
            ok = all(is_const(graph, n) for n in other.inputs[1:5])
        else:
            consts = [n for n in other.inputs if n != node.outputs[0] and is_const(graph, n)]
            ok = len(consts) == 1 and _folds(graph, node, graph.initializers[consts[0]].shape, first)
        if first == "Conv" and not is_const(graph, node.inputs[1] if len(node.inputs) > 1 else ""):
            ok = False
        if ok:
            pairs.append((i, j))
    return pairs


def _folds(graph, node, shape: tuple, first: str) -> bool:
    """True when a constant of ``shape`` folds into ``node`` under the converter's own conditions:
    for a Conv a scalar or one value per output channel broadcast over the spatial axes ([C,1,1],
    [1,C,1,1]; a bare [C] broadcasts over W and does not fold); for a MatMul on 2-D input with a 2-D
    weight, a bias of 1 or N values ([N] or [1,N])."""
    size = 1
    for d in shape:
        size *= d
    if first == "MatMul":
        data = graph.value(node.inputs[0]).shape if node.inputs else None
        weight = graph.initializers.get(node.inputs[1]) if len(node.inputs) > 1 else None
        if data is None or len(data) != 2 or weight is None or len(weight.shape) != 2:
            return False
        return size in (1, weight.shape[1]) and len(shape) <= 2 and (len(shape) < 2 or shape[0] == 1)
    if size == 1:
        return True
    weight = graph.initializers.get(node.inputs[1]) if len(node.inputs) > 1 else None
    channels = weight.shape[0] if weight is not None and weight.shape else None
    dims = list(shape)
    while dims and dims[0] == 1 and len(dims) > 3:
        dims.pop(0)
    return len(dims) >= 3 and dims[0] == channels and all(d == 1 for d in dims[1:])


def check(ctx) -> list[Finding]:
    if ctx.model is None:
        return []
    graph = ctx.model.main
    findings = []
    readers = consumers(graph)
    for rule_id, pass_name, first, second, how in KINDS:
        pairs = candidates(graph, first, second)
        if not pairs:
            continue
        removed = [graph.nodes[j].name for _, j in pairs]
        nodes = [n for i, j in pairs for n in (graph.nodes[i].name, graph.nodes[j].name)]
        evidence = [f"{len(pairs)} {first} -> {second} pair(s) in {ctx.model_path.name if ctx.model_path else 'the model'}"
                    f" (graph): " + ", ".join(f"{graph.nodes[i].name} -> {graph.nodes[j].name}" for i, j in pairs[:6])
                    + (" ..." if len(pairs) > 6 else "")]
        relus = sum(1 for _, j in pairs if only_reader(graph, readers, graph.nodes[j].outputs[0], "Relu") is not None)
        if second == "BatchNormalization" and relus:
            evidence.append(f"{relus} of them are followed by a Relu (Conv+BN+ReLU): ATC and ONNX Runtime fuse "
                            "the Relu into the Conv at build / load time once the BN is folded")
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
            fix=pass_name))
    return findings
