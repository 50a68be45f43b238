"""The base every dock panel derives from, and the panel that lists files for tools to come.

A panel declares itself with class attributes (``NAME``, ``TITLE``, ``AREA``) and receives the
files the main window routes to it through :meth:`Panel.open_file`. It runs its work through
``self.runner`` (the shared JobRunner) and never imports another panel: cross-panel requests go
through the main window's signals.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.formats import Detected
from studio.ui.jobs import JobRunner
from studio.ui.links import PanelLinks


class Panel(QWidget):
    """A dockable tool panel.

    Signals:
        request_open(Path): ask the main window to open a file (it is sniffed and routed).
        status(str): a short message for the status bar.
    """

    NAME = "panel"
    TITLE = "Panel"
    AREA = Qt.DockWidgetArea.RightDockWidgetArea

    request_open = Signal(object)
    status = Signal(str)

    def __init__(self, runner: JobRunner, parent: QWidget | None = None, links: PanelLinks | None = None):
        super().__init__(parent)
        self.runner = runner
        # Requests to and from other panels; a panel made on its own (tests) gets private links.
        self.links = links if links is not None else PanelLinks(self)
        self.setObjectName(f"panel_{self.NAME}")

    def open_file(self, detected: Detected) -> None:
        """Show a file routed to this panel. Subclasses start their loading job here."""
        raise NotImplementedError


def _human_size(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


class FileListPanel(Panel):
    """A panel that lists the files routed to it (format, size, modified time, full path).

    Used for tools whose engine has not landed yet, so every routed file is visible and
    checkable (`studio info FILE` prints the same facts headless).
    """

    DESCRIPTION = ""

    def __init__(self, runner: JobRunner, parent: QWidget | None = None, links: PanelLinks | None = None):
        super().__init__(runner, parent, links)
        self._intro = QLabel(self)
        self._intro.setWordWrap(True)
        self._intro.setTextFormat(Qt.TextFormat.RichText)
        self._intro.setText(f"<b>{self.TITLE}</b><br>{self.DESCRIPTION}")
        self._intro.setContentsMargins(8, 8, 8, 4)
        self._files = QTreeWidget(self)
        self._files.setHeaderLabels(["File", "Format", "Size", "Modified", "Folder"])
        self._files.setRootIsDecorated(False)
        self._files.setAlternatingRowColors(True)
        self._files.setUniformRowHeights(True)
        header = self._files.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self._files.setColumnWidth(0, 240)
        self._files.setColumnWidth(1, 300)
        self._files.setColumnWidth(2, 80)
        self._files.setColumnWidth(3, 140)
        self._empty = QLabel("No file opened here yet. Use File > Open or drop a file on the window.", self)
        self._empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._empty.setStyleSheet("color: palette(mid);")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self._intro.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        layout.addWidget(self._intro)
        layout.addWidget(self._files, 1)
        layout.addWidget(self._empty, 1)  # the empty state takes the space the list will take
        self._files.hide()

    @property
    def opened_paths(self) -> list[Path]:
        """The files shown, in the order they were opened."""
        return [Path(self._files.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole))
                for i in range(self._files.topLevelItemCount())]

    def open_file(self, detected: Detected) -> None:
        path = detected.path
        for row in range(self._files.topLevelItemCount()):  # opening twice selects the row
            item = self._files.topLevelItem(row)
            if item.data(0, Qt.ItemDataRole.UserRole) == str(path):
                self._files.setCurrentItem(item)
                return
        stat = path.stat()
        size = "folder" if path.is_dir() else _human_size(stat.st_size)
        modified = _dt.datetime.fromtimestamp(stat.st_mtime).strftime("%Y-%m-%d %H:%M")
        item = QTreeWidgetItem([path.name, detected.format.label, size, modified, str(path.parent)])
        item.setData(0, Qt.ItemDataRole.UserRole, str(path))
        for column in range(5):  # long names are never cut without a way to read them
            item.setToolTip(column, f"{item.text(column)}\n{path}" if column else str(path))
        self._files.addTopLevelItem(item)
        self._files.setCurrentItem(item)
        self._files.show()
        self._empty.hide()
        self.status.emit(f"{self.TITLE}: {path.name} ({detected.format.label})")
