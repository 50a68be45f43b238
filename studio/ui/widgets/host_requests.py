""""Open a terminal on this host": a request from the Hosts panel to the Terminal panel.

Panels never import each other and ``PanelLinks`` has no signal for this yet, so the request
travels through listeners kept on the window's ``PanelLinks`` object (one set per window). When
``PanelLinks`` gains an ``open_terminal = Signal(str)``, these two functions become one emit and
one connect.
"""

from __future__ import annotations

from collections.abc import Callable

_ATTR = "_studio_open_terminal_listeners"


def _listeners(links) -> list[Callable[[str], None]]:
    found = getattr(links, _ATTR, None)
    if found is None:
        found = []
        setattr(links, _ATTR, found)
    return found


def on_open_terminal(links, callback: Callable[[str], None]) -> None:
    """Call ``callback(host_name)`` whenever a panel asks for a terminal."""
    _listeners(links).append(callback)


def request_terminal(links, host_name: str) -> bool:
    """Ask for a terminal on ``host_name``; False when no terminal panel listens."""
    listeners = _listeners(links)
    for callback in list(listeners):
        callback(host_name)
    if listeners:
        links.focus.emit("terminal")
    return bool(listeners)
