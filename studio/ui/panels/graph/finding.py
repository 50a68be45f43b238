"""The graph panel's Find: search the graph shown and every subgraph below it, step through the
matches (opening the subgraph a match is in, every level in the breadcrumb), forget them when
another graph is shown.

:class:`Finder` owns the find row (box, Regex, previous / next / all, the count) and the matches;
it moves through the graphs by its named collaborator, the panel's :class:`~.views.GraphViews`.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QWidget

from studio.core.errors import UserError
from studio.ui.panels.graph import jobs
from studio.ui.panels.graph.side import Level, Side
from studio.ui.panels.graph.widgets.toolbar import tool_button


class Finder(QObject):
    """Find, its matches and the row that shows them.

    Signals:
        status(str): a short message for the status bar.
    """

    status = Signal(str)

    def __init__(self, runner, views, parent: QWidget):
        super().__init__(parent)
        self.runner = runner
        self.views = views  # GraphViews: the active side, and the trail a match opens
        self.matches: list = []  # in the searched graph and every subgraph below it
        self.match_pos = -1
        self._base: list[Level] = []  # the levels open when the search ran
        self._side: Side | None = None
        self._stepping = False  # opening a match's subgraph keeps the matches
        views.leaving.connect(self.clear_matches)
        self.row = self._build(parent)

    def _build(self, parent: QWidget) -> QHBoxLayout:
        row = QHBoxLayout()
        row.setContentsMargins(4, 0, 4, 2)
        self.find_edit = QLineEdit(parent)
        self.find_edit.setPlaceholderText("Find node by name, type or tensor (all words must match; \"quoted\" = "
                                          "exact)")
        self.find_edit.setClearButtonEnabled(True)
        self.find_edit.returnPressed.connect(lambda: self.find(self.find_edit.text(), self.regex_box.isChecked()))
        self.regex_box = QCheckBox("Regex", parent)
        self.find_label = QLabel("", parent)
        self.find_label.setMinimumWidth(70)
        row.addWidget(self.find_edit, 1)
        row.addWidget(self.regex_box)
        row.addWidget(tool_button("◀", "Previous match (Shift+F3)", lambda: self.step_match(-1), parent))
        row.addWidget(tool_button("▶", "Next match (F3)", lambda: self.step_match(1), parent))
        row.addWidget(tool_button("All", "Highlight all matches", self.select_all_matches, parent))
        row.addWidget(self.find_label)
        return row

    def find(self, query: str, regex: bool = False):
        """Search the opened graph; selects the first match. Returns the job handle."""
        side = self.views.active
        graph = side.graph
        if graph is None:
            return None
        handle = self.runner.start("Finding", lambda cancel: jobs.find_job(graph, query, regex, cancel))
        base = list(side.stack)

        def done(matches):
            self.matches, self.match_pos = matches, -1
            self._base, self._side = base, side
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
        self.matches, self.match_pos, self._base, self._side = [], -1, [], None
        self.find_label.setText("")
        self.find_label.setToolTip("")

    def step_match(self, direction: int) -> None:
        """Select the next (previous) match; one inside a subgraph opens it, every level in the breadcrumb."""
        side = self._side
        if not self.matches or side is None or side.model is None:
            return
        self.match_pos = (self.match_pos + direction) % len(self.matches)
        match = self.matches[self.match_pos]
        where = match.where
        self.find_label.setText(f"{self.match_pos + 1} of {len(self.matches):,}" + (" · in a subgraph" if where else ""))
        self.find_label.setToolTip(f"in {where}" if where else "in the graph searched")
        trail = [(lv.graph, lv.title) for lv in self._base] + list(match.trail)
        self.views.active = side
        self._stepping = True
        try:
            self.views.open_trail(side, trail, match.index)
        finally:
            self._stepping = False
        if where:
            self.status.emit(f"Graph: match {self.match_pos + 1} is in {where}")

    def select_all_matches(self) -> None:
        side = self.views.active
        if side.view is None or not self.matches:
            return
        here = [m.index for m in self.matches if m.graph is side.graph]
        side.canvas.highlight({side.item_of_node(i) for i in here})
        elsewhere = len(self.matches) - len(here)
        self.status.emit(f"Graph: {len(here):,} matches highlighted"
                         + (f" ({elsewhere:,} more in other graphs: F3 opens them)" if elsewhere else ""))
