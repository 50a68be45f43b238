"""What the canvas draws: the visible items of one graph (nodes, collapsed groups, graph inputs and
outputs), their edges, and their layout. Built by a job, off the GUI thread.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

import numpy as np

from studio.core.jobs import CancelToken, Progress
from studio.tools.graph.categories import category
from studio.core.gc_pause import paused_gc
from studio.tools.graph.grouping import Hierarchy
from studio.tools.graph.layout import RANK_SEP, Layout, layered_layout, transposed
from studio.tools.graph.nested import LEFT_TO_RIGHT_PADS, TOP_TO_BOTTOM_PADS, nested_layout
from studio.tools.graph.model import Graph

CHAR_W = 7.0       # average label character width at 1:1 (the panel's font is about this wide)
NODE_H = 28.0
GROUP_H = 40.0
MIN_W = 48.0
MAX_LABEL = 40     # labels longer than this are elided in the box; the tooltip has the full text


@dataclass
class Item:
    """One drawn box. ``kind`` is "node", "group", "input" or "output"; ``index`` is the node index,
    group id, or position in graph.inputs/outputs."""

    kind: str
    index: int
    label: str
    sublabel: str
    category: str
    name: str  # the full name (tooltip, search, overlays)


@dataclass
class ViewGraph:
    """Visible items with a layout; ``edge_values[k]`` is the value carried by edge k ("" for groups)."""

    graph: Graph
    items: list[Item]
    layout: Layout
    edge_values: list[str]
    item_of_node: np.ndarray  # node index -> item index showing it
    expanded: set[int] = field(default_factory=set)
    frames: list[tuple[int, tuple[float, float, float, float]]] = field(default_factory=list)  # biggest first
    group_labels: dict[int, str] = field(default_factory=dict)  # expanded group id -> "path (N nodes)"
    group_short: dict[int, str] = field(default_factory=dict)   # expanded group id -> "label (N)"
    references: set[int] = field(default_factory=set)  # edges k between nodes that are references, drawn dashed
    direction: str = "TB"  # TB: inputs at the top, layers downwards; LR: inputs on the left (long chains)


def _elide(text: str) -> str:
    """Cut in the middle: scoped names differ at both ends (``backbone/…/output``)."""
    if len(text) <= MAX_LABEL:
        return text
    keep = (MAX_LABEL - 1) // 2
    return text[:keep] + "…" + text[-(MAX_LABEL - 1 - keep):]


DIRECTIONS = ("TB", "LR")
# Left to right, an edge's shape label sits above its horizontal run between two columns: the
# columns stand far enough apart for a 4-d shape ("[1,16,256,256]") to fit between them.
LR_COLUMN_GAP = 96.0


def build_view(graph: Graph, hierarchy: Hierarchy | None, expanded: set[int] | None = None,
               cancel: CancelToken | None = None, direction: str = "TB") -> ViewGraph:
    """Compute visible items and lay them out, top to bottom (``TB``) or left to right (``LR``)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
    with paused_gc():
        return _build_view(graph, hierarchy, expanded, cancel, direction)


