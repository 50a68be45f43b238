"""The Graph panel's levels: open a subgraph, go back, choose a graph of the model, expand and
collapse groups (each re-layout is a job); a mixin of :class:`~studio.ui.panels.graph.panel.GraphPanel`."""

from __future__ import annotations

from studio.ui.panels.graph import jobs
from studio.ui.panels.graph.side import Level, Side
from studio.ui.panels.graph.state import groups_inside


class Navigation:
    """Move between the graphs of the model on a side, and lay them out."""

    def _relayout(self, side: Side, expanded: set[int] | None, then_select: int | None = None,
                  keep_position: bool = True):
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
            self._apply_overlay(side)
            self._apply_compare_marks()
            self._update_caption(side)
            self._update_bar()
            if then_select is not None:
                self._select_index(side, then_select, center=True)
            elif side.selected_node >= 0:  # keep the selection across expand / collapse
                item = side.item_of_node(side.selected_node)
                if item >= 0 and lv.view.items[item].kind == "node":
                    side.canvas.state.selected = item
        handle.finished.connect(done)
        return handle

    def open_graph(self, graph, title: str, side: Side | None = None):
        """Open a subgraph (or function body) on top of the current one; Back returns."""
        side = side or self.active
        self.clear_matches()
        side.stack.append(Level(graph, title))
        side.selected_node = -1
        self.details.show_empty()
        self._update_bar()
        return self._relayout(side, None, keep_position=False)

    def go_back(self) -> None:
        """Return to the graph that holds the opened subgraph."""
        side = self.active
        if len(side.stack) <= 1:
            return
        self.clear_matches()
        side.stack.pop()
        if side.view is None:  # a level opened on the way to a match or a node: laid out on first show
            side.selected_node = -1
            self._update_bar()
            self._relayout(side, None, keep_position=False)
            return
        self._show_level(side)

    def _show_level(self, side: Side) -> None:
        """Show the top of ``side``'s stack again (its view is kept, no layout needed)."""
        side.selected_node = -1
        side.canvas.set_view(side.view)
        self._apply_overlay(side)
        self._apply_compare_marks()
        self._update_caption(side)
        self._update_bar()
        if side.model is not None and side.graph is not None:
            self.details.show_model(side.model, side.graph)

    def _on_graph_chosen(self, index: int) -> None:
        graph = self.graph_combo.itemData(index)
        if graph is None or self.left.model is None:
            return
        self.active = self.left
        self.clear_matches()
        del self.left.stack[1:]
        if graph is self.left.model.main:
            self._show_level(self.left)
        else:
            self.open_graph(graph, graph.name, self.left)

    def set_direction(self, direction: str):
        """Lay the graphs out top to bottom ("TB") or left to right ("LR", long chains read across a
        wide screen); the graph on screen is laid out again at its expansion. Returns the job."""
        self.direction = direction
        self.direction_button.setChecked(direction == "LR")
        level = self.active.level
        return self._relayout(self.active, level.expanded, keep_position=False) if level else None

    def expand_all(self) -> None:
        level = self.active.level
        if level and level.hierarchy:
            self._relayout(self.active, {g.id for g in level.hierarchy.groups if g.parent != -2}, keep_position=False)

    def collapse_all(self) -> None:
        if self.active.level:
            self._relayout(self.active, {0}, keep_position=False)

    def collapse_group(self, gid: int, side: Side | None = None):
        """Collapse one expanded group (and everything inside it) back into a box."""
        side = side or self.active
        level = side.level
        if level is None or level.hierarchy is None or gid not in (level.expanded or set()):
            return None
        return self._relayout(side, set(level.expanded) - groups_inside(level.hierarchy, gid))
