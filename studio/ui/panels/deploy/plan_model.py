"""A table model over a deployment plan: action, path, size, reason and the conflict choice."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor

from studio.tools.deploy.plan import CONFLICT, DELETE_LOCAL, DELETE_REMOTE, REFUSE, SKIP, Plan, PlanItem
from studio.core.units import human_size
from studio.ui.widgets.table_model import HeaderedRows

COLUMNS = ("Action", "Path", "Size", "Reason")
LABELS = {"upload": "Upload ↑", "download": "Download ↓", DELETE_REMOTE: "Delete remote", DELETE_LOCAL: "Delete local",
          CONFLICT: "Conflict", SKIP: "Skip", REFUSE: "Refused"}
CHOICE_LABELS = {"local": "keep local", "remote": "keep remote", "skip": "leave both"}
# Soft tints that read on light and dark palettes alike (text keeps the palette's colour).
TINTS = {CONFLICT: QColor(255, 170, 0, 70), REFUSE: QColor(220, 50, 50, 60),
         DELETE_REMOTE: QColor(220, 50, 50, 35), DELETE_LOCAL: QColor(220, 50, 50, 35)}


def shown(path: str) -> str:
    """One printable line (a newline in a file name shows as \\n)."""
    return path if path.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)


class PlanModel(HeaderedRows):
    """Rows are the plan's items; conflicts carry the user's per-file choice."""

    HEADERS = COLUMNS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.plan: Plan | None = None

    def set_plan(self, plan: Plan | None) -> None:
        self.beginResetModel()
        self.plan = plan
        self.endResetModel()

    def item(self, row: int) -> PlanItem:
        return self.plan.items[row]

    def row_count(self) -> int:
        return 0 if self.plan is None else len(self.plan.items)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        if not index.isValid() or self.plan is None:
            return None
        item = self.plan.items[index.row()]
        column = index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            if column == 0:
                text = LABELS[item.action]
                if item.action == CONFLICT:
                    text += f": {CHOICE_LABELS[item.choice]}" if item.choice else " — choose"
                return text
            if column == 1:
                return shown(item.path) if role == Qt.ItemDataRole.DisplayRole else \
                    f"{shown(item.path)}\nlocal: {_side(item.local)}\nremote: {_side(item.remote)}"
            if column == 2:
                return human_size(item.size) if item.size else ""
            return item.reason
        if role == Qt.ItemDataRole.BackgroundRole:
            tint = TINTS.get(item.action)
            if item.action == CONFLICT and item.choice:
                tint = QColor(80, 160, 255, 40)
            return QBrush(tint) if tint is not None else None
        if role == Qt.ItemDataRole.TextAlignmentRole and column == 2:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def set_choice(self, rows: list[int], choice: str | None) -> int:
        """Set the choice of the conflict rows among ``rows``; returns how many changed."""
        changed = 0
        for row in rows:
            item = self.plan.items[row]
            if item.action == CONFLICT:
                item.choice = choice
                changed += 1
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))
        return changed


def _side(info) -> str:
    if info is None:
        return "absent"
    import datetime as dt

    return f"{human_size(info.size)}, modified {dt.datetime.fromtimestamp(info.mtime):%Y-%m-%d %H:%M:%S}"
