"""Multiply-accumulates per node, estimated from shapes — a ready-made overlay ("where is the work?").

Conv / ConvTranspose / MatMul / Gemm (and their OM names) count ``output elements x reduction
size``; element-wise and other ops count one operation per output element. Nodes whose shapes are
unknown (dynamic dims, failed inference) are left out, never guessed. Writes Model Explorer
node-data JSON, which the graph panel (and Model Explorer itself) overlays.
"""

from __future__ import annotations

import json
from pathlib import Path

from studio.tools.graph.model import Graph, Model

_CONV = {"Conv", "Conv2D", "Conv3D", "DepthwiseConv2D", "QLinearConv", "ConvInteger"}
_DECONV = {"ConvTranspose", "Conv2DBackpropInput", "Deconvolution"}
_MATMUL = {"MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2", "MatMulInteger", "QLinearMatMul"}
_GEMM = {"Gemm", "FullyConnection", "InnerProduct"}
_FREE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Constant", "Data", "NetOutput"}


def _known(shape) -> bool:
    return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)


def _prod(shape) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


def node_macs(graph: Graph, index: int) -> int | None:
    """MACs of one node, or None when its shapes are not known."""
    node = graph.nodes[index]
    if node.type in _FREE:
        return 0
    outs = [graph.value(o).shape for o in node.outputs if o]
    if not outs or not _known(outs[0]):
        return None
    out = _prod(outs[0])
    ins = [graph.value(i).shape for i in node.inputs]
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


def graph_macs(graph: Graph) -> dict[str, int]:
    """Node name -> MACs, for every node whose shapes are known."""
    out = {}
    for i, node in enumerate(graph.nodes):
        macs = node_macs(graph, i)
        if macs is not None:
            out[node.name] = macs
    return out


def macs_text(total: int, unknown: int) -> str:
    """``1,234`` / ``1,234 (5 nodes with unknown shapes left out)`` / ``unknown (…)``: never a bare 0
    when the work of nodes with unknown shapes is missing."""
    if not unknown:
        return f"{total:,}"
    left_out = f"{unknown:,} node{'s' if unknown != 1 else ''} with unknown shapes"
    return f"{total:,} ({left_out} left out)" if total else f"unknown ({left_out})"


def top_nodes(macs: dict[str, int], count: int) -> list[tuple[str, int]]:
    """The ``count`` heaviest nodes; nodes that do no work (Reshape, Constant, ...) never make the list."""
    return sorted(((n, m) for n, m in macs.items() if m > 0), key=lambda kv: -kv[1])[:max(count, 0)]


def macs_report(model: Model, source=None, top: int = 10) -> dict:
    """MACs of the main graph with what they rest on: JSON-ready.

    Keys: total, nodes (counted), unknown (nodes whose shapes are unknown, left out), unknown_names
    (the first 20), top [{name, macs}], shapes (a :class:`~studio.tools.graph.shapes.ShapeSource`
    as text), shapes_given, unknown_dims [{input, axis, dim}], subgraph_nodes (nodes inside If/Loop
    bodies, not counted: which branch runs is decided at run time).
    """
    from studio.tools.graph.shapes import shape_source

    graph = model.main
    source = source or shape_source(model)
    macs = graph_macs(graph)
    unknown = [n.name for n in graph.nodes if n.name not in macs]
    return {
        "total": sum(macs.values()), "nodes": len(macs), "unknown": len(unknown), "unknown_names": unknown[:20],
        "top": [{"name": n, "macs": m} for n, m in top_nodes(macs, top)],
        "shapes": source.text(), "shapes_given": {k: list(v) for k, v in source.given.items()},
        "unknown_dims": [{"input": i, "axis": a, "dim": d} for i, a, d in source.unknown_dims],
        "subgraph_nodes": sum(len(g.nodes) for g in model.all_graphs()) - len(graph.nodes),
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
