"""The graph panel's Find: search the graph shown and every subgraph below it, step through the
matches (opening the subgraph a match is in, every level in the breadcrumb), forget them when
another graph is shown.

A mixin of :class:`~studio.ui.panels.graph.panel.GraphPanel` (kept apart so each file has one job).
"""

from __future__ import annotations

from studio.core.errors import UserError
from studio.tools.graph.search import subgraph_trail
from studio.ui.panels.graph import jobs
from studio.ui.panels.graph.side import Level, Side


class Finding:
    """Find and the subgraph trails it opens, for GraphPanel (uses its sides, runner, status, find widgets)."""

    # ------------------------------------------------------------------ find
    def _on_find(self) -> None:
        self.find(self.find_edit.text(), self.regex_box.isChecked())

    def find(self, query: str, regex: bool = False):
        """Search the opened graph; selects the first match. Returns the job handle."""
        graph = self.active.graph
        if graph is None:
            return None
        handle = self.runner.start("Finding", lambda cancel: jobs.find_job(graph, query, regex, cancel))

        side = self.active
        base = list(side.stack)

        def done(matches):
            self.matches, self.match_pos = matches, -1
            self._match_base, self._match_side = base, side
            inside = sum(1 for m in matches if m.trail)
            self.find_label.setToolTip("")
            self.find_label.setText((f"{len(matches):,} found" + (f" ({inside:,} in subgraphs)" if inside else ""))
                                    if matches else "no match")
            if matches:
                self.step_match(1)
        handle.finished.connect(done)
        # A bad pattern is said in the find box, next to what was typed, not in a dialog that
        # interrupts the typing: this job's failures are not posted by the runner, bugs aside.
        handle.report_failure = False
        handle.failed.connect(self._on_find_failed)
        return handle

    def _on_find_failed(self, exc: BaseException, traceback_text: str) -> None:
        if isinstance(exc, UserError):
            self.find_label.setText("bad pattern")
            self.find_label.setToolTip(exc.format())
            return
        self.find_label.setText("error")
        self.runner.board.post_exception(exc, traceback_text, source="Graph: Find")

    def clear_matches(self) -> None:
        """Forget the last search (a new model or graph is shown: F3 must not select an unrelated node)."""
        if self._stepping:
            return
        self.matches, self.match_pos, self._match_base, self._match_side = [], -1, [], None
        self.find_label.setText("")
        self.find_label.setToolTip("")
        self.find_label.setToolTip("")

    def step_match(self, direction: int) -> None:
        """Select the next (previous) match; one inside a subgraph opens it, every level in the breadcrumb."""
        side = self._match_side
        if not self.matches or side is None or side.model is None:
            return
        self.match_pos = (self.match_pos + direction) % len(self.matches)
        match = self.matches[self.match_pos]
        where = match.where
        self.find_label.setText(f"{self.match_pos + 1} of {len(self.matches):,}" + (" · in a subgraph" if where else ""))
        self.find_label.setToolTip(f"in {where}" if where else "in the graph searched")
        trail = [(lv.graph, lv.title) for lv in self._match_base] + list(match.trail)
        self.active = side
        self._stepping = True
        try:
            self._open_trail(side, trail, match.index)
        finally:
            self._stepping = False
        if where:
            self.status.emit(f"Graph: match {self.match_pos + 1} is in {where}")

    def select_all_matches(self) -> None:
        side = self.active
        if side.view is None or not self.matches:
            return
        here = [m.index for m in self.matches if m.graph is side.graph]
        side.canvas.highlight({side.item_of_node(i) for i in here})
        elsewhere = len(self.matches) - len(here)
        self.status.emit(f"Graph: {len(here):,} matches highlighted"
                         + (f" ({elsewhere:,} more in other graphs: F3 opens them)" if elsewhere else ""))

    # ------------------------------------------------------------------ trails
    def _trail_to(self, side: Side, top, sub) -> list[tuple]:
        """Every level from the side's main graph (or another top graph) down to ``sub``."""
        main = side.stack[0].graph
        trail = subgraph_trail(main, sub)
        if trail is not None:
            return [(main, side.stack[0].title), *trail]
        return [(top, top.name), *(subgraph_trail(top, sub) or [])]

    def _open_trail(self, side: Side, trail: list[tuple], index: int) -> None:
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
            self._select_index(side, index, center=True)
        elif side.view is None:
            side.selected_node = -1
            self._update_bar()
            self._relayout(side, None, then_select=index, keep_position=False)
        else:
            self._show_level(side)
            self._select_index(side, index, center=True)
