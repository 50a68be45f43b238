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

from studio.tools.graph.layout import Layout, layered_layout

FRAME_SIDE = 10.0
FRAME_TOP = 22.0  # room for the group's name
FRAME_BOTTOM = 10.0


def nested_layout(widths, heights, src, dst, cluster, parent_of: dict[int, int], cancel=None
                  ) -> tuple[Layout, dict[int, tuple[float, float, float, float]]]:
    """Lay out items whose innermost expanded group is ``cluster[i]`` (0 = top level).

    ``parent_of`` maps every expanded group id (except 0) to its parent's id. Returns the layout of
    the items (absolute coordinates, edges as polylines) and each expanded group's frame rectangle.
    """
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
    index = {g: {key: k for k, key in enumerate(keys)} for g, keys in local.items()}

    def child_in(item: int, anc: int) -> tuple[str, int]:
        g = int(cluster[item])
        if g == anc:
            return ("i", item)
        while parent_of[g] != anc:
            g = parent_of[g]
        return ("g", g)

    # Every item edge becomes one local edge of its lowest common ancestor group (deduplicated).
    local_edges: dict[int, dict[tuple[int, int], int]] = {g: {} for g in groups}
    route: list[tuple[int, int, bool, bool]] = []
    for a, b in zip(src.tolist(), dst.tolist()):
        ga, gb = int(cluster[a]), int(cluster[b])
        while depth[ga] > depth[gb]:
            ga = parent_of[ga]
        while depth[gb] > depth[ga]:
            gb = parent_of[gb]
        while ga != gb:
            ga, gb = parent_of[ga], parent_of[gb]
        lca = ga
        ca, cb = child_in(a, lca), child_in(b, lca)
        pair = (index[lca][ca], index[lca][cb])
        edges = local_edges[lca]
        k = edges.setdefault(pair, len(edges))
        route.append((lca, k, ca[0] == "g", cb[0] == "g"))
    # Bottom-up: deepest groups first, so a child's frame size is known before its parent is laid out.
    size: dict[int, tuple[float, float]] = {}
    layouts: dict[int, Layout] = {}
    cache: dict[tuple, Layout] = {}
    for g in sorted(groups, key=lambda g: -depth[g]):
        if cancel is not None:
            cancel.raise_if_cancelled()
        keys = local[g]
        w = np.array([widths[v] if kind == "i" else size[v][0] for kind, v in keys])
        h = np.array([heights[v] if kind == "i" else size[v][1] for kind, v in keys])
        pairs = list(local_edges[g])
        ls = np.array([p[0] for p in pairs], dtype=np.int64)
        ld = np.array([p[1] for p in pairs], dtype=np.int64)
        # Repeated blocks (every layer of a transformer) have the same local graph: lay it out once.
        key = (w.tobytes(), h.tobytes(), ls.tobytes(), ld.tobytes())
        lay = cache.get(key)
        if lay is None:
            lay = cache[key] = layered_layout(w, h, ls, ld)
        layouts[g] = lay
        left, top, right, bottom = lay.bounds
        size[g] = (right - left + 2 * FRAME_SIDE, bottom - top + FRAME_TOP + FRAME_BOTTOM)
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
            else:
                fw, fh = size[v]
                frames[v] = (cx - fw / 2, cy - fh / 2, cx + fw / 2, cy + fh / 2)
                origin[v] = (cx - fw / 2 + FRAME_SIDE, cy - fh / 2 + FRAME_TOP)
    # Edge polylines: the LCA's route, extended into expanded children to the real items.
    paths = []
    for e, (lca, k, a_in_group, b_in_group) in enumerate(route):
        lay = layouts[lca]
        left, top, _, _ = lay.bounds
        pts = lay.edge_polyline(k) + (origin[lca][0] - left, origin[lca][1] - top)
        a, b = int(src[e]), int(dst[e])
        start = [(x[a], y[a] + heights[a] / 2)] if a_in_group else []
        end = [(x[b], y[b] - heights[b] / 2)] if b_in_group else []
        paths.append(np.vstack([np.array(start).reshape(-1, 2), pts, np.array(end).reshape(-1, 2)]))
    counts = np.array([len(p) for p in paths], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    points = np.vstack(paths) if paths else np.zeros((0, 2))
    layer = np.unique(np.round(y - heights / 2, 1), return_inverse=True)[1].ravel() if n else np.zeros(0, int)
    return Layout(x, y, widths, heights, layer, src, dst, points, offsets), frames
