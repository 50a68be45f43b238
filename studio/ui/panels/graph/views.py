"""The Graph panel's two sides and the moves between their graphs: open a subgraph, go back,
choose a graph of the model, expand and collapse groups (each re-layout a job), select a node
(opening the levels down to it), and keep the other side's selection in step.

:class:`GraphViews` owns the sides and which one is active; it tells the panel by signals when a
view is on screen again (the overlay, compare marks, caption and toolbar follow) and shows what is
selected in the details pane, its one named collaborator.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, Signal

from studio.tools.graph.search import resolve_node, subgraph_trail
from studio.ui.panels.graph import jobs
from studio.ui.panels.graph.side import Level, Side
from studio.ui.panels.graph.state import caption, groups_inside


class GraphViews(QObject):
    """The left and right sides (model, stack of opened graphs, canvas), the active one, the
    layout direction.

    Signals:
        shown(Side): a side's view is on its canvas (again): colour it, mark it, say where it is.
        leaving(): another graph is about to be shown (the last search's matches no longer apply).
        bar_changed(): the active side or its levels changed (the toolbar follows).
        node_clicked(object, str): the user selected a node: the model's path and the node's name.
        status(str): a short message for the status bar.
    """

    shown = Signal(object)
    leaving = Signal()
    bar_changed = Signal()
    node_clicked = Signal(object, str)
    status = Signal(str)

    def __init__(self, runner, details, left: Side, right: Side, parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self.details = details  # the details pane: what is selected, or the graph's facts
        self.left, self.right = left, right
        self.active = left
        self.direction = "TB"  # layout direction: TB (inputs at the top) or LR (inputs on the left)

    def side_name(self, side: Side) -> str:
        return "left" if side is self.left else "right"

    def update_caption(self, side: Side) -> None:
        """The canvas's caption: the view's size (and, comparing, the nodes only this side has)."""
        if side.view is not None:
            side.canvas.caption = caption(side.view, side.only_here, self.side_name(side))

    # ------------------------------------------------------------------ levels
    def relayout(self, side: Side, expanded: set[int] | None, then_select: int | None = None,
                 keep_position: bool = True):
        """Lay the side's top level out again at ``expanded`` (a job); returns its handle."""
        level = side.level
        if level is None:
            return None
        direction = self.direction
        handle = self.runner.start(f"Laying out {level.graph.name}",
                                   lambda cancel, lv=level: jobs.graph_job(lv.graph, lv.hierarchy, expanded, cancel,
                                                                           direction),
                                   key=f"graph:{id(side)}")

        def done(result, lv=level):
            lv.hierarchy, lv.view = result
            lv.expanded = lv.view.expanded
            if side.level is not lv:
                return
            side.canvas.set_view(lv.view, keep_position=keep_position)
            self.shown.emit(side)
            if then_select is not None:
                self.select_index(side, then_select, center=True)
            elif side.selected_node >= 0:  # keep the selection across expand / collapse
                item = side.item_of_node(side.selected_node)
                if item >= 0 and lv.view.items[item].kind == "node":
                    side.canvas.state.selected = item
        handle.finished.connect(done)
        return handle

    def open_graph(self, graph, title: str, side: Side | None = None):
        """Open a subgraph (or function body) on top of the current one; Back returns."""
        side = side or self.active
        self.leaving.emit()
        side.stack.append(Level(graph, title))
        side.selected_node = -1
        self.details.show_empty()
        self.bar_changed.emit()
        return self.relayout(side, None, keep_position=False)

    def go_back(self) -> None:
        """Return to the graph that holds the opened subgraph."""
        side = self.active
        if len(side.stack) <= 1:
            return
        self.leaving.emit()
        side.stack.pop()
        if side.view is None:  # a level opened on the way to a match or a node: laid out on first show
            side.selected_node = -1
            self.bar_changed.emit()
            self.relayout(side, None, keep_position=False)
            return
        self.show_level(side)

    def show_level(self, side: Side) -> None:
        """Show the top of ``side``'s stack again (its view is kept, no layout needed)."""
        side.selected_node = -1
        side.canvas.set_view(side.view)
        self.shown.emit(side)
        if side.model is not None and side.graph is not None:
            self.details.show_model(side.model, side.graph)

    def choose_graph(self, graph) -> None:
        """Show one graph of the left model (the graph list): its main graph, or another one on top."""
        if graph is None or self.left.model is None:
            return
        self.active = self.left
        self.leaving.emit()
        del self.left.stack[1:]
        if graph is self.left.model.main:
            self.show_level(self.left)
        else:
            self.open_graph(graph, graph.name, self.left)

    def set_direction(self, direction: str):
        """Lay the graphs out top to bottom ("TB") or left to right ("LR"); the graph on screen is
        laid out again at its expansion. Returns the job."""
        self.direction = direction
        level = self.active.level
        return self.relayout(self.active, level.expanded, keep_position=False) if level else None

    def expand_all(self) -> None:
        level = self.active.level
        if level and level.hierarchy:
            self.relayout(self.active, {g.id for g in level.hierarchy.groups if g.parent != -2}, keep_position=False)

    def collapse_all(self) -> None:
        if self.active.level:
            self.relayout(self.active, {0}, keep_position=False)

    def collapse_group(self, gid: int, side: Side | None = None):
        """Collapse one expanded group (and everything inside it) back into a box."""
        side = side or self.active
        level = side.level
        if level is None or level.hierarchy is None or gid not in (level.expanded or set()):
            return None
        return self.relayout(side, set(level.expanded) - groups_inside(level.hierarchy, gid))

    # ------------------------------------------------------------------ selection
    def click(self, side: Side, item: int) -> None:
        """An item clicked on a side's canvas: select it and show it in the details pane."""
        self.active = side
        self.bar_changed.emit()
        view = side.view
        if view is None:
            return
        side.canvas.state.selected = item
        side.canvas.update()
        if item < 0:
            side.selected_node = -1
            if side.model:
                self.details.show_model(side.model, view.graph)
            return
        it = view.items[item]
        if it.kind == "node":
            side.selected_node = it.index
            self.details.show_node(view.graph, it.index)
            self._sync_other_side(side, view.graph.nodes[it.index].name)
            self.node_clicked.emit(side.model.path if side.model else None, view.graph.nodes[it.index].name)
        elif it.kind == "group":
            members = np.nonzero(view.item_of_node == item)[0].tolist()
            self.details.show_group(view.graph, it.name, members)
        else:
            self.details.show_terminal(view.graph, it.kind, it.name)

    def activate(self, side: Side, item: int) -> None:
        """An item double-clicked: a group opens, a node with a subgraph shows it."""
        view = side.view
        it = view.items[item]
        level = side.level
        if it.kind == "group":
            expanded = set(level.expanded or {0}) | {it.index}
            first = int(np.nonzero(view.item_of_node == item)[0][0])
            self.relayout(side, expanded, then_select=first)
        elif it.kind == "node":
            node = view.graph.nodes[it.index]
            if node.subgraphs:
                slot, graph = next(iter(node.subgraphs.items()))
                self.open_graph(graph, f"{node.name} › {slot}", side)

    def select_node(self, node: str | int, side: Side | None = None) -> bool:
        """Select a node (by name, output tensor name or index), expanding groups to reveal it."""
        side = side or self.active
        graph = side.graph
        if graph is None:
            return False
        index = node if isinstance(node, int) else resolve_node(graph, node)
        if index is None:
            # not in the opened graph: look through subgraphs and other graphs of the model
            for top in side.model.graphs if side.model else []:
                for sub in top.walk():
                    found = resolve_node(sub, node) if isinstance(node, str) else None
                    if found is not None and sub is not graph:
                        self.open_trail(side, self._trail_to(side, top, sub), found)
                        return True
            self.status.emit(f"Graph: no node named {node!r} in {graph.name}")
            return False
        self.select_index(side, index, center=True)
        return True

    def select_index(self, side: Side, index: int, center: bool) -> None:
        level = side.level
        item = side.item_of_node(index)
        if item < 0:
            return
        if side.view.items[item].kind == "group" and level.hierarchy is not None:
            expanded = set(level.expanded or {0}) | set(level.hierarchy.ancestors(index))
            self.relayout(side, expanded, then_select=index)
            return
        side.selected_node = index
        side.canvas.state.selected = item
        if center:
            side.canvas.center_on(item)
        side.canvas.update()
        if side is self.active or side is self.left:
            self.details.show_node(side.graph, index)

    def _sync_other_side(self, side: Side, name: str) -> None:
        other = self.right if side is self.left else self.left
        if other.model is None or other.graph is None:
            return
        index = other.graph.node_index().get(name)
        if index is not None:
            item = other.item_of_node(index)
            if item >= 0 and other.view.items[item].kind == "node":
                other.selected_node = index
                other.canvas.state.selected = item
                other.canvas.center_on(item, min_scale=other.canvas.scale)

    # ------------------------------------------------------------------ trails
    def _trail_to(self, side: Side, top, sub) -> list[tuple]:
        """Every level from the side's main graph (or another top graph) down to ``sub``."""
        main = side.stack[0].graph
        trail = subgraph_trail(main, sub)
        if trail is not None:
            return [(main, side.stack[0].title), *trail]
        return [(top, top.name), *(subgraph_trail(top, sub) or [])]

    def open_trail(self, side: Side, trail: list[tuple], index: int) -> None:
        """Show the graph at the end of ``trail`` (graph, title) with every level in the breadcrumb,
        reusing the levels already open (their layouts), then select node ``index`` there."""
        stack = []
        for depth, (graph, title) in enumerate(trail):
            old = side.stack[depth] if depth < len(side.stack) else None
            stack.append(old if old is not None and old.graph is graph and
                         all(a is b for a, b in zip(stack, side.stack)) else Level(graph, title))
        same = len(stack) == len(side.stack) and all(a is b for a, b in zip(stack, side.stack))
        side.stack = stack
        if same:
            self.select_index(side, index, center=True)
        elif side.view is None:
            side.selected_node = -1
            self.bar_changed.emit()
            self.relayout(side, None, then_select=index, keep_position=False)
        else:
            self.show_level(side)
            self.select_index(side, index, center=True)
