"""Scope groups from node names (``a/b/op`` lives in group ``a`` > ``a/b``), expand/collapse, sections.

Like Model Explorer: a collapsed group is one box; only the visible level is laid out; a level with
more than ``SECTION_LIMIT`` children is split into ``section i of n`` groups, each a contiguous
slice of the graph's order. Graphs without scoped names still get sections, so a flat
100,000-node graph opens as 100 boxes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from studio.tools.graph.model import Graph

SECTION_LIMIT = 1000
EXPAND_LIMIT = 400  # the first view expands groups while fewer items than this are visible


@dataclass
class Group:
    """A scope group. ``nodes`` are direct member nodes, ``groups`` direct child groups."""

    id: int
    path: str
    label: str
    parent: int
    nodes: list[int] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    size: int = 0  # all nodes below
    first: int = 0  # smallest node index below (keeps file order when sorting)


class Hierarchy:
    """The group tree of one graph. Group 0 is the root (always expanded)."""

    def __init__(self, graph: Graph, section_limit: int = SECTION_LIMIT):
        self.graph = graph
        n = len(graph.nodes)
        self.groups: list[Group] = [Group(0, "", graph.name, -1)]
        by_path: dict[str, int] = {"": 0}
        node_group = np.zeros(n, dtype=np.int64)
        for i, node in enumerate(graph.nodes):
            scope = node.name.rpartition("/")[0]
            gid = by_path.get(scope)
            if gid is None:
                gid = self._make_path(scope, by_path)
            node_group[i] = gid
        self.node_group = node_group
        for i, gid in enumerate(node_group.tolist()):
            self.groups[gid].nodes.append(i)
        self._sizes()
        self._dissolve_small()
        self._sections(section_limit)
        self._sizes()
        self.alike = self._repeats()

    def _repeats(self) -> dict[int, int]:
        """Group id -> how many groups share its structure (op types in file order), for those repeated.

        Transformer layers and ResNet blocks show up as "x24 alike", like Model Explorer's
        identical-layer finder, at the cost of one pass over the nodes.
        """
        ops = [n.type for n in self.graph.nodes]
        signature: dict[int, tuple] = {}
        # Children before parents, by the tree (not by id): sections are created after the groups
        # they hold, so their ids are larger than their children's.
        for gid in reversed(self._top_down()):
            g = self.groups[gid]
            parts = [("n", ops[i]) for i in sorted(g.nodes)]
            parts += [("g", signature[c]) for c in sorted(g.groups, key=lambda c: self.groups[c].first)]
            signature[g.id] = (len(g.nodes), tuple(parts))
        counts: dict[tuple, int] = {}
        for gid, sig in signature.items():
            if gid and self.groups[gid].size > 1:
                counts[sig] = counts.get(sig, 0) + 1
        return {gid: counts[sig] for gid, sig in signature.items() if gid and counts.get(sig, 0) > 1}

    def _make_path(self, path: str, by_path: dict[str, int]) -> int:
        parent_path, _, label = path.rpartition("/")
        parent = by_path.get(parent_path)
        if parent is None:
            parent = self._make_path(parent_path, by_path)
        gid = len(self.groups)
        self.groups.append(Group(gid, path, label or path, parent))
        self.groups[parent].groups.append(gid)
        by_path[path] = gid
        return gid

    def _sizes(self) -> None:
        for g in self.groups:
            g.size = len(g.nodes)
            g.first = min(g.nodes) if g.nodes else 1 << 62
        for g in reversed(self.groups):  # children are created after their parents
            if g.parent >= 0:
                p = self.groups[g.parent]
                p.size += g.size
                p.first = min(p.first, g.first)

    def _dissolve_small(self) -> None:
        """A group holding a single node (or one child group and nothing else) adds nothing: lift it."""
        for g in reversed(self.groups[1:]):
            if g.size <= 1 or (not g.nodes and len(g.groups) == 1):
                parent = self.groups[g.parent]
                parent.groups.remove(g.id)
                parent.nodes += g.nodes
                parent.groups += g.groups
                for child in g.groups:
                    self.groups[child].parent = parent.id
                    if not g.nodes:
                        self.groups[child].label = f"{g.label}/{self.groups[child].label}"
                self.node_group[g.nodes] = parent.id
                g.nodes, g.groups, g.parent = [], [], -2  # dead
        # Renumber is not needed: dead groups are never reachable from the root.

    def _sections(self, limit: int) -> None:
        stack = [0]
        while stack:
            g = self.groups[stack.pop()]
            children = [("g", c) for c in g.groups] + [("n", i) for i in g.nodes]
            if len(children) > limit:
                children.sort(key=lambda c: self.groups[c[1]].first if c[0] == "g" else c[1])
                chunks = [children[k:k + limit] for k in range(0, len(children), limit)]
                g.groups, g.nodes = [], []
                for k, chunk in enumerate(chunks):
                    sid = len(self.groups)
                    label = f"section {k + 1} of {len(chunks)}"  # one spelling in boxes, frames and paths
                    section = Group(sid, f"{g.path}/{label}".lstrip("/"), label, g.id)
                    self.groups.append(section)
                    g.groups.append(sid)
                    for kind, c in chunk:
                        if kind == "g":
                            section.groups.append(c)
                            self.groups[c].parent = sid
                        else:
                            section.nodes.append(c)
                            self.node_group[c] = sid
                    stack.append(sid)
            else:
                stack.extend(g.groups)

    def ancestors(self, node: int) -> list[int]:
        """Groups containing ``node``, outermost first (root excluded)."""
        out = []
        gid = int(self.node_group[node])
        while gid > 0:
            out.append(gid)
            gid = self.groups[gid].parent
        return out[::-1]

    def default_expanded(self, limit: int = EXPAND_LIMIT) -> set[int]:
        """Expand groups breadth first, in file order, while the view stays under ``limit`` items.

        File order (not size) keeps the start of the model detailed, which is where the view opens.
        """
        expanded = {0}
        visible = len(self.groups[0].groups) + len(self.groups[0].nodes)
        frontier = list(self.groups[0].groups)
        while frontier:
            frontier.sort(key=lambda gid: self.groups[gid].first)
            nxt = []
            for gid in frontier:
                g = self.groups[gid]
                more = len(g.groups) + len(g.nodes) - 1
                if visible + more <= limit:
                    expanded.add(gid)
                    visible += more
                    nxt.extend(g.groups)
            frontier = nxt
        # Never open on boxes alone (a flat 10,000-node graph is 10 sections): open the first group
        # in file order, and its first, until real nodes show.
        gid = 0
        while not any(self.groups[g].nodes for g in expanded):
            kids = sorted(self.groups[gid].groups, key=lambda c: self.groups[c].first)
            if not kids:
                break
            gid = kids[0]
            expanded.add(gid)
        return expanded

    def representatives(self, expanded: set[int]) -> np.ndarray:
        """For every node, the item that shows it: the node (index) or n + the collapsed group id."""
        n = len(self.graph.nodes)
        rep = np.full(len(self.groups), -1, dtype=np.int64)
        order = self._top_down()
        for gid in order:
            g = self.groups[gid]
            if gid == 0:
                continue
            parent_rep = rep[g.parent] if g.parent > 0 else -1
            rep[gid] = parent_rep if parent_rep >= 0 else (-1 if gid in expanded else gid)
        group_rep = rep[self.node_group]
        return np.where(group_rep >= 0, n + group_rep, np.arange(n))

    def _top_down(self) -> list[int]:
        out, stack = [], [0]
        while stack:
            gid = stack.pop()
            out.append(gid)
            stack.extend(self.groups[gid].groups)
        return out
