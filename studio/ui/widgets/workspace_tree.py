"""The workspace panel: the workspace folder as a tree; double-click opens a file in its panel, the
context menu opens a file or a folder (a PROF_ folder, a folder of ranks) in its panel.

QFileSystemModel lists folders on its own thread, so a 10,000-file workspace never blocks.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QDir, QModelIndex, QPoint, Qt, Signal
from PySide6.QtWidgets import QFileSystemModel, QHeaderView, QLabel, QMenu, QTreeView, QVBoxLayout, QWidget

from studio.ui.widgets.empty_state import EmptyState


class WorkspaceTree(QWidget):
    """Browse the open workspace.

    Signals:
        open_requested(Path): the user double-clicked (or pressed Enter on) a file, or chose Open
            in the context menu of a file or folder.
        open_workspace_requested(), demo_requested(): the empty state's buttons.
    """

    open_requested = Signal(object)
    open_workspace_requested = Signal()
    demo_requested = Signal()
    MIN_WIDTH = 180  # names stay readable: the tool panels give way first (their toolbars overflow)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMinimumWidth(self.MIN_WIDTH)
        self.empty = EmptyState("No workspace open", "A workspace is a folder of models, profiles and dumps; "
                                "what Studio makes goes into it.", self)
        self.empty.add_action("Open…", self.open_workspace_requested.emit, "Open a folder as the workspace")
        self.empty.add_action("Demo", self.demo_requested.emit,
                              "Write and open the demo workspace: a U-Net with its profile, dumps and findings")
        self.title = QLabel(self)
        self.title.setWordWrap(True)
        self.title.hide()  # the workspace's name and folder, once one is open
        self.title.setContentsMargins(6, 4, 6, 4)
        self.title.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.model = QFileSystemModel(self)
        self.model.setFilter(QDir.Filter.AllEntries | QDir.Filter.NoDotAndDotDot)  # dotfiles stay hidden
        self.model.setReadOnly(True)
        self.view = QTreeView(self)
        self.view.setModel(self.model)
        self.view.setUniformRowHeights(True)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        for column in (2, 3):  # keep name and size; type and date crowd a narrow dock
            self.view.hideColumn(column)
        header = self.view.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.view.activated.connect(self._on_activated)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._on_context_menu)
        self.view.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.empty, 1)
        layout.addWidget(self.title)
        layout.addWidget(self.view, 1)
        self.folder: Path | None = None

    def set_folder(self, folder: Path, name: str) -> None:
        """Show ``folder`` as the workspace root."""
        self.folder = folder
        root = self.model.setRootPath(str(folder))
        self.view.setRootIndex(root)
        self.title.setText(f"<b>{name}</b> — {folder}")
        self.title.setToolTip(str(folder))
        self.empty.hide()
        self.title.show()
        self.view.show()

    def _on_activated(self, index: QModelIndex) -> None:
        path = Path(self.model.filePath(index))
        if path.is_file():
            self.open_requested.emit(path)

    def context_menu(self, index: QModelIndex) -> QMenu | None:
        """The menu of the item at ``index``: Open (a folder opens as a whole, e.g. a folder of ranks)."""
        if not index.isValid():
            return None
        path = Path(self.model.filePath(index))
        menu = QMenu(self)
        action = menu.addAction("Open Folder in Studio" if path.is_dir() else "Open")
        action.triggered.connect(lambda _=False, p=path: self.open_requested.emit(p))
        return menu

    def _on_context_menu(self, pos: QPoint) -> None:
        menu = self.context_menu(self.view.indexAt(pos))
        if menu is not None:
            menu.exec(self.view.viewport().mapToGlobal(pos))
