"""The base every dock panel derives from.

A panel declares itself with class attributes (``NAME``, ``TITLE``, ``AREA``) and receives the
files the main window routes to it through :meth:`Panel.open_file`. It runs its work through
``self.runner`` (the shared JobRunner) and never imports another panel: cross-panel requests are the
signals of ``self.links`` (studio/ui/links.py), which the main window shares between panels.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QWidget

from studio.core.formats import Detected
from studio.ui.jobs import JobRunner
from studio.ui.links import PanelLinks


def forward(owner: str, name: str, doc: str = "") -> property:
    """An attribute of the panel that reads and writes ``self.<owner>.<name>``: a part the panel is
    composed of owns it (a method forwarded this way is called as the panel's own), so callers keep
    the panel's name for it."""
    return property(lambda self: getattr(getattr(self, owner), name),
                    lambda self, value: setattr(getattr(self, owner), name, value),
                    doc=doc or f"The panel's ``{owner}.{name}``.")


def state_property(name: str, doc: str = "") -> property:
    """An attribute of the panel that reads and writes ``self.state.<name>`` (the panel's Qt-free
    state object), so callers keep the panel's own name for it."""
    return forward("state", name, doc or f"The panel state's ``{name}``.")


class Panel(QWidget):
    """A dockable tool panel.

    Signals:
        request_open(Path): ask the main window to open a file (it is sniffed and routed) and bring
            its panel to the front: for what the user asked to see.
        request_load(Path): the same without bringing the panel to the front: for a job's result
            (a converted model, a repro), so the user stays where they were working.
        status(str): a short message for the status bar.
    """

    NAME = "panel"
    TITLE = "Panel"
    AREA = Qt.DockWidgetArea.RightDockWidgetArea

    request_open = Signal(object)
    request_load = Signal(object)
    status = Signal(str)

    def __init__(self, runner: JobRunner, parent: QWidget | None = None, links: PanelLinks | None = None):
        super().__init__(parent)
        self.runner = runner
        # Requests to and from other panels; a panel made on its own (tests) gets private links.
        self.links = links if links is not None else PanelLinks(self)
        # The open workspace's folder (the main window sets it), where panels write their results.
        self.workspace_folder: Path | None = None
        self.setObjectName(f"panel_{self.NAME}")

    @property
    def host_context(self):
        """The window's :class:`~studio.remote.context.HostContext` (hosts, known hosts, secrets,
        pooled connections), shared through ``links``; a panel made on its own gets a private one."""
        context = getattr(self.links, "host_context", None)
        if context is None:
            from studio.remote.context import HostContext
            from studio.ui.widgets.secret_prompt import GuiSecretPrompt

            context = HostContext(asker_factory=GuiSecretPrompt(self.window()).asker)
            self.links.host_context = context
        return context

    @host_context.setter
    def host_context(self, context) -> None:
        self.links.host_context = context

    def open_file(self, detected: Detected) -> None:
        """Show a file routed to this panel. Subclasses start their loading job here."""
        raise NotImplementedError
