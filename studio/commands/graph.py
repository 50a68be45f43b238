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
    _run_option(summary)
    _shape_option(summary)
    export = sub.add_parser("export", help="draw the graph to an SVG or PNG file")
    export.add_argument("model", type=Path, metavar="MODEL")
    export.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.svg|FILE.png")
    export.add_argument("--graph", default=None, help="name of the (sub)graph to draw (default: the main graph)")
    export.add_argument("--direction", choices=["TB", "LR"], default="TB",
                        help="TB: inputs at the top (default); LR: inputs on the left, for long chains")
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
    _run_option(macs)
    _shape_option(macs)
    _shape_option(export)


def _run_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-shapes", action="store_true",
                        help="run the ONNX model once in ONNX Runtime (CPU; seeded random inputs, token ids within "
                             "the table they index, masks of ones: the output says what was fed) and use the shapes "
                             "it produced instead of the declared ones (dynamic inputs need --input-shape)")


def _shape_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input-shape", "--input_shape", action="append", default=[], metavar="NAME=1,3,640,640",
                        help="size of a dynamic input (repeat per input); shapes are then inferred from it. "
                             "Without it, dims the model leaves dynamic stay unknown (never guessed)")


def run(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.graph.reader import read_graph
    from studio.tools.graph.shapes import apply_input_shapes, parse_input_shapes

    given = parse_input_shapes(args.input_shape)  # bad syntax fails before the model is read
    if args.graph_command == "export":
        _check_output(args.output)
    model = run_job(read_graph(args.model), on_progress=print_progress)
    args.shape_source = apply_input_shapes(model, given)
    if getattr(args, "run_shapes", False):
        _run_shapes(model, args, given)
    if args.graph_command == "summary":
        from studio.tools.graph.summary import format_summary, summarize

        summary = summarize(model, args.shape_source)
        print(json.dumps(summary, indent=2, default=str) if args.json else format_summary(summary))
        return 0
    if args.graph_command == "macs":
        return _macs(model, args)
    return _export(model, args)


def _run_shapes(model, args, given) -> None:
    """Run the model once and trust the shapes it produced (dynamic dims only at the given sizes)."""
    from studio.commands._progress import print_progress
    from studio.core.errors import UserError
    from studio.core.jobs import run_job
    from studio.tools.graph.runtime_shapes import record_shapes
    from studio.tools.graph.shapes import ShapeSource

    if model.format != "onnx":
        raise UserError("--run-shapes needs an ONNX model", args.model,
                        "OM models run on an Ascend NPU only; their shapes are the ones ATC recorded.")
    fed: dict[str, str] = {}
    shapes, dtypes = run_job(record_shapes(args.model, input_shapes=given, fed=fed), on_progress=print_progress)
    changed = model.main.apply_runtime_shapes(shapes, dtypes)
    args.shape_source = model.shape_source = ShapeSource(dict(given), [], run=True, fed=fed)
    model.warnings.append(f"{changed:,} tensor shapes taken from a run ("
                          + args.shape_source.text().removeprefix("shapes from a run").strip() + ")")


def _check_output(path: Path) -> None:
    """Refuse an output the command could not write, before any work is done."""
    from studio.core.errors import UserError

    if not path.parent.is_dir():
        raise UserError(f"The folder {str(path.parent)!r} does not exist", path,
                        "Create the folder first, or give -o a path in an existing folder.")
    if path.is_dir():
        raise UserError("The output is a folder", path, "Give -o a file name, e.g. -o graph.svg.")


def _macs(model, args) -> int:
    from studio.tools.graph.macs import macs_report, macs_text, moved_text, write_node_data

    if args.output:
        _check_output(args.output)
    report = macs_report(model, args.shape_source, args.top)
    total = report["total"]
    if args.output:
        write_node_data(model.main, args.output)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{model.path}: MACs {macs_text(total, report['unknown'], report['uncounted_ops'])}, "
              f"{report['nodes']:,} nodes counted")
        print(f"  {report['shapes']}")
        if report["unknown"] and not args.run_shapes and not report["unknown_dims"]:
            print(f"  shape inference could not size {report['unknown']:,} nodes; --run-shapes records their "
                  "shapes from a run")
        if report["moved"]["nodes"] or report["moved"]["unknown"]:
            print(f"  {moved_text(report['moved'])}")
        if report["subgraph_nodes"]:
            print(f"  {report['subgraph_nodes']:,} nodes inside subgraphs (If/Loop bodies) are not counted")
        for row in report["top"]:
            print(f"  {100 * row['macs'] / (total or 1):6.2f}%  {row['macs']:>16,}  {row['name']}")
        if args.output:
            print(f"wrote {args.output} (open it in Studio or Model Explorer to colour the graph)")
    return 0


def _export(model, args) -> int:
    from studio.commands._progress import print_progress
    from studio.core.errors import UserError
    from studio.core.jobs import run_job
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
    view = build_view(graph, hierarchy, expanded, direction=args.direction)
    colours = None
    if args.overlay:
        from studio.tools.graph.overlay import load_node_data, node_colours

        colours = node_colours(load_node_data(args.overlay, graph.name), graph, view)
    if suffix == ".svg":
        run_job(export_svg(view, args.output, colours), on_progress=print_progress)
    else:
        from studio.ui.panels.graph.png_export import export_png

        export_png(view, args.output, colours)
    print(f"wrote {args.output} ({len(view.items):,} items, {view.layout.edge_src.size:,} edges)")
    return 0
