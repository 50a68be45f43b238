"""Find text the window cuts: labels, buttons, tabs, headers and cells narrower than their text.

A text may be shortened only where the full text is one hover away (its tooltip holds it). This
walks every widget on screen under a root and lists each text that is wider than the room its
widget gives it with no tooltip holding it in full. ``studio screenshot --check-text`` and the
screenshot tests use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QCheckBox,
    QHeaderView,
    QDockWidget,
    QLabel,
    QPushButton,
    QRadioButton,
    QStyle,
    QTabBar,
    QTreeView,
    QWidget,
)

MAX_ROWS = 60  # cells looked at per view: the rows on screen of any real panel
SLACK = 2  # px of rounding between a font's advance and what the widget draws


@dataclass(frozen=True)
class CutText:
    """A text shown narrower than it is, with no tooltip holding it in full."""

    where: str  # the widget's class and object name, and the path of its parents' names
    text: str
    needed: int  # px the text needs
    room: int  # px the widget gives it

    def __str__(self) -> str:
        return f"{self.where}: {self.text!r} needs {self.needed} px, has {self.room}"


def find_cut_text(root: QWidget) -> list[CutText]:
    """Every text on screen under ``root`` that is cut with no tooltip holding it in full."""
    checks = ((QLabel, _label), (QAbstractButton, _button), (QTabBar, _tabs), (QHeaderView, _header),
              (QAbstractItemView, _cells), (QDockWidget, _dock_title))  # the first class that fits
    found: list[CutText] = []
    for widget in [root, *root.findChildren(QWidget)]:
        if _on_screen(widget):
            check = next((check for kind, check in checks if isinstance(widget, kind)), None)
            if check is not None:
                found.extend(check(widget))
    return found


def _on_screen(widget: QWidget) -> bool:
    return widget.isVisible() and not widget.visibleRegion().isEmpty() and widget.width() > 0


def _rich(text: str) -> bool:
    from PySide6 import QtGui

    return QtGui.Qt.mightBeRichText(text)


def _plain(text: str, rich: bool) -> str:
    if rich:
        document = QTextDocument()
        document.setHtml(text)
        text = document.toPlainText()
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def _held(full: str, tooltip: str) -> bool:
    """Whether ``tooltip`` holds the whole of ``full`` (spaces and line breaks aside)."""
    squash = lambda s: re.sub(r"\s+", " ", s).strip()  # noqa: E731
    tip = squash(_plain(tooltip, _rich(tooltip)))
    if not full or not tip:
        return False
    at = 0  # a text shortened by its panel ("…/conv/weight") is held when every piece is, in order
    for piece in (squash(p) for p in full.split("…")):
        found = tip.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _where(widget: QWidget) -> str:
    names, parent = [], widget.parentWidget()
    while parent is not None and len(names) < 3:
        if parent.objectName():
            names.append(parent.objectName())
        parent = parent.parentWidget()
    own = widget.objectName() or ""
    return f"{type(widget).__name__}{('#' + own) if own else ''} in {' < '.join(names) or 'window'}"


def _label(label: QLabel) -> list[CutText]:
    full = label.text()
    rich = label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and _rich(full))
    if not full or label.wordWrap() or label.pixmap() is not None and not label.pixmap().isNull():
        return []
    lines = _plain(full, rich).splitlines() or [""]
    needed = max(label.fontMetrics().horizontalAdvance(line) for line in lines)
    room = label.contentsRect().width() - 2 * max(label.margin(), 0) - max(label.indent(), 0)
    if needed <= room + SLACK or _held(_plain(full, rich), label.toolTip()):
        return []
    return [CutText(_where(label), _plain(full, rich), needed, room)]


def _button(button: QAbstractButton) -> list[CutText]:
    text = _plain(button.text(), False)
    if not text:
        return []
    needed = button.fontMetrics().horizontalAdvance(text)
    room = button.width() - _button_chrome(button)
    if needed <= room + SLACK or _held(text, button.toolTip()):
        return []
    return [CutText(_where(button), text, needed, room)]


def _button_chrome(button: QAbstractButton) -> int:
    """The px of a button's width that are not its text (padding, icon, check box, menu arrow)."""
    style = button.style()
    icon = button.iconSize().width() + 4 if not button.icon().isNull() else 0
    if isinstance(button, (QCheckBox, QRadioButton)):
        metric = QStyle.PixelMetric.PM_IndicatorWidth if isinstance(button, QCheckBox) else \
            QStyle.PixelMetric.PM_ExclusiveIndicatorWidth
        return style.pixelMetric(metric) + style.pixelMetric(QStyle.PixelMetric.PM_CheckBoxLabelSpacing) + icon
    if isinstance(button, QPushButton):  # the style's minimum width (80 px in Fusion) is not padding
        margin = style.pixelMetric(QStyle.PixelMetric.PM_ButtonMargin, None, button)
        frame = style.pixelMetric(QStyle.PixelMetric.PM_DefaultFrameWidth, None, button)
        arrow = style.pixelMetric(QStyle.PixelMetric.PM_MenuButtonIndicator, None, button) if button.menu() else 0
        return margin + 2 * frame + arrow + icon
    inner = button.fontMetrics().horizontalAdvance(_plain(button.text(), False))
    hint = button.sizeHint().width()  # the style's padding around the text, for this tool button
    return max(0, hint - inner) if hint > inner else icon


