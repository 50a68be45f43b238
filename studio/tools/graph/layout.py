"""A layered (Sugiyama-style) top-to-bottom layout written with numpy.

Steps: break cycles (edges against a topological order are reversed), longest-path layering with
sources pulled down next to their consumers, dummy nodes for edges that span several layers
(within a budget: the longest edges beyond it are drawn direct), barycenter ordering sweeps, and
coordinate assignment by repeated neighbour averaging projected onto the "no overlap" constraint of
each layer. Every sweep works on all layers at once (Jacobi style), so the cost is a few numpy
passes over the nodes and edges, not a Python loop per layer.

No GPL layout library is used (OGDF, igraph and grandalf are GPL); see graph_viewer.md §3.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

NODE_SEP = 24.0   # horizontal gap between neighbours in a layer
RANK_SEP = 36.0   # vertical gap between layers
PORT_SEP = 14.0   # after a layer of zero-height ports (see nested.py)
DUMMY_WIDTH = 8.0
DUMMY_BUDGET = 4  # at most this many dummy nodes per real node
ORDER_SWEEPS = 8
POSITION_SWEEPS = 24


@dataclass
class Layout:
    """Positions of laid-out nodes (centres) and edge polylines.

    ``edge_points[edge_offsets[k]:edge_offsets[k+1]]`` are the points of edge k (src -> dst).
    """

    x: np.ndarray
    y: np.ndarray
    width: np.ndarray
    height: np.ndarray
    layer: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_points: np.ndarray
    edge_offsets: np.ndarray

    @cached_property
    def bounds(self) -> tuple[float, float, float, float]:
        """(left, top, right, bottom) of everything laid out (a layout is not changed once made)."""
        if self.x.size == 0:
            return (0.0, 0.0, 1.0, 1.0)
        left, top = float((self.x - self.width / 2).min()), float((self.y - self.height / 2).min())
        right, bottom = float((self.x + self.width / 2).max()), float((self.y + self.height / 2).max())
        if self.edge_points.size:  # routed edges may swing wider than the boxes
            left = min(left, float(self.edge_points[:, 0].min()) - 4)
            right = max(right, float(self.edge_points[:, 0].max()) + 4)
        return (left, top, right, bottom)

    def edge_polyline(self, k: int) -> np.ndarray:
        return self.edge_points[self.edge_offsets[k]:self.edge_offsets[k + 1]]


def _topological_order(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Kahn's order; nodes on cycles are appended in index order (their back edges get reversed)."""
    indeg = np.bincount(dst, minlength=n).astype(np.int64)
    order_idx = np.argsort(src, kind="stable")
    starts = np.searchsorted(src[order_idx], np.arange(n + 1))
    succ = dst[order_idx].tolist()
    starts_l = starts.tolist()
    indeg_l = indeg.tolist()
    ready = [v for v in range(n) if indeg_l[v] == 0]
    ready.reverse()
    order: list[int] = []
    done = bytearray(n)
    while len(order) < n:
        while ready:
            v = ready.pop()
            if done[v]:
                continue
            done[v] = 1
            order.append(v)
            new = []
            for w in succ[starts_l[v]:starts_l[v + 1]]:
                indeg_l[w] -= 1
                if indeg_l[w] == 0:
                    new.append(w)
            new.reverse()
            ready.extend(new)  # depth first: a chain is laid out before its siblings
        if len(order) < n:  # a cycle: take the first unplaced node
            for v in range(n):
                if not done[v]:
                    indeg_l[v] = 0
                    ready.append(v)
                    break
    return np.asarray(order, dtype=np.int64)


def _layers(n: int, src: np.ndarray, dst: np.ndarray, order: np.ndarray, pull_sources: bool = True) -> np.ndarray:
    """Longest-path layering along ``order``; sources then sit right above their first consumer."""
    layer = [0] * n
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    by_dst = np.argsort(pos[dst], kind="stable")
    s_l, d_l = src[by_dst].tolist(), dst[by_dst].tolist()
    for s, d in zip(s_l, d_l):  # edges sorted by their target's place in the order
        if layer[s] + 1 > layer[d]:
            layer[d] = layer[s] + 1
    layer_a = np.asarray(layer, dtype=np.int64)
    if src.size and pull_sources:
        indeg = np.bincount(dst, minlength=n)
        sources = indeg[src] == 0  # edges leaving a source
        if sources.any():
            best = np.full(n, np.iinfo(np.int64).max)
            np.minimum.at(best, src[sources], layer_a[dst[sources]] - 1)
            pull = (indeg == 0) & (best < np.iinfo(np.int64).max)
            layer_a[pull] = np.maximum(best[pull], 0)
    return layer_a


