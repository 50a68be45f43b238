"""A view refreshed only while it is on screen: a tab hidden behind another is refreshed the first
time it is shown, not each time a report or a choice changes what it would show.

A cluster report reaches the panel's tabs all at once; filling and laying out every tab then (the
rank table, the collectives, the idle gaps, the op links, the matrix) held the window for tens of
milliseconds on 16 ranks, for tabs the user may never open. With :class:`WhenShown` only the tab on
screen pays; another pays when the user opens it, with the data of that moment.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget


class WhenShown(QObject):
    """Calls ``refresh`` for ``widget`` now when it is visible, else when it is next shown.

    ``request()`` says the widget's content changed; ``flush()`` brings a pending refresh forward
    (for code that reads the widget's content while it is hidden, e.g. selecting a table row)."""

    def __init__(self, widget: QWidget, refresh: Callable[[], object]):
        super().__init__(widget)
        self._widget, self._refresh = widget, refresh
        self.pending = False
        widget.installEventFilter(self)

    def request(self) -> None:
        """The content changed: refresh now when on screen, else on the next show."""
        self.pending = True
        if self._widget.isVisible():
            self.flush()

    def flush(self) -> None:
        """Run the pending refresh now, shown or not."""
        if self.pending:
            self.pending = False
            self._refresh()

    def eventFilter(self, watched, event) -> bool:  # Qt override
        # Show comes before the first layout and paint: the tab is filled when it is first drawn.
        if watched is self._widget and event.type() == QEvent.Type.Show:
            self.flush()
        return False
