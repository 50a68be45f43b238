"""Nested layout: every expanded group is laid out on its own and placed as one box in its parent.

Like Model Explorer: a group's children (nodes, collapsed groups, expanded groups as boxes of their
own layout's size) are laid out with :func:`layered_layout`, bottom-up; frames then never overlap and
a group's content stays together. An edge between two items is routed through the layout of the
innermost group containing both (their lowest common ancestor), and from/to the items themselves
inside expanded children. Each group's layout is small, so the cost grows with the number of
expanded groups, not with the square of anything.
"""

from __future__ import annotations

import numpy as np

from studio.tools.graph.layout import RANK_SEP, Layout, layered_layout

FRAME_SIDE = 10.0
FRAME_TOP = 22.0  # room for the group's name
FRAME_BOTTOM = 10.0
PORT_WIDTH = 4.0  # the "in" / "out" nodes where edges enter and leave a group's layout
# Room around a frame's content in layout coordinates: (left, right, top, bottom). A left-to-right
# view is laid out top to bottom and transposed, so its name strip is the layout's left side.
TOP_TO_BOTTOM_PADS = (FRAME_SIDE, FRAME_SIDE, FRAME_TOP, FRAME_BOTTOM)
LEFT_TO_RIGHT_PADS = (FRAME_TOP, FRAME_BOTTOM, FRAME_SIDE, FRAME_SIDE)