def layered_layout(widths, heights, src, dst, pull_sources: bool = True, rank_sep: float = RANK_SEP) -> Layout:
    """Lay out ``len(widths)`` nodes with directed edges ``src[k] -> dst[k]`` top to bottom,
    ``rank_sep`` apart from one layer to the next.

    With ``pull_sources`` a node without inputs (a graph input, a constant) sits right above its
    first consumer; without, it stays in the top layer (inside a group, such nodes are fed from
    outside the frame, which is above).
    """
    widths = np.asarray(widths, dtype=np.float64)
    heights = np.asarray(heights, dtype=np.float64)
    n = widths.size
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    keep = src != dst  # self loops are drawn as plain edges but do not shape the layout
    if n == 0:
        empty = np.zeros(0)
        return Layout(empty, empty, empty, empty, empty.astype(int), src, dst, np.zeros((0, 2)), np.zeros(1, int))
    order = _topological_order(n, src[keep], dst[keep])
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    # Orient every edge along the order: back edges (cycles) are reversed for layout.
    flip = pos[src] > pos[dst]
    a = np.where(flip, dst, src)
    b = np.where(flip, src, dst)
    layer = _layers(n, a[keep], b[keep], order, pull_sources)

    # Dummy chains for long edges, shortest first, within a budget.
    span = np.where(keep, layer[b] - layer[a], 0)
    long_edges = np.nonzero(span > 1)[0]
    long_edges = long_edges[np.argsort(span[long_edges], kind="stable")]
    budget = DUMMY_BUDGET * n + 64
    cost = np.cumsum(span[long_edges] - 1)
    chained = long_edges[cost <= budget]
    chain_len = span[chained] - 1
    total_dummies = int(chain_len.sum())
    v_total = n + total_dummies
    v_layer = np.concatenate([layer, np.zeros(total_dummies, dtype=np.int64)])
    v_width = np.concatenate([widths, np.full(total_dummies, DUMMY_WIDTH)])
    chain_start = n + np.concatenate([[0], np.cumsum(chain_len)[:-1]]).astype(np.int64) if chained.size else np.zeros(0, int)
    # Virtual edges: every non-chained edge as is, chained ones as src -> d1 -> ... -> dk -> dst.
    direct = np.ones(src.size, dtype=bool)
    direct[chained] = False
    direct &= keep
    ve_a = [a[direct]]
    ve_b = [b[direct]]
    if chained.size:
        edge_of_dummy = np.repeat(np.arange(chained.size), chain_len)
        step = np.arange(total_dummies) - np.repeat(chain_start - n, chain_len)  # 0..k-1 inside a chain
        dummy_ids = n + np.arange(total_dummies)
        v_layer[dummy_ids] = layer[a[chained]][edge_of_dummy] + 1 + step
        prev = np.where(step == 0, a[chained][edge_of_dummy], dummy_ids - 1)
        ve_a.append(prev)
        ve_b.append(dummy_ids)
        last = chain_start + chain_len - 1
        ve_a.append(last)
        ve_b.append(b[chained])
    va = np.concatenate(ve_a)
    vb = np.concatenate(ve_b)

    # Ordering: start from the topological order, then barycenter sweeps over all layers at once.
    init = np.concatenate([pos.astype(np.float64), np.zeros(total_dummies)])
    if chained.size:
        init[n:] = pos[a[chained]][edge_of_dummy] + 0.5
    rank_in_layer = _rank_within_layers(v_layer, init)
    for sweep in range(ORDER_SWEEPS):
        if sweep % 2 == 0:  # downwards: look at predecessors
            key = _barycenter(v_total, va, vb, rank_in_layer)
        else:
            key = _barycenter(v_total, vb, va, rank_in_layer)
        rank_in_layer = _rank_within_layers(v_layer, key + rank_in_layer * 1e-6)

    # Coordinates.
    x = _assign_x(v_total, v_layer, rank_in_layer, v_width, va, vb)
    layers_n = int(v_layer.max()) + 1
    layer_h = np.zeros(layers_n)
    np.maximum.at(layer_h, layer, heights)
    # A layer of zero height holds only the ports of a nested layout: a short step is enough there.
    advance = np.where(layer_h > 0, layer_h + rank_sep, PORT_SEP)
    tops = np.concatenate([[0.0], np.cumsum(advance)[:-1]])
    y_all = tops[v_layer] + layer_h[v_layer] / 2

    # Edge polylines: src bottom, dummies, dst top (in the edge's real direction).
    m = src.size
    counts = np.full(m, 2, dtype=np.int64)
    if chained.size:
        counts[chained] += chain_len
    offsets = np.concatenate([[0], np.cumsum(counts)])
    pts = np.zeros((int(offsets[-1]), 2))
    sx, sy = x[a], y_all[a] + heights[a] / 2
    dx, dy = x[b], y_all[b] - heights[b] / 2
    pts[offsets[:-1], 0], pts[offsets[:-1], 1] = sx, sy
    pts[offsets[1:] - 1, 0], pts[offsets[1:] - 1, 1] = dx, dy
    if chained.size:
        slot = np.repeat(offsets[chained] + 1, chain_len) + step
        pts[slot, 0] = x[n:]
        pts[slot, 1] = y_all[n:]
    # Reversed (cycle) edges are stored in their true direction.
    for k in np.nonzero(flip & keep)[0]:
        seg = pts[offsets[k]:offsets[k + 1]]
        pts[offsets[k]:offsets[k + 1]] = seg[::-1]
    return Layout(x[:n], y_all[:n], widths, heights, layer, src, dst, pts, offsets)


