"""Pinning and finding timeline tracks.

Right-click a track's name: pin it to the band under the ruler (it stays in view while the rest
scrolls), unpin it, or unpin all. Ctrl+P: the fuzzy track finder (go to a track, pin one or every
match, e.g. every lane of a communication group across ranks).
"""

from __future__ import annotations

from PySide6.QtWidgets import QMenu


class TrackActions:
    """The track menu and finder of ``view`` (a :class:`TimelineView`); pins go through it."""

    def __init__(self, view):
        self.view = view

    def track_menu(self, track: int) -> QMenu:
        """The right-click menu of a track's name: pin or unpin it, unpin all, find a track."""
        view = self.view
        menu = QMenu(view)
        label = view.trace.track_label(track)
        if track in view.pinned:
            menu.addAction(f"Unpin {label}", lambda: view.toggle_pinned(track))
        else:
            menu.addAction(f"Pin {label} to the top", lambda: view.toggle_pinned(track))
        if view.pinned:
            menu.addAction("Unpin all", lambda: view.set_pinned([]))
        menu.addSeparator()
        menu.addAction("Find a track…\tCtrl+P", self.find_track)
        return menu

    def find_track(self):
        """Open the fuzzy track finder; returns the dialog (it is not modal)."""
        from studio.ui.panels.profiler.track_finder import TrackFinder

        view = self.view
        if view.trace is None:
            return None
        finder = TrackFinder(view.trace, view.pinned, view)
        finder.go_to.connect(self.go_to_track)
        finder.pin.connect(lambda tracks: view.set_pinned([*view.pinned, *tracks]))
        finder.open()
        return finder

    def go_to_track(self, track: int) -> None:
        """Bring ``track``'s first row into view (its process expanded)."""
        self.view.scroll_to_track(track, 0)
        self.view.update()