def nested_layout(widths, heights, src, dst, cluster, parent_of: dict[int, int], cancel=None,
                  pads: tuple[float, float, float, float] = TOP_TO_BOTTOM_PADS, rank_sep: float = RANK_SEP
                  ) -> tuple[Layout, dict[int, tuple[float, float, float, float]]]:
    """Lay out items whose innermost expanded group is ``cluster[i]`` (0 = top level).

    ``parent_of`` maps every expanded group id (except 0) to its parent's id. Returns the layout of
    the items (absolute coordinates, edges as polylines) and each expanded group's frame rectangle.
    ``pads`` is the room (left, right, top, bottom) between a frame and its content; ``rank_sep``
    the gap between layers.
    """
    pad_left, pad_right, pad_top, pad_bottom = pads
    widths = np.asarray(widths, dtype=np.float64)
    heights = np.asarray(heights, dtype=np.float64)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    cluster = np.asarray(cluster, dtype=np.int64)
    n = widths.size
    depth = {0: 0}

    def depth_of(g: int) -> int:
        if g not in depth:
            depth[g] = depth_of(parent_of[g]) + 1
        return depth[g]

    groups = set(cluster.tolist()) | {0}
    for g in list(groups):
        while g != 0:
            groups.add(g)
            g = parent_of[g]
    for g in groups:
        depth_of(g)
    # Local nodes of every group: its own items, then its expanded child groups.
    local: dict[int, list[tuple[str, int]]] = {g: [] for g in groups}
    for i, g in enumerate(cluster.tolist()):
        local[g].append(("i", i))
    for g in sorted(groups - {0}):
        local[parent_of[g]].append(("g", g))
    index: dict[int, dict[tuple[str, int], int]] = {g: {key: k for k, key in enumerate(keys)}
                                                    for g, keys in local.items()}

    # Every item edge becomes a chain of local edges: up through the groups holding its source
    # (to each group's "out" port), across the lowest common ancestor, and down through the groups
    # holding its target (from each group's "in" port). Ports are zero-size nodes of the group's own
    # layout, so an edge enters and leaves a frame along routed paths instead of cutting across it.
    local_edges: dict[int, dict[tuple[int, int], int]] = {g: {} for g in groups}

    def node_index(g: int, key: tuple[str, int]) -> int:
        k = index[g].get(key)
        if k is None:  # a port, added the first time an edge needs it
            k = index[g][key] = len(local[g])
            local[g].append(key)
        return k

    def local_edge(g: int, u: tuple[str, int], v: tuple[str, int]) -> tuple[int, int]:
        edges = local_edges[g]
        return g, edges.setdefault((node_index(g, u), node_index(g, v)), len(edges))

    route: list[list[tuple[int, int]]] = []
    for a, b in zip(src.tolist(), dst.tolist()):
        ga, gb = int(cluster[a]), int(cluster[b])
        while depth[ga] > depth[gb]:
            ga = parent_of[ga]
        while depth[gb] > depth[ga]:
            gb = parent_of[gb]
        while ga != gb:
            ga, gb = parent_of[ga], parent_of[gb]
        lca = ga
        segments = []
        g, node = int(cluster[a]), ("i", a)
        while g != lca:
            segments.append(local_edge(g, node, ("out", g)))
            node, g = ("g", g), parent_of[g]
        down = []
        g, target = int(cluster[b]), ("i", b)
        while g != lca:
            down.append((g, target))
            target, g = ("g", g), parent_of[g]
        segments.append(local_edge(lca, node, target))
        for g, target in reversed(down):
            segments.append(local_edge(g, ("in", g), target))
        route.append(segments)
    # Bottom-up: deepest groups first, so a child's frame size is known before its parent is laid out.
    size: dict[int, tuple[float, float]] = {}
    layouts: dict[int, Layout] = {}
    cache: dict[tuple, Layout] = {}
    for g in sorted(groups, key=lambda g: -depth[g]):
        if cancel is not None:
            cancel.raise_if_cancelled()
        keys = local[g]
        w = np.array([widths[v] if kind == "i" else size[v][0] if kind == "g" else PORT_WIDTH for kind, v in keys])
        h = np.array([heights[v] if kind == "i" else size[v][1] if kind == "g" else 0.0 for kind, v in keys])
        pairs = list(local_edges[g])
        ls = np.array([p[0] for p in pairs], dtype=np.int64)
        ld = np.array([p[1] for p in pairs], dtype=np.int64)
        # Repeated blocks (every layer of a transformer) have the same local graph: lay it out once.
        key = (w.tobytes(), h.tobytes(), ls.tobytes(), ld.tobytes())
        lay = cache.get(key)
        if lay is None:
            # Inside a frame, nodes fed from outside stay at the top, where their edges come in.
            lay = cache[key] = layered_layout(w, h, ls, ld, pull_sources=(g == 0), rank_sep=rank_sep)
        layouts[g] = lay
        left, top, right, bottom = lay.bounds
        size[g] = (right - left + pad_left + pad_right, bottom - top + pad_top + pad_bottom)
    # Top-down: absolute offsets (local -> absolute is local - local top-left + origin).
    origin: dict[int, tuple[float, float]] = {0: (0.0, 0.0)}
    frames: dict[int, tuple[float, float, float, float]] = {}
    x, y = np.zeros(n), np.zeros(n)
    for g in sorted(groups, key=lambda g: depth[g]):
        lay = layouts[g]
        left, top, _, _ = lay.bounds
        ox, oy = origin[g][0] - left, origin[g][1] - top
        for k, (kind, v) in enumerate(local[g]):
            cx, cy = lay.x[k] + ox, lay.y[k] + oy
            if kind == "i":
                x[v], y[v] = cx, cy
            elif kind == "g":
                fw, fh = size[v]
                frames[v] = (cx - fw / 2, cy - fh / 2, cx + fw / 2, cy + fh / 2)
                origin[v] = (cx - fw / 2 + pad_left, cy - fh / 2 + pad_top)
    # Edge polylines: the local routes of every segment, in absolute coordinates, joined.
    shift = {}
    for g, lay in layouts.items():
        left, top, _, _ = lay.bounds
        shift[g] = (origin[g][0] - left, origin[g][1] - top)
    paths = [np.vstack([layouts[g].edge_polyline(k) + shift[g] for g, k in segments]) for segments in route]
    counts = np.array([len(p) for p in paths], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    points = np.vstack(paths) if paths else np.zeros((0, 2))
    layer = np.unique(np.round(y - heights / 2, 1), return_inverse=True)[1].ravel() if n else np.zeros(0, int)
    return Layout(x, y, widths, heights, layer, src, dst, points, offsets), frames