def _barycenter(v_total, from_nodes, to_nodes, rank):
    """Mean rank of each node's neighbours along (from -> to); nodes without any keep their rank."""
    total = np.bincount(to_nodes, weights=rank[from_nodes], minlength=v_total)
    count = np.bincount(to_nodes, minlength=v_total)
    return np.where(count > 0, total / np.maximum(count, 1), rank)


def _rank_within_layers(layer, key):
    """0-based place of each node inside its layer when sorted by key."""
    order = np.lexsort((key, layer))
    sorted_layer = layer[order]
    starts = np.searchsorted(sorted_layer, sorted_layer, side="left")
    rank = np.empty(layer.size, dtype=np.float64)
    rank[order] = np.arange(layer.size) - starts
    return rank


def _assign_x(v_total, layer, rank, width, va, vb):
    """x centres: pack each layer, then pull nodes towards their neighbours without overlaps."""
    order = np.lexsort((rank, layer))  # nodes sorted by layer, then place in layer
    lay_sorted = layer[order]
    w_sorted = width[order]
    first = np.r_[True, lay_sorted[1:] != lay_sorted[:-1]]
    # Minimum distance between centres of consecutive nodes in a layer.
    gap = np.where(first, 0.0, (np.r_[0.0, w_sorted[:-1]] + w_sorted) / 2 + NODE_SEP)
    seg_id = np.cumsum(first) - 1
    cum = np.cumsum(gap)
    offset = cum - cum[np.nonzero(first)[0]][seg_id]  # packed positions from 0 in each layer
    x_sorted = offset - _segment_mean(offset, seg_id)  # centre each layer on 0
    x = np.empty(v_total)
    x[order] = x_sorted
    weight = np.ones(va.size)
    for sweep in range(POSITION_SWEEPS):
        mode = sweep % 3
        if mode == 0:
            frm, to = va, vb
        elif mode == 1:
            frm, to = vb, va
        else:
            frm, to = np.concatenate([va, vb]), np.concatenate([vb, va])
        w = weight if mode < 2 else np.concatenate([weight, weight])
        total = np.bincount(to, weights=x[frm] * w, minlength=v_total)
        count = np.bincount(to, weights=w, minlength=v_total)
        desired = np.where(count > 0, total / np.maximum(count, 1e-9), x)
        x = _project(desired[order], offset, seg_id, order, v_total)
    return x - x.min() + width.max() / 2 if v_total else x


def _segment_mean(values, seg_id):
    sums = np.bincount(seg_id, weights=values)
    counts = np.bincount(seg_id)
    return (sums / counts)[seg_id]


def _project(desired_sorted, offset, seg_id, order, v_total):
    """Closest-ish positions keeping each layer's order and gaps: x - offset must not decrease.

    The average of the running maximum (pushing right) and the reversed running minimum (pushing
    left) of ``desired - offset`` is non-decreasing in each layer, so it keeps the gaps.
    """
    y = desired_sorted - offset
    span = float(np.abs(y).max()) * 4 + 1.0
    shifted = y + seg_id * span  # segments made increasing so one global cummax works per layer
    fwd = np.maximum.accumulate(shifted) - seg_id * span
    bwd = np.minimum.accumulate(shifted[::-1])[::-1] - seg_id * span
    x_sorted = (fwd + bwd) / 2 + offset
    x = np.empty(v_total)
    x[order] = x_sorted
    return x



def transposed(layout: Layout) -> Layout:
    """``layout`` with x and y swapped: a top-to-bottom layout made with each node's width and
    height exchanged becomes the left-to-right layout of the real boxes (layers become columns,
    edges leave a box on its right and enter the next on its left)."""
    return Layout(layout.y.copy(), layout.x.copy(), layout.height.copy(), layout.width.copy(), layout.layer,
                  layout.edge_src, layout.edge_dst, layout.edge_points[:, ::-1].copy(), layout.edge_offsets)
