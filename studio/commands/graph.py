"""``studio graph summary|export MODEL``: the graph viewer's engine, headless."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "graph"
HELP = "summarize a model graph (ONNX, OM, atc JSON) or export it to SVG/PNG"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="graph_command", metavar="{summary,export,macs}", required=True)
    summary = sub.add_parser("summary", help="node/edge counts, op types, inputs/outputs, parameters")
    summary.add_argument("model", type=Path, metavar="MODEL")
    summary.add_argument("--json", action="store_true", help="print machine-readable JSON")
    summary.add_argument("--run-shapes", action="store_true",
                         help="run the ONNX model once in ONNX Runtime (random inputs, CPU) and report the "
                              "shapes it produced instead of the declared ones")
    export = sub.add_parser("export", help="draw the graph to an SVG or PNG file")
    export.add_argument("model", type=Path, metavar="MODEL")
    export.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.svg|FILE.png")
    export.add_argument("--graph", default=None, help="name of the (sub)graph to draw (default: the main graph)")
    export.add_argument("--expand-all", action="store_true",
                        help="draw every node instead of the collapsed scope groups of a big graph")
    export.add_argument("--overlay", type=Path, default=None,
                        help="Model Explorer node-data JSON to colour nodes by")
    macs = sub.add_parser("macs", help="multiply-accumulates per node; writes a node-data overlay")
    macs.add_argument("model", type=Path, metavar="MODEL")
    macs.add_argument("-o", "--output", type=Path, default=None, metavar="NODE_DATA.json",
                      help="write each node's share of the MACs as Model Explorer node-data JSON")
    macs.add_argument("--top", type=int, default=10, help="how many of the heaviest nodes to print")
    macs.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.jobs import run_job
    from studio.tools.graph.reader import read_graph

    model = run_job(read_graph(args.model), on_progress=print_progress)
    if args.graph_command == "summary":
        from studio.tools.graph.summary import format_summary, summarize

        if args.run_shapes:
            from studio.errors import UserError
            from studio.tools.graph.runtime_shapes import record_shapes

            if model.format != "onnx":
                raise UserError("--run-shapes needs an ONNX model", args.model,
                                "OM models run on an Ascend NPU only; their shapes are the ones ATC recorded.")
            shapes, dtypes = run_job(record_shapes(args.model), on_progress=print_progress)
            changed = model.main.apply_runtime_shapes(shapes, dtypes)
            model.warnings.append(f"{changed:,} tensor shapes taken from a run (random inputs, dynamic dims = 1)")

        summary = summarize(model)
        print(json.dumps(summary, indent=2, default=str) if args.json else format_summary(summary))
        return 0
    if args.graph_command == "macs":
        return _macs(model, args)
    return _export(model, args)


def _macs(model, args) -> int:
    from studio.tools.graph.macs import graph_macs, write_node_data

    macs = graph_macs(model.main)
    total = sum(macs.values())
    top = sorted(macs.items(), key=lambda kv: -kv[1])[:max(args.top, 0)]
    unknown = len(model.main.nodes) - len(macs)
    if args.output:
        write_node_data(model.main, args.output)
    if args.json:
        print(json.dumps({"total": total, "nodes": len(macs), "unknown": unknown,
                          "top": [{"name": n, "macs": m} for n, m in top]}, indent=2))
    else:
        print(f"{model.path}: {total:,} MACs over {len(macs):,} nodes"
              + (f" ({unknown:,} nodes with unknown shapes left out)" if unknown else ""))
        for name, m in top:
            print(f"  {100 * m / (total or 1):6.2f}%  {m:>16,}  {name}")
        if args.output:
            print(f"wrote {args.output} (open it in Studio or Model Explorer to colour the graph)")
    return 0


def _export(model, args) -> int:
    from studio.commands._progress import print_progress
    from studio.errors import UserError
    from studio.jobs import run_job
    from studio.tools.graph.export_svg import export_svg
    from studio.tools.graph.grouping import Hierarchy
    from studio.tools.graph.view import build_view

    graph = model.main
    if args.graph:
        found = [g for g in model.all_graphs() if g.name == args.graph]
        if not found:
            names = ", ".join(g.name for g in model.all_graphs())
            raise UserError(f"No graph named {args.graph!r} in the model", args.model, f"Choose one of: {names}")
        graph = found[0]
    suffix = args.output.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise UserError(f"Cannot export to {suffix or 'a file without extension'}", args.output,
                        "Name the output FILE.svg or FILE.png.")
    hierarchy = Hierarchy(graph)
    expanded = {g.id for g in hierarchy.groups} if args.expand_all else None
    view = build_view(graph, hierarchy, expanded)
    colours = None
    if args.overlay:
        from studio.tools.graph.overlay import load_node_data

        overlay = load_node_data(args.overlay, graph.name)
        colours = {}
        for node, value in overlay.for_graph(graph).items():
            item = int(view.item_of_node[node])
            if view.items[item].kind == "node":
                colours[item] = overlay.colours.get(graph.nodes[node].name) or overlay.colour(value)
    if suffix == ".svg":
        run_job(export_svg(view, args.output, colours), on_progress=print_progress)
    else:
        from studio.ui.panels.graph.render import export_png

        export_png(view, args.output, colours)
    print(f"wrote {args.output} ({len(view.items):,} items, {view.layout.edge_src.size:,} edges)")
    return 0