def _build_view(graph: Graph, hierarchy: Hierarchy | None, expanded: set[int] | None,
                cancel: CancelToken | None, direction: str) -> ViewGraph:
    n = len(graph.nodes)
    if hierarchy is not None:
        expanded = hierarchy.default_expanded() if expanded is None else expanded
        rep = hierarchy.representatives(expanded)
    else:
        expanded, rep = set(), np.arange(n)
    reps, item_of_node = np.unique(rep, return_inverse=True)
    items: list[Item] = []
    for r in reps.tolist():
        if r < n:
            node = graph.nodes[r]
            sub = node.name.rpartition("/")[2]
            if sub.lower() in node.type.lower():  # "encoder1/conv" on a Conv says nothing new
                sub = ""
            items.append(Item("node", r, _elide(node.type), _elide(sub), category(node.type, node.domain), node.name))
        else:
            g = hierarchy.groups[r - n]
            alike = hierarchy.alike.get(g.id, 0)
            sub = f"{g.size:,} nodes" + (f" · ×{alike} alike" if alike else "")
            items.append(Item("group", g.id, _elide(g.label), sub, "group", g.path))
    if cancel is not None:
        cancel.raise_if_cancelled()
    src, dst, names = graph.edges()
    e_src, e_dst = item_of_node[src], item_of_node[dst]
    differ = e_src != e_dst
    key = e_src[differ].astype(np.int64) * (len(items) + 1) + e_dst[differ]
    _, first = np.unique(key, return_index=True)
    kept = np.nonzero(differ)[0][np.sort(first)]
    edge_src, edge_dst = list(e_src[kept].tolist()), list(e_dst[kept].tolist())
    edge_values = [names[k] if items[e_src[k]].kind == "node" else "" for k in kept.tolist()]
    # Control edges between two drawn nodes (a pipeline's dataSource, an OM's control dependency).
    references = {i for i, k in enumerate(kept.tolist())
                  if not names[k] and items[e_src[k]].kind == "node" and items[e_dst[k]].kind == "node"}
    # Graph inputs and outputs as terminals.
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.nodes):
        # implicit inputs: an If/Loop whose bodies read a graph input is connected to it
        for name in (*node.inputs, *node.implicit_inputs):
            if name:
                consumers.setdefault(name, []).append(i)
    producers = graph.producers()
    for k, name in enumerate(graph.inputs):
        users = sorted({int(item_of_node[c]) for c in consumers.get(name, [])})
        items.append(Item("input", k, _elide(name), _elide(graph.value(name).shape_text()), "io", name))
        for u in users:
            edge_src.append(len(items) - 1), edge_dst.append(u), edge_values.append(name)
    # A subgraph's values from the outer scope (If/Loop bodies read them by name) as inputs too.
    outer = sorted(graph.free_values() - set(graph.inputs))
    for k, name in enumerate(outer, start=len(graph.inputs)):
        users = sorted({int(item_of_node[c]) for c in consumers.get(name, [])})
        if not users:
            continue
        items.append(Item("input", k, _elide(name), "outer · " + graph.value(name).shape_text(), "io", name))
        for u in users:
            edge_src.append(len(items) - 1), edge_dst.append(u), edge_values.append(name)
    for k, name in enumerate(graph.outputs):
        items.append(Item("output", k, _elide(name), _elide(graph.value(name).shape_text()), "io", name))
        if name in producers:
            edge_src.append(int(item_of_node[producers[name]])), edge_dst.append(len(items) - 1)
            edge_values.append(name)
    widths = np.array([max(MIN_W, CHAR_W * max(len(it.label), len(it.sublabel) * 0.85) + 18) for it in items])
    heights = np.array([GROUP_H if it.kind == "group" else NODE_H for it in items])
    src_a, dst_a = np.asarray(edge_src, dtype=np.int64), np.asarray(edge_dst, dtype=np.int64)
    across = direction == "LR"
    if across:  # laid out top to bottom with each box turned, then transposed (see layout.transposed)
        widths, heights = heights, widths
    if hierarchy is None:
        layout = layered_layout(widths, heights, src_a, dst_a, rank_sep=LR_COLUMN_GAP if across else RANK_SEP)
        view = ViewGraph(graph, items, transposed(layout) if across else layout, edge_values, item_of_node, set())
        view.references, view.direction = references, direction
        return view
    cluster = _clusters(hierarchy, items)
    parent_of = {}
    for g in set(cluster.tolist()) - {0}:
        while g != 0 and g not in parent_of:
            parent_of[g] = hierarchy.groups[g].parent
            g = parent_of[g]
    layout, frames = nested_layout(widths, heights, src_a, dst_a, cluster, parent_of, cancel,
                                   LEFT_TO_RIGHT_PADS if across else TOP_TO_BOTTOM_PADS,
                                   LR_COLUMN_GAP if across else RANK_SEP)
    if across:
        layout = transposed(layout)
        frames = {gid: (top, left, bottom, right) for gid, (left, top, right, bottom) in frames.items()}
    view = ViewGraph(graph, items, layout, edge_values, item_of_node, set(expanded))
    view.references, view.direction = references, direction
    view.frames = sorted(frames.items(), key=lambda f: (f[1][2] - f[1][0]) * (f[1][3] - f[1][1]), reverse=True)
    view.group_labels = {gid: f"{hierarchy.groups[gid].path}  ({hierarchy.groups[gid].size:,} nodes)" for gid in frames}
    view.group_short = {gid: f"{hierarchy.groups[gid].label} ({hierarchy.groups[gid].size:,})" for gid in frames}
    return view


def _clusters(hierarchy: Hierarchy, items: list[Item]) -> np.ndarray:
    """The innermost expanded group holding each item (0: the top level)."""
    cluster = np.zeros(len(items), dtype=np.int64)
    for i, item in enumerate(items):
        if item.kind == "node":
            cluster[i] = int(hierarchy.node_group[item.index])
        elif item.kind == "group":
            cluster[i] = max(hierarchy.groups[item.index].parent, 0)
    return cluster


def view_job(graph: Graph, hierarchy: Hierarchy | None, expanded: set[int] | None = None,
             cancel: CancelToken | None = None, direction: str = "TB") -> Generator[Progress, None, ViewGraph]:
    """Job: lay out the visible level of ``graph``."""
    yield Progress(None, f"laying out {graph.name}")
    view = build_view(graph, hierarchy, expanded, cancel, direction)
    yield Progress(1.0, f"laid out {len(view.items):,} items")
    return view
