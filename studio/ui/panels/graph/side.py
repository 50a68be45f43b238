"""One side of the graph panel: a model, the stack of opened (sub)graphs, and its canvas."""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.tools.graph.grouping import Hierarchy
from studio.tools.graph.model import Graph, Model
from studio.tools.graph.view import ViewGraph
from studio.ui.panels.graph.canvas import GraphCanvas

CRUMB_MAX = 36  # characters of one breadcrumb level; the tooltip has the full path


@dataclass
class Level:
    """One opened graph: main graph, a subgraph, or a function body."""

    graph: Graph
    title: str
    hierarchy: Hierarchy | None = None
    expanded: set[int] | None = None
    view: ViewGraph | None = None


@dataclass
class Side:
    canvas: GraphCanvas
    model: Model | None = None
    stack: list[Level] = field(default_factory=list)
    selected_node: int = -1
    only_here: int = 0  # compare: nodes of this side whose name the other side lacks

    @property
    def level(self) -> Level | None:
        return self.stack[-1] if self.stack else None

    @property
    def graph(self) -> Graph | None:
        return self.stack[-1].graph if self.stack else None

    @property
    def view(self) -> ViewGraph | None:
        return self.stack[-1].view if self.stack else None

    def item_of_node(self, node: int) -> int:
        view = self.view
        if view is None or not 0 <= node < view.item_of_node.size:
            return -1
        return int(view.item_of_node[node])

    def breadcrumb(self, full: bool = False) -> str:
        """Every opened level; long titles are cut in the middle unless ``full`` (the tooltip's text)."""
        return " › ".join(level.title if full else _elide_middle(level.title) for level in self.stack)


def _elide_middle(text: str, limit: int = CRUMB_MAX) -> str:
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return text[:keep] + "…" + text[-(limit - 1 - keep):]
