"""The facts ``studio graph summary`` prints: counts, op histogram, inputs/outputs, parameters."""

from __future__ import annotations

from collections import Counter
from typing import Any

from studio.tools.graph.macs import graph_macs, left_out, macs_text
from studio.tools.graph.model import Graph, Model
from studio.tools.graph.shapes import shape_source


def _io(graph: Graph, names: list[str]) -> list[dict[str, Any]]:
    out = []
    for name in names:
        value = graph.value(name)
        shape = None if value.shape is None else [d if d is not None else "?" for d in value.shape]
        row = {"name": name, "shape": shape, "dtype": value.dtype, "format": value.format}
        if value.runtime:
            row["runtime"] = True
        out.append(row)
    return out


def summarize(model: Model, source=None) -> dict[str, Any]:
    """A JSON-ready summary. Keys: format, nodes (as the file counts them), nodes_total, constants_folded,
    edges, op_types, inputs, outputs, parameters, macs, shapes, subgraphs (plus graphs, functions,
    metadata, opsets, warnings). ``source`` says where the shapes came from (given or inferred)."""
    main = model.main
    source = source or shape_source(model)
    macs = graph_macs(main)
    _unknown, uncounted = left_out(main, macs)
    graphs = model.all_graphs()
    ops = Counter(n.type for n in main.nodes)
    ops.update(op for _, op in main.folded)  # the histogram counts the file's nodes, folded constants too
    src, _, edge_names = main.edges()
    references = sum(1 for name in edge_names if name == "")
    return {
        "format": model.format,
        "path": str(model.path),
        "nodes": main.file_nodes,
        "nodes_total": sum(g.file_nodes for g in graphs),
        "constants_folded": sum(len(g.folded) for g in graphs),
        "edges": int(src.size),
        "control_edges": references,  # pipelines: dataSource-style references; OM: control dependencies
        "op_types": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        "inputs": _io(main, main.inputs),
        "outputs": _io(main, main.outputs),
        "parameters": sum(g.parameters() for g in graphs),
        "macs": sum(macs.values()),
        "macs_nodes": len(macs),
        "macs_unknown_nodes": len(main.nodes) - len(macs),  # all left out, the uncounted ones too
        "macs_uncounted_ops": uncounted,
        "shapes": source.text(),
        "shapes_given": {k: list(v) for k, v in source.given.items()},
        "subgraphs": len(graphs) - 1,
        "graphs": [{"name": g.name, "nodes": g.file_nodes} for g in graphs],
        "functions": sorted(model.functions),
        "opsets": model.opsets,
        "metadata": {k: v for k, v in model.metadata.items() if v not in ("", None, [])},
        "warnings": model.warnings,
    }


def format_summary(summary: dict[str, Any]) -> str:
    """Human-readable text of :func:`summarize`."""
    if summary["format"] == "mindx_pipeline":
        return _format_pipeline(summary)
    lines = [f"{summary['path']}: {summary['format']} model",
             f"  nodes: {summary['nodes']:,} (main graph), {summary['nodes_total']:,} with subgraphs; "
             f"edges: {summary['edges']:,}; subgraphs: {summary['subgraphs']}; "
             f"parameters: {summary['parameters']:,}"]
    uncounted = summary.get("macs_uncounted_ops") or {}
    unknown = summary["macs_unknown_nodes"] - sum(uncounted.values())
    lines.append(f"  MACs (main graph): {macs_text(summary['macs'], unknown, uncounted)}; {summary['shapes']}")
    if summary.get("constants_folded"):
        lines.append(f"  {summary['constants_folded']:,} Constant/ConstantOfShape nodes hold weights: drawn as "
                     "weights of the nodes that read them and counted in the parameters")
    for kind in ("inputs", "outputs"):
        lines.append(f"  {kind}:")
        for io in summary[kind]:
            shape = "?" if io["shape"] is None else "[" + ",".join(str(d) for d in io["shape"]) + "]"
            fmt = f" {io['format']}" if io.get("format") else ""
            lines.append(f"    {io['name']}: {io['dtype'] or '?'}{shape}{fmt}")
    ops = summary["op_types"]
    lines.append(f"  op types ({len(ops)}): " + ", ".join(f"{k} {v}" for k, v in list(ops.items())[:20])
                 + (", ..." if len(ops) > 20 else ""))
    if len(summary["graphs"]) > 1:
        lines.append("  graphs: " + ", ".join(f"{g['name']} ({g['nodes']})" for g in summary["graphs"]))
    if summary["functions"]:
        lines.append("  functions: " + ", ".join(summary["functions"]))
    if summary["opsets"]:
        lines.append("  opsets: " + ", ".join(f"{k} {v}" for k, v in summary["opsets"].items()))
    for key, value in summary["metadata"].items():
        text = str(value).replace("\n", " ")
        lines.append(f"  {key}: {text[:200]}{'...' if len(text) > 200 else ''}")
    for warning in summary["warnings"]:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines)


def _format_pipeline(summary: dict[str, Any]) -> str:
    """A MindX SDK pipeline in its own words: elements, links, references, plugins, streams."""
    streams = summary["metadata"].get("streams", "")
    count = len([s for s in streams.split(", ") if s])
    links = summary["edges"] - summary["control_edges"]
    lines = [f"{summary['path']}: MindX SDK pipeline",
             f"  elements: {summary['nodes']:,} in {count} stream{'s' if count != 1 else ''}; links: {links:,}; "
             f"references (dataSource and kin): {summary['control_edges']:,}"]
    plugins = summary["op_types"]
    lines.append(f"  plugins ({len(plugins)}): " + ", ".join(f"{k} {v}" for k, v in plugins.items()))
    for key, value in summary["metadata"].items():
        if key != "streams":
            lines.append(f"  {key}: {value}")
    lines.append("  check it with: studio pipeline check " + summary["path"])
    return "\n".join(lines)
