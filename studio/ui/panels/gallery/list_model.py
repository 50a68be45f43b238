"""The thumbnail grid's model: the state's visible rows, captions and cached thumbnails."""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, QSize, Qt
from PySide6.QtGui import QColor, QPixmap

from studio.ui.panels.gallery.state import GalleryState
from studio.ui.panels.gallery.thumbs import SIZE, ThumbCache

ROW_ROLE = Qt.ItemDataRole.UserRole


class GalleryModel(QAbstractListModel):
    """One item per visible picture; thumbnails come from the cache (a grey square until loaded)."""

    def __init__(self, state: GalleryState, cache: ThumbCache, parent=None):
        super().__init__(parent)
        self.state = state
        self.cache = cache
        self.rows: list[dict] = []
        self._placeholder = QPixmap(SIZE, SIZE)
        self._placeholder.fill(QColor("#d9dde3"))

    def refresh(self) -> None:
        """Take the state's rows again (after a new run, sort or filter)."""
        self.beginResetModel()
        self.rows = self.state.visible()
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # Qt override
        return 0 if parent.isValid() else len(self.rows)

    def key(self, row: dict) -> str:
        """The thumbnail cache key of a row (its run folder and picture)."""
        return f"{self.state.run.folder}/{row['image']}"

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):  # Qt override
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return self.state.caption(row)
        if role == Qt.ItemDataRole.DecorationRole:
            return self.cache.get(self.key(row)) or self._placeholder
        if role == Qt.ItemDataRole.ToolTipRole:
            return "\n".join(f"{k}: {v}" for k, v in row.items() if k not in ("top", "boxes"))
        if role == Qt.ItemDataRole.SizeHintRole:
            return QSize(SIZE + 24, SIZE + 44)
        if role == ROW_ROLE:
            return row
        return None

    def thumbnails_changed(self, first: int, last: int) -> None:
        """Repaint rows ``first..last`` (their thumbnails arrived)."""
        if self.rows:
            self.dataChanged.emit(self.index(max(first, 0)), self.index(min(last, len(self.rows) - 1)),
                                  [Qt.ItemDataRole.DecorationRole])
