"""Multiply-accumulates per node, estimated from shapes — a ready-made overlay ("where is the work?").

Conv / ConvTranspose / MatMul / Gemm (and their OM and quantized names) count ``output elements x
reduction size``; recurrent layers, attention and Einsum have their own formulas
(:mod:`~studio.tools.graph.macs_formulas`); pooling counts its window, reductions their input;
element-wise ops (a listed set) count one operation per output element. Data movement (Transpose,
Concat, Gather, Slice, Cast, ... : a listed set) does no arithmetic and counts no MACs; the elements
it writes are reported apart (:func:`moved_report`). Views (Reshape, Squeeze, ...) count nothing.
Nodes whose shapes are unknown (dynamic dims, failed inference) are left out, never guessed, and
so are ops with no formula (custom ops, If/Loop, NonMaxSuppression, ...): they are reported as
uncounted by op type, never counted as cheap. Writes Model Explorer node-data JSON, which the
graph panel (and Model Explorer itself) overlays.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from studio.tools.graph.macs_formulas import ATTENTION, GATES, attention_macs, einsum_macs, recurrent_macs
from studio.tools.graph.macs_formulas import known as _known
from studio.tools.graph.macs_formulas import prod as _prod
from studio.tools.graph.model import Graph, Model

_CONV = {"Conv", "Conv2D", "Conv3D", "DepthwiseConv2D", "QLinearConv", "ConvInteger", "FusedConv"}
_DECONV = {"ConvTranspose", "Conv2DBackpropInput", "Deconvolution"}
_MATMUL = {"MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2", "MatMulInteger", "QLinearMatMul", "FusedMatMul",
           "DynamicQuantizeMatMul", "MatMulIntegerToFloat"}
_GEMM = {"Gemm", "FullyConnection", "InnerProduct", "FusedGemm", "QGemm"}
_FREE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Rank", "Constant", "Data",
         "NetOutput"}
_POOL = {"MaxPool", "AveragePool", "LpPool", "QLinearAveragePool", "Pooling"}  # output x window
_OVER_INPUT = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "QLinearGlobalAveragePool", "ReduceMean",
               "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
               "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum"}  # one per input element
# One operation per output element: element-wise math, activations, normalisations, quantisation and
# comparisons. An op in none of these sets (nor in DATA_MOVEMENT) has no formula and is left out.
PER_ELEMENT = frozenset("""
Add Sub Mul Div Pow Mod Neg Abs Sign Reciprocal Sqrt Exp Log Erf Floor Ceil Round Max Min Sum Mean Clip
Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh BitShift BitwiseAnd BitwiseOr BitwiseXor BitwiseNot
Relu LeakyRelu PRelu Elu Selu Celu Gelu FastGelu BiasGelu QuickGelu Mish Sigmoid HardSigmoid HardSwish Tanh
Softplus Softsign ThresholdedRelu Shrink Swish Softmax LogSoftmax Hardmax BiasSoftmax BiasAdd
BatchNormalization InstanceNormalization LayerNormalization GroupNormalization SkipLayerNormalization
SimplifiedLayerNormalization SkipSimplifiedLayerNormalization RMSNormalization LpNormalization
MeanVarianceNormalization Dropout
QuantizeLinear DequantizeLinear DynamicQuantizeLinear QLinearAdd QLinearMul QLinearSigmoid
QLinearLeakyRelu QLinearSoftmax QLinearConcat
Equal Greater Less GreaterOrEqual LessOrEqual And Or Xor Not IsNaN IsInf Where
Resize Upsample GridSample AffineGrid ImageScaler
RealDiv Maximum Minimum Relu6
""".split())
# Data movement: each output element is a copy of an input element, a conversion of one, or a
# constant / index written out; no arithmetic, so no MACs. Their output elements are reported
# apart, as elements moved (:func:`node_moved`). Views (Reshape, Squeeze, ... in _FREE) move nothing.
DATA_MOVEMENT = frozenset("""
Concat Split Slice Transpose Gather GatherElements GatherND Scatter ScatterElements ScatterND Expand Tile Pad
DepthToSpace SpaceToDepth ConstantOfShape Range OneHot Trilu ReverseSequence EyeLike Compress NonZero Unique
Crop Cast CastLike
TransData TransDataRNN Permute ConcatV2 ConcatD SplitD SplitV StridedSlice StridedSliceD GatherV2 Pack Unpack
Fill BroadcastTo
""".split())


def is_per_element(op_type: str) -> bool:
    """True for the ops counted as one operation per output element (element-wise), and views."""
    return op_type in PER_ELEMENT or op_type in _FREE


def is_data_movement(op_type: str) -> bool:
    """True for ops that only move, convert or write elements (no MACs; see :func:`node_moved`)."""
    return op_type in DATA_MOVEMENT


def node_moved(graph: Graph, index: int) -> int | None:
    """Elements a data-movement node writes (all its outputs), None when a shape is unknown; 0 for
    every other op."""
    node = graph.nodes[index]
    if node.type not in DATA_MOVEMENT:
        return 0
    shapes = [graph.value(o).shape for o in node.outputs if o]
    if not shapes or not all(_known(s) for s in shapes):
        return None
    return sum(_prod(s) for s in shapes)


def has_formula(op_type: str) -> bool:
    """True when :func:`node_macs` knows how to count ``op_type`` (given its shapes)."""
    return op_type in _FORMULA


def node_macs(graph: Graph, index: int) -> int | None:
    """MACs of one node, or None when its shapes are not known or its op has no formula
    (:func:`has_formula` tells the two apart)."""
    node = graph.nodes[index]
    if node.type in _FREE or node.type in DATA_MOVEMENT:
        return 0  # views and data movement: no multiply-accumulate, whatever the shapes
    if node.type not in _FORMULA:
        return None
    if node.type in GATES:
        return recurrent_macs(graph, node)
    if node.type in ATTENTION:
        return attention_macs(graph, node)
    outs = [graph.value(o).shape for o in node.outputs if o]
    if not outs or not _known(outs[0]):
        return None
    out = _prod(outs[0])
    ins = [_input_shape(graph, i) for i in node.inputs]
    if node.type == "Einsum":
        return einsum_macs(graph, node, out)
    if node.type in _POOL:
        kernel = node.attributes.get("kernel_shape") or node.attributes.get("window") or node.attributes.get("ksize")
        return out * _prod(int(k) for k in kernel) if kernel else None
    if node.type in _OVER_INPUT:
        return _prod(ins[0]) if ins and _known(ins[0]) else None
    if node.type == "LRN":
        return out * int(node.attributes.get("size", 1))
    if node.type in _CONV and len(ins) > 1 and _known(ins[1]) and len(ins[1]) >= 2:
        return out * _prod(ins[1][1:])  # weight [Cout, Cin/groups, k...]
    if node.type in _DECONV and len(ins) > 1 and _known(ins[0]) and _known(ins[1]):
        return _prod(ins[0]) * _prod(ins[1][1:])  # weight [Cin, Cout/groups, k...]
    if node.type in _MATMUL and ins and _known(ins[0]) and ins[0]:
        return out * ins[0][-1]
    if node.type in _GEMM and ins and _known(ins[0]) and len(ins[0]) == 2:
        k = ins[0][0] if node.attributes.get("transA") else ins[0][1]
        return out * k
    return out


def _input_shape(graph: Graph, name: str):
    weight = graph.weight(name) if name else None
    return tuple(weight.shape) if weight is not None else graph.value(name).shape


_FORMULA = (_CONV | _DECONV | _MATMUL | _GEMM | _POOL | _OVER_INPUT | PER_ELEMENT | DATA_MOVEMENT | set(GATES)
            | ATTENTION | {"Einsum", "LRN"})


def graph_macs(graph: Graph) -> dict[str, int]:
    """Node name -> MACs, for every node whose shapes are known."""
    out = {}
    for i, node in enumerate(graph.nodes):
        macs = node_macs(graph, i)
        if macs is not None:
            out[node.name] = macs
    return out


def moved_report(graph: Graph) -> dict:
    """Data movement, apart from the MACs: ``elements`` written by data-movement nodes whose shapes
    are known, ``nodes`` (those), ``unknown`` (those whose shapes are not), ``ops`` {op type: nodes}."""
    elements, nodes, unknown, ops = 0, 0, 0, Counter()
    for i, node in enumerate(graph.nodes):
        if node.type not in DATA_MOVEMENT:
            continue
        ops[node.type] += 1
        moved = node_moved(graph, i)
        if moved is None:
            unknown += 1
        else:
            elements, nodes = elements + moved, nodes + 1
    return {"elements": elements, "nodes": nodes, "unknown": unknown,
            "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))}


def moved_text(moved: dict) -> str:
    """``data movement (not MACs): 1,234 elements written by 5 nodes (3 Transpose, 2 Gather)``."""
    ops = ", ".join(f"{n:,} {op}" for op, n in list(moved["ops"].items())[:6])
    more = ", ..." if len(moved["ops"]) > 6 else ""
    text = (f"data movement (not MACs): {moved['elements']:,} elements written by {moved['nodes']:,} "
            f"node{'s' if moved['nodes'] != 1 else ''} ({ops}{more})")
    if moved["unknown"]:
        text += f"; {moved['unknown']:,} more with unknown shapes"
    return text


def left_out(graph: Graph, macs: dict[str, int]) -> tuple[int, dict[str, int]]:
    """What :func:`graph_macs` could not count: (nodes with unknown shapes, {op type: nodes} of
    ops with no formula), the second sorted by count."""
    unknown, uncounted = 0, Counter()
    for node in graph.nodes:
        if node.name in macs:
            continue
        if has_formula(node.type):
            unknown += 1
        else:
            uncounted[node.type] += 1
    return unknown, dict(sorted(uncounted.items(), key=lambda kv: (-kv[1], kv[0])))


def macs_text(total: int, unknown: int, uncounted: dict[str, int] | None = None) -> str:
    """``1,234`` / ``1,234 (5 nodes with unknown shapes left out; uncounted, no formula: 2 If)`` /
    ``unknown (…)``: never a bare 0, nor a silently small total, when some nodes' work is missing."""
    parts = []
    if unknown:
        parts.append(f"{unknown:,} node{'s' if unknown != 1 else ''} with unknown shapes left out")
    if uncounted:
        parts.append("uncounted, no formula: " + ", ".join(f"{n:,} {op}" for op, n in uncounted.items()))
    if not parts:
        return f"{total:,}"
    return f"{total:,} ({'; '.join(parts)})" if total else f"unknown ({'; '.join(parts)})"


