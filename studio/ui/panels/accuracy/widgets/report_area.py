"""The Accuracy panel's findings and reports, scrolled when long so the table and plots keep room.

Reports of the next steps (repro, FP32 set, checks) are appended under the verdict; as a plain label
they grew until the table showed one row and the scatter 25 px on a 720 px screen.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy

MIN_HEIGHT = 48  # two lines of text: the verdict stays in sight


def findings_label(parent) -> QLabel:
    """The label of the findings and reports: rich text, wrapped, selectable (for :class:`ReportArea`)."""
    label = QLabel(parent)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
    label.setContentsMargins(6, 4, 6, 4)
    return label


class ReportArea(QScrollArea):
    """Holds ``label``; asks for the label's height but gives way (down to two lines) when the
    panel is short, and hides itself with the label."""

    def __init__(self, label: QLabel, parent=None):
        super().__init__(parent)
        self.label = label
        self.setWidget(label)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(MIN_HEIGHT)
        label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        label.installEventFilter(self)

    def sizeHint(self) -> QSize:  # Qt override: the whole text when there is room
        width = max(100, self.viewport().width())
        height = self.label.heightForWidth(width) if self.label.hasHeightForWidth() else -1
        if height < 0:
            height = self.label.sizeHint().height()
        return QSize(super().sizeHint().width(), max(MIN_HEIGHT, height + 2 * self.frameWidth()))

    def minimumSizeHint(self) -> QSize:  # Qt override
        return QSize(super().minimumSizeHint().width(), MIN_HEIGHT)

    def eventFilter(self, watched, event) -> bool:  # Qt override
        if watched is self.label:
            kind = event.type()
            if kind in (QEvent.Type.ShowToParent, QEvent.Type.HideToParent):
                self.setVisible(kind == QEvent.Type.ShowToParent)
            if kind in (QEvent.Type.ShowToParent, QEvent.Type.LayoutRequest, QEvent.Type.Resize):
                self.updateGeometry()  # new text: ask for its height again
        return super().eventFilter(watched, event)
