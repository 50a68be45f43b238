"""The part every list-of-rows table model shares: counts and column headers.

A model subclasses :class:`HeaderedRows`, names its headers in ``HEADERS`` and keeps its rows in
``self.rows`` (or overrides :meth:`row_count`); it writes only ``data`` itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt


class HeaderedRows(QAbstractTableModel):
    """A flat table model over ``self.rows`` under the fixed column headers ``HEADERS``."""

    HEADERS: Sequence = ()
    rows: Sequence = ()

    def header(self, section: int) -> str:
        """The text of column ``section``'s header (``HEADERS[section]`` by default)."""
        return self.HEADERS[section]

    def row_count(self) -> int:
        """How many rows the table has (``len(self.rows)`` by default)."""
        return len(self.rows)

    def rowCount(self, parent=QModelIndex()) -> int:  # Qt override
        return 0 if parent.isValid() else self.row_count()

    def columnCount(self, parent=QModelIndex()) -> int:  # Qt override
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.header(section)
        return None