def _dock_title(dock: QDockWidget) -> list[CutText]:
    if dock.titleBarWidget() is not None or dock.isFloating():
        return []
    title = dock.windowTitle()
    buttons = 2 * (dock.style().pixelMetric(QStyle.PixelMetric.PM_TitleBarButtonSize, None, dock) + 4)
    needed = dock.fontMetrics().horizontalAdvance(title)
    room = dock.width() - buttons - 12  # the title's padding (studio.qss) and the frame
    return [CutText(f"title of {_where(dock)}", title, needed, room)] if needed > room + SLACK else []


def _tabs(bar: QTabBar) -> list[CutText]:
    found = []
    for index in range(bar.count()):
        text = _plain(bar.tabText(index), False)
        rect = bar.tabRect(index)
        if not text or not bar.isTabVisible(index) or rect.isEmpty():
            continue
        needed = bar.fontMetrics().horizontalAdvance(text)
        hint = bar.tabSizeHint(index).width()
        room = rect.width() - max(0, hint - needed)
        if needed > room + SLACK and not _held(text, bar.tabToolTip(index)):
            found.append(CutText(f"tab of {_where(bar)}", text, needed, room))
    return found


def _header(header: QHeaderView) -> list[CutText]:
    model = header.model()
    if model is None:
        return []
    found = []
    padding = 2 * header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin, None, header)
    for section in range(header.count()):
        if header.isSectionHidden(section) or header.sectionSize(section) <= 0:
            continue
        text = str(model.headerData(section, header.orientation(), Qt.ItemDataRole.DisplayRole) or "")
        if not text or header.orientation() == Qt.Orientation.Vertical:
            continue
        needed = max(header.fontMetrics().horizontalAdvance(line) for line in text.splitlines())
        sort = header.isSortIndicatorShown() and header.sortIndicatorSection() == section
        room = header.sectionSize(section) - padding - (
            header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMarkSize, None, header) if sort else 0)
        tip = str(model.headerData(section, header.orientation(), Qt.ItemDataRole.ToolTipRole) or "")
        if needed > room + SLACK and not _held(text, tip):
            found.append(CutText(f"header of {_where(header.parentWidget() or header)}", text, needed, room))
    return found


def _cells(view: QAbstractItemView) -> list[CutText]:
    model = view.model()
    if model is None or isinstance(view, QHeaderView):
        return []
    found: list[CutText] = []
    viewport = view.viewport().rect()
    metrics = view.fontMetrics()
    seen = 0
    header = view.header() if isinstance(view, QTreeView) else getattr(view, "horizontalHeader", lambda: None)()

    def visit(parent: QModelIndex, depth: int) -> None:
        nonlocal seen
        for row in range(model.rowCount(parent)):
            if seen >= MAX_ROWS:
                return
            for column in range(model.columnCount(parent)):
                if header is not None and header.isSectionHidden(column):
                    continue
                index = model.index(row, column, parent)
                rect = view.visualRect(index)
                if rect.height() <= 0 or rect.top() > viewport.bottom() or rect.bottom() < viewport.top():
                    continue
                if rect.width() > 0 and not rect.intersects(viewport):
                    continue  # scrolled out sideways
                seen += column == 0
                text = str(model.data(index, Qt.ItemDataRole.DisplayRole) or "")
                if not text or "\n" in text:
                    continue
                needed = metrics.horizontalAdvance(text) + 2 * view.style().pixelMetric(
                    QStyle.PixelMetric.PM_FocusFrameHMargin, None, view)
                icon = view.iconSize().width() + 4 if model.data(index, Qt.ItemDataRole.DecorationRole) else 0
                check = 20 if model.data(index, Qt.ItemDataRole.CheckStateRole) is not None else 0
                room = rect.width() - icon - check
                tip = str(model.data(index, Qt.ItemDataRole.ToolTipRole) or "")
                if needed > room + SLACK + 4 and not _held(text, tip):
                    found.append(CutText(f"cell of {_where(view)}", text, needed, room))
            if isinstance(view, QTreeView) and view.isExpanded(model.index(row, 0, parent)):
                visit(model.index(row, 0, parent), depth + 1)

    visit(view.rootIndex(), 0)
    return found
