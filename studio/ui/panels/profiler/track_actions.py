"""Pinning and finding timeline tracks (mixed into the timeline view).

Right-click a track's name: pin it to the band under the ruler (it stays in view while the rest
scrolls), unpin it, or unpin all. Ctrl+P: the fuzzy track finder (go to a track, pin one or every
match, e.g. every lane of a communication group across ranks).
"""

from __future__ import annotations

from PySide6.QtWidgets import QMenu
class TrackActions:
    """Pinning and finding tracks, mixed into :class:`TimelineView`."""

    def track_menu(self, track: int) -> QMenu:
        """The right-click menu of a track's name: pin or unpin it, unpin all, find a track."""
        menu = QMenu(self)
        label = self.trace.track_label(track)
        if track in self.pinned:
            menu.addAction(f"Unpin {label}", lambda: self.toggle_pinned(track))
        else:
            menu.addAction(f"Pin {label} to the top", lambda: self.toggle_pinned(track))
        if self.pinned:
            menu.addAction("Unpin all", lambda: self.set_pinned([]))
        menu.addSeparator()
        menu.addAction("Find a track…\tCtrl+P", self.find_track)
        return menu

    def find_track(self):
        """Open the fuzzy track finder; returns the dialog (it is not modal)."""
        from studio.ui.panels.profiler.track_finder import TrackFinder

        if self.trace is None:
            return None
        finder = TrackFinder(self.trace, self.pinned, self)
        finder.go_to.connect(self.go_to_track)
        finder.pin.connect(lambda tracks: self.set_pinned([*self.pinned, *tracks]))
        finder.open()
        return finder

    def go_to_track(self, track: int) -> None:
        """Bring ``track``'s first row into view (its process expanded)."""
        self._scroll_to_track(track, 0)
        self.update()
