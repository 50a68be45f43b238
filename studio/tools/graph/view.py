"""What the canvas draws: the visible items of one graph (nodes, collapsed groups, graph inputs and
outputs), their edges, and their layout. Built by a job, off the GUI thread.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

import numpy as np

from studio.jobs import CancelToken, Progress
from studio.tools.graph.categories import category
from studio.tools.graph.grouping import Hierarchy
from studio.tools.graph.layout import RANK_SEP, Layout, add_layer_gaps, layered_layout
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
    frames: list[tuple[int, tuple[float, float, float, float]]] = field(default_factory=list)
    group_labels: dict[int, str] = field(default_factory=dict)  # expanded group id -> "path (N nodes)"
    group_short: dict[int, str] = field(default_factory=dict)   # expanded group id -> "label (N)"


def _elide(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[:MAX_LABEL - 1] + "…"


def build_view(graph: Graph, hierarchy: Hierarchy | None, expanded: set[int] | None = None,
               cancel: CancelToken | None = None) -> ViewGraph:
    """Compute visible items and lay them out."""
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
    # Graph inputs and outputs as terminals.
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name:
                consumers.setdefault(name, []).append(i)
    producers = graph.producers()
    for k, name in enumerate(graph.inputs):
        users = sorted({int(item_of_node[c]) for c in consumers.get(name, [])})
        items.append(Item("input", k, _elide(name), graph.value(name).shape_text(), "io", name))
        for u in users:
            edge_src.append(len(items) - 1), edge_dst.append(u), edge_values.append(name)
    for k, name in enumerate(graph.outputs):
        items.append(Item("output", k, _elide(name), graph.value(name).shape_text(), "io", name))
        if name in producers:
            edge_src.append(int(item_of_node[producers[name]])), edge_dst.append(len(items) - 1)
            edge_values.append(name)
    widths = np.array([max(MIN_W, CHAR_W * max(len(it.label), len(it.sublabel) * 0.85) + 18) for it in items])
    heights = np.array([GROUP_H if it.kind == "group" else NODE_H for it in items])
    layout = layered_layout(widths, heights, np.asarray(edge_src, dtype=np.int64), np.asarray(edge_dst, dtype=np.int64))
    view = ViewGraph(graph, items, layout, edge_values, item_of_node, set(expanded))
    if hierarchy is not None:
        view.frames = _frames(hierarchy, view, expanded, n)
        view.group_labels = {gid: f"{hierarchy.groups[gid].path}  ({hierarchy.groups[gid].size:,} nodes)"
                             for gid, _ in view.frames}
        view.group_short = {gid: f"{hierarchy.groups[gid].label} ({hierarchy.groups[gid].size:,})"
                            for gid, _ in view.frames}
    return view


def _frame_members(hierarchy: Hierarchy, view: ViewGraph, expanded: set[int]) -> list[tuple[int, np.ndarray, int]]:
    """(group id, item indices inside, nesting depth below) for each expanded group."""
    nest: dict[int, int] = {}

    def depth_below(gid: int) -> int:
        if gid not in nest:
            kids = [c for c in hierarchy.groups[gid].groups if c in expanded]
            nest[gid] = 1 + max(depth_below(c) for c in kids) if kids else 0
        return nest[gid]

    out = []
    for gid in expanded:
        if gid == 0 or hierarchy.groups[gid].parent == -2:
            continue
        members = []
        stack = [gid]
        while stack:
            g = hierarchy.groups[stack.pop()]
            members += g.nodes
            stack += g.groups
        if members:
            out.append((gid, np.unique(view.item_of_node[np.asarray(members)]), depth_below(gid)))
    return out


def _pads(depth: int) -> tuple[float, float, float]:
    """(side, above, below) padding of a frame holding ``depth`` levels of frames."""
    return 8 + 7 * depth, 16 + 13 * depth, 5 + 4 * depth


def _frames(hierarchy: Hierarchy, view: ViewGraph, expanded: set[int], n: int):
    """Bounding boxes of expanded groups (drawn as light frames with the group's name).

    A frame holding other frames gets more padding, so nested labels stack instead of overlapping;
    layers are first moved apart where frames begin and end so frames do not cover other layers.
    """
    lay = view.layout
    members = _frame_members(hierarchy, view, expanded)
    if not members:
        return []
    layers_n = int(lay.layer.max()) + 1
    need_above = np.zeros(layers_n)
    need_below = np.zeros(layers_n)
    for _, idx, depth in members:
        _, above, below = _pads(depth)
        lo, hi = int(lay.layer[idx].min()), int(lay.layer[idx].max())
        need_above[lo] = max(need_above[lo], above)
        need_below[hi] = max(need_below[hi], below)
    needed = need_above + np.concatenate([[0.0], need_below[:-1]]) + 6
    add_layer_gaps(lay, np.maximum(needed - RANK_SEP, 0))
    left, right = lay.x - lay.width / 2, lay.x + lay.width / 2
    top, bottom = lay.y - lay.height / 2, lay.y + lay.height / 2
    frames = []
    for gid, idx, depth in members:
        side, above, below = _pads(depth)
        frames.append((gid, (float(left[idx].min()) - side, float(top[idx].min()) - above,
                             float(right[idx].max()) + side, float(bottom[idx].max()) + below)))
    frames.sort(key=lambda f: (f[1][2] - f[1][0]) * (f[1][3] - f[1][1]), reverse=True)
    return frames


def view_job(graph: Graph, hierarchy: Hierarchy | None, expanded: set[int] | None = None,
             cancel: CancelToken | None = None) -> Generator[Progress, None, ViewGraph]:
    """Job: lay out the visible level of ``graph``."""
    yield Progress(None, f"laying out {graph.name}")
    view = build_view(graph, hierarchy, expanded, cancel)
    yield Progress(1.0, f"laid out {len(view.items):,} items")
    return view
