"""Find slices by name in the Profiler: the matches outlined, stepped through, one name highlighted.

Finding runs as a job (a name test over every slice name, then a gather over millions of slices);
an answer for a trace no longer shown, or for text the user has typed on from, is dropped.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, Signal

from studio.tools.profiler.model import Trace
from studio.ui.panels.profiler import state as st
from studio.ui.panels.profiler.state import ProfilerState


class SliceFinder(QObject):
    """The find box's matches and the highlighted name, on the timeline.

    Signals:
        status(str): a line for the status bar
        named(str): a name was highlighted (its op is the one "Show in graph" shows)
    """

    status = Signal(str)
    named = Signal(str)

    def __init__(self, state: ProfilerState, runner, timeline, find, match_label, parent: QObject | None = None):
        super().__init__(parent)
        self.state, self.runner, self.timeline, self.find, self.match_label = state, runner, timeline, find, match_label

    def on_text(self, text: str) -> None:
        """Find the slices whose name holds ``text`` (a job); empty text clears the matches."""
        self.state.clear_matches()
        self.timeline.set_highlighted(self.state.matches)
        if self.state.current is None or not text.strip():
            self.match_label.setText("")
            return
        trace, needle = self.state.current.trace, text.strip().lower()
        self.match_label.setText("finding…")
        handle = self.runner.start("Finding slices", lambda cancel: st.find_job(trace, needle, cancel),
                                   key="profiler-find")
        handle.finished.connect(lambda found: self._on_found(trace, text, found))

    def again(self, _loaded=None, swapped: bool = False) -> None:
        """Find again on a profile just shown (on one swapped in, only when there is text to find)."""
        if not swapped or self.find.text().strip():
            self.on_text(self.find.text())

    def _on_found(self, trace: Trace, text: str, found: np.ndarray) -> None:
        current = self.state.current
        if current is None or current.trace is not trace or self.find.text() != text:
            return  # the user typed on or switched profiles meanwhile
        self.state.set_matches(found)
        self.timeline.set_highlighted(found)
        self.match_label.setText(f"{found.size:,} found")

    def step(self, step: int) -> None:
        """Select the next (step 1) or previous (step −1) match and bring it into view."""
        index = self.state.step_match(step)
        if index is not None:
            self.timeline.select_slice(index)
            self.match_label.setText(self.state.match_text())

    def highlight_name(self, name: str) -> None:
        """Select every slice called ``name`` (outlined) and the first of them."""
        if self.state.current is None:
            return
        trace = self.state.current.trace
        indices = trace.slices_named(name)
        self.timeline.set_highlighted(indices)
        self.state.selected_name = name
        self.named.emit(name)
        if indices.size:
            self.timeline.select_slice(int(indices[np.argmin(np.asarray(trace.start)[indices])]))
        self.status.emit(f"{name}: {indices.size:,} slices")
