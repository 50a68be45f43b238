"""Find nodes (name, type, tensor names; substring or regex) and trace upstream/downstream."""

from __future__ import annotations

import re

import numpy as np

from studio.errors import UserError
from studio.tools.graph.model import Graph


def find_nodes(graph: Graph, query: str, regex: bool = False) -> list[int]:
    """Indices of nodes matching ``query``.

    Substring mode (like Netron): case-insensitive, every space-separated term must match the node's
    name, type or one of its input/output tensor names; a quoted query matches exactly. Regex mode:
    ``re.search`` over the same fields.
    """
    query = query.strip()
    if not query:
        return []
    if regex:
        try:
            pattern = re.compile(query, re.IGNORECASE)
        except re.error as exc:
            raise UserError(f"Invalid regular expression: {exc}", query, "Fix the pattern or untick 'Regex'.") from exc
        return [i for i, n in enumerate(graph.nodes)
                if any(pattern.search(f) for f in (n.name, n.type, *n.inputs, *n.outputs) if f)]
    if len(query) > 1 and query[0] == query[-1] and query[0] in "'\"":
        exact = query[1:-1]
        return [i for i, n in enumerate(graph.nodes) if exact in (n.name, n.type, *n.inputs, *n.outputs)]
    terms = query.lower().split()
    out = []
    for i, n in enumerate(graph.nodes):
        fields = " \n ".join((n.name, n.type, *n.inputs, *n.outputs)).lower()
        if all(t in fields for t in terms):
            out.append(i)
    return out


def trace(graph: Graph, start: int, downstream: bool) -> set[int]:
    """Nodes reachable from ``start`` along edges (downstream) or against them (upstream), start included."""
    src, dst, _ = graph.edges()
    a, b = (src, dst) if downstream else (dst, src)
    order = np.argsort(a, kind="stable")
    a_sorted, b_sorted = a[order], b[order]
    n = len(graph.nodes)
    starts = np.searchsorted(a_sorted, np.arange(n + 1))
    seen = {start}
    stack = [start]
    while stack:
        v = stack.pop()
        for w in b_sorted[starts[v]:starts[v + 1]].tolist():
            if w not in seen:
                seen.add(w)
                stack.append(w)
    return seen


def resolve_node(graph: Graph, name: str) -> int | None:
    """The node a profiler / accuracy name refers to: exact name, output tensor, then name suffix."""
    index = graph.node_index()
    if name in index:
        return index[name]
    producers = graph.producers()
    for candidate in (name, f"{name}:0"):
        if candidate in producers:
            return producers[candidate]
    tail = name.replace("/", "_")
    for i, node in enumerate(graph.nodes):
        if node.name.endswith(name) or node.name.replace("/", "_") == tail:
            return i
    return None
