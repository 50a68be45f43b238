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
        self._next = len(steps)  # the step the timer runs next (none left: len(steps))
        # A timer, not singleShot(0, ...): that posts its call as an event, run in the same pass as
        # the paint just posted — the steps would follow each other with nothing between them.
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._step)
        widget.installEventFilter(self)

    @property
    def done(self) -> bool:
        """No refresh pending and none under way (what is shown is the last content asked for)."""
        return not self.pending and self._next == len(self._steps)

    def request(self) -> None:
        """The content changed: refresh now when on screen, else on the next show."""
        self.pending = True
        if self._widget.isVisible():
            self.flush()

    def flush(self) -> None:
        """Start the pending refresh now, shown or not."""
        if self.pending:
            self.pending = False
            self._next = 0  # from the first step again: what an older refresh left is dropped
            self._step()

    def _step(self) -> None:
        index, self._next = self._next, self._next + 1
        self._steps[index]()
        if self._next < len(self._steps):
            self._timer.start()

    def eventFilter(self, watched, event) -> bool:  # Qt override
        # Show comes before the first layout and paint: the tab is filled when it is first drawn.
        if watched is self._widget and event.type() == QEvent.Type.Show:
            self.flush()
        return False