def top_nodes(macs: dict[str, int], count: int) -> list[tuple[str, int]]:
    """The ``count`` heaviest nodes; nodes that do no work (Reshape, Constant, ...) never make the list."""
    return sorted(((n, m) for n, m in macs.items() if m > 0), key=lambda kv: -kv[1])[:max(count, 0)]


def macs_report(model: Model, source=None, top: int = 10) -> dict:
    """MACs of the main graph with what they rest on: JSON-ready.

    Keys: total, nodes (counted), unknown (nodes whose shapes are unknown, left out), unknown_names
    (the first 20, with the uncounted ones), uncounted (nodes of ops with no formula, left out),
    uncounted_ops {op type: nodes}, top [{name, macs}], shapes (a :class:`~studio.tools.graph.shapes.ShapeSource`
    as text), shapes_given, unknown_dims [{input, axis, dim}], subgraph_nodes (nodes inside If/Loop
    bodies, not counted: which branch runs is decided at run time), moved (data movement, not MACs:
    :func:`moved_report`), run_fed {input: what a shape-recording run fed it}.
    """
    from studio.tools.graph.shapes import shape_source

    graph = model.main
    source = source or shape_source(model)
    macs = graph_macs(graph)
    missing = [n.name for n in graph.nodes if n.name not in macs]
    unknown, uncounted = left_out(graph, macs)
    return {
        "total": sum(macs.values()), "nodes": len(macs), "unknown": unknown, "unknown_names": missing[:20],
        "uncounted": sum(uncounted.values()), "uncounted_ops": uncounted,
        "top": [{"name": n, "macs": m} for n, m in top_nodes(macs, top)],
        "shapes": source.text(), "shapes_given": {k: list(v) for k, v in source.given.items()},
        "unknown_dims": [{"input": i, "axis": a, "dim": d} for i, a, d in source.unknown_dims],
        "subgraph_nodes": sum(len(g.nodes) for g in model.all_graphs()) - len(graph.nodes),
        "moved": moved_report(graph), "run_fed": dict(source.fed),
    }


def node_data(graph: Graph, title: str = "MACs share (%)") -> dict:
    """Model Explorer node-data JSON: each node's share of the graph's MACs, in percent."""
    macs = graph_macs(graph)
    total = sum(macs.values()) or 1
    results = {name: {"value": round(100.0 * m / total, 4)} for name, m in macs.items() if m}
    return {"name": title, "results": results,
            "thresholds": [{"value": 1.0, "bgColor": "#9ccfa8"}, {"value": 5.0, "bgColor": "#e0b43a"},
                           {"value": 100.0, "bgColor": "#d0453a"}]}


def write_node_data(graph: Graph, path: Path) -> Path:
    """Write :func:`node_data` to ``path`` (atomically: a half-written overlay is never read)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(node_data(graph), indent=1), encoding="utf-8")
    tmp.replace(path)
    return path
