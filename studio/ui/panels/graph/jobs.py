"""The jobs the graph panel runs (Qt-free parts composed for the panel)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.gc_pause import paused_gc
from studio.tools.graph.grouping import Hierarchy
from studio.tools.graph.model import Graph, Model
from studio.tools.graph.reader import read_graph
from studio.tools.graph.search import Match, find_in_subgraphs, trace
from studio.tools.graph.view import ViewGraph, build_view


def prepare(view: ViewGraph) -> ViewGraph:
    """Build the canvas's per-view caches here, on the worker thread (numpy and value types only)."""
    from studio.ui.panels.graph.render import ViewPainter

    view.prepared_painter = ViewPainter(view)
    return view


def open_job(path: Path, cancel: CancelToken | None = None, direction: str = "TB"
             ) -> Generator[Progress, None, tuple[Model, Hierarchy, ViewGraph]]:
    """Read a model, group its main graph and lay out the first view."""
    model = yield from read_graph(path, cancel)
    yield Progress(0.92, "grouping and laying out")
    with paused_gc():
        hierarchy = Hierarchy(model.main)
        view = prepare(build_view(model.main, hierarchy, None, cancel, direction))
    from studio.ui.panels.graph.details import model_facts

    model_facts(model, model.main)  # the details pane shows them at once, without a walk on the GUI thread
    yield Progress(1.0, f"{len(model.main.nodes):,} nodes, {len(view.items):,} shown")
    return model, hierarchy, view


def graph_job(graph: Graph, hierarchy: Hierarchy | None, expanded: set[int] | None,
              cancel: CancelToken | None = None, direction: str = "TB"
              ) -> Generator[Progress, None, tuple[Hierarchy, ViewGraph]]:
    """Group (if not done yet) and lay out one graph at the given expansion, top to bottom (TB) or
    left to right (LR)."""
    yield Progress(None, f"laying out {graph.name}")
    with paused_gc():
        hierarchy = hierarchy or Hierarchy(graph)
        view = prepare(build_view(graph, hierarchy, expanded, cancel, direction))
    yield Progress(1.0, f"{len(view.items):,} items")
    return hierarchy, view


def find_job(graph: Graph, query: str, regex: bool, cancel=None) -> Generator[Progress, None, list[Match]]:
    """Find in ``graph`` and every subgraph below it."""
    yield Progress(None, f"finding {query!r}")
    return find_in_subgraphs(graph, query, regex, cancel)


def trace_job(graph: Graph, node: int, downstream: bool, cancel=None) -> Generator[Progress, None, set[int]]:
    yield Progress(None, "tracing " + ("downstream" if downstream else "upstream"))
    return trace(graph, node, downstream)


def stats_job(tensor, cancel=None) -> Generator[Progress, None, dict]:
    yield Progress(None, f"statistics of {tensor.name}")
    return tensor.statistics()


def export_job(view: ViewGraph, path: Path, colours: dict[int, str], cancel=None) -> Generator[Progress, None, Path]:
    """SVG without Qt; PNG painted on a QImage (allowed off the GUI thread)."""
    if path.suffix.lower() == ".svg":
        from studio.tools.graph.export_svg import export_svg

        return (yield from export_svg(view, path, colours, cancel))
    from studio.ui.panels.graph.png_export import export_png

    yield Progress(None, f"rendering {path.name}")
    return export_png(view, path, colours)


def overlay_job(path: Path, graph_name: str | None, cancel=None):
    """Read a Model Explorer node-data JSON file."""
    from studio.tools.graph.overlay import load_node_data

    yield Progress(None, f"reading {path.name}")
    return load_node_data(path, graph_name)


def export_whole_job(graph: Graph, hierarchy: Hierarchy | None, overlay, path: Path, cancel=None):
    """Lay out every node of ``graph`` (all groups expanded) and export it, overlay colours included."""
    yield Progress(None, f"laying out all of {graph.name}")
    with paused_gc():
        hierarchy = hierarchy or Hierarchy(graph)
        view = build_view(graph, hierarchy, {g.id for g in hierarchy.groups if g.parent != -2}, cancel)
    colours = {}
    if overlay is not None:
        from studio.tools.graph.overlay import node_colours

        colours = node_colours(overlay, graph, view)
    return (yield from export_job(view, path, colours, cancel))


def record_shapes_job(model: Model, cancel=None, input_shapes: dict | None = None) -> Generator[Progress, None, int]:
    """Run the model once (dynamic inputs at ``input_shapes``) and apply the recorded shapes to its
    main graph; returns how many changed. The model remembers the sizes the run used."""
    from studio.tools.graph.runtime_shapes import record_shapes
    from studio.tools.graph.shapes import ShapeSource

    fed: dict[str, str] = {}
    shapes, dtypes = yield from record_shapes(model.path, cancel=cancel, input_shapes=input_shapes,
                                              option="the input sizes asked by Run shapes", fed=fed)
    changed = model.main.apply_runtime_shapes(shapes, dtypes)
    model.shape_source = ShapeSource(dict(input_shapes or {}), [], run=True, fed=fed)
    return changed
