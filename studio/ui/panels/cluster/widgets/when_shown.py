"""A view refreshed only while it is on screen: a tab hidden behind another is refreshed the first
time it is shown, not each time a report or a choice changes what it would show.

A cluster report reaches the panel's tabs all at once; filling and laying out every tab then (the
rank table, the collectives, the idle gaps, the op links, the matrix) held the window for tens of
milliseconds on 16 ranks, for tabs the user may never open. With :class:`WhenShown` only the tab on
screen pays; another pays when the user opens it, with the data of that moment. A refresh may come
in steps (a table, then the text beside it), each on its own turn of the event loop, so the window
paints and answers between them instead of waiting for their sum.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget


class WhenShown(QObject):
    """Calls ``steps`` (in order) for ``widget`` now when it is visible, else when it is next shown.

    ``request()`` says the widget's content changed; ``flush()`` brings a pending refresh forward
    (for code that reads the widget's content while it is hidden). The first step runs at once, each
    next one on the next turn of the event loop; a newer refresh drops the steps an older one left."""

    def __init__(self, widget: QWidget, *steps: Callable[[], object]):
        super().__init__(widget)
        self._widget, self._steps = widget, steps
        self.pending = False
        self._run = 0  # which refresh the queued steps belong to
        self._queued = False  # steps of the last refresh wait for their turn
        widget.installEventFilter(self)

    @property
    def done(self) -> bool:
        """No refresh pending and none under way (what is shown is the last content asked for)."""
        return not self.pending and not self._queued

    def request(self) -> None:
        """The content changed: refresh now when on screen, else on the next show."""
        self.pending = True
        if self._widget.isVisible():
            self.flush()

    def flush(self) -> None:
        """Start the pending refresh now, shown or not."""
        if self.pending:
            self.pending = False
            self._run += 1
            self._step(self._run, 0)

    def _step(self, run: int, index: int) -> None:
        if run != self._run:
            return  # a newer refresh started over
        self._queued = index + 1 < len(self._steps)
        self._steps[index]()
        if self._queued:
            QTimer.singleShot(0, self, lambda: self._step(run, index + 1))

    def eventFilter(self, watched, event) -> bool:  # Qt override
        # Show comes before the first layout and paint: the tab is filled when it is first drawn.
        if watched is self._widget and event.type() == QEvent.Type.Show:
            self.flush()
        return False
