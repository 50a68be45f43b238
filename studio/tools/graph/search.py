"""Find nodes (name, type, tensor names; substring or regex) and trace upstream/downstream."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from studio.core.errors import UserError
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


@dataclass(frozen=True)
class Match:
    """A node found by :func:`find_in_subgraphs`: ``trail`` leads from the searched graph to the graph
    holding it, as (subgraph, title) steps ("If_0 › else_branch"); empty for the searched graph."""

    graph: Graph
    index: int
    trail: tuple[tuple[Graph, str], ...] = ()

    @property
    def where(self) -> str:
        """Which subgraph the match is in ("" for the searched graph itself)."""
        return " › ".join(title for _, title in self.trail)


def subgraph_steps(node, slot: str) -> str:
    """The title of the step into ``node``'s subgraph ``slot``, as breadcrumbs show it."""
    return f"{node.name} › {slot}"


def _walk(root: Graph, cancel=None):
    """Every graph from ``root`` down (itself first; If/Loop bodies, functions, OM subgraphs), depth
    first and once each, with the steps from ``root`` to it."""
    stack: list[tuple[Graph, tuple]] = [(root, ())]
    seen: set[int] = set()
    while stack:
        g, trail = stack.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        if cancel is not None:
            cancel.raise_if_cancelled()
        yield g, trail
        children = [(sub, trail + ((sub, subgraph_steps(node, slot)),))
                    for node in g.nodes for slot, sub in node.subgraphs.items()]
        stack.extend(reversed(children))


def find_in_subgraphs(graph: Graph, query: str, regex: bool = False, cancel=None) -> list[Match]:
    """:func:`find_nodes` over ``graph`` and, depth first, every subgraph inside it (If/Loop bodies,
    function bodies, OM subgraphs); matches in ``graph`` itself come first."""
    return [Match(g, i, trail) for g, trail in _walk(graph, cancel) for i in find_nodes(g, query, regex)]


def subgraph_trail(root: Graph, target: Graph) -> list[tuple[Graph, str]] | None:
    """The steps from ``root`` down to ``target`` (every level, for breadcrumbs); None if not below."""
    return next((list(trail) for g, trail in _walk(root) if g is target), None)


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
