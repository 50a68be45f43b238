"""A panel's row of tools that fits any width: what does not fit goes under "More ▾".

A ``ToolRow`` is a QToolBar laid in a panel (not in the main window): Qt's toolbar layout shrinks
the widgets that may shrink (an :class:`~studio.ui.widgets.elided_label.ElidedLabel`, a find box)
first, then hides the tools at the end of the row behind its extension button, so a panel's
toolbar never makes the window wider. Put the tools used most first.

Outside a main window Qt's extension menu lists plain actions only, so the row adds a stand-in
for each hidden widget when the menu opens: a button's click (its own menu as a submenu), a check
box's tick, a combo box's choices, an edit box's text (asked in a dialog), a label's text.

Showing and hiding a widget in the row goes through :meth:`ToolRow.set_shown`: a toolbar
manages the visibility of its widgets itself.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMenu,
    QSizePolicy,
    QToolBar,
    QToolButton,
    QWidget,
)

from studio.ui import style


class ToolRow(QToolBar):
    """A toolbar inside a panel with an overflow menu ("More ▾") for the tools that do not fit."""

    def __init__(self, parent: QWidget | None = None, name: str = "tools"):
        super().__init__(parent)
        self.setObjectName(f"tool_row_{name}")
        self.setMovable(False)
        self.setFloatable(False)
        self.setIconSize(QSize(16, 16))
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.PreventContextMenu)  # no "hide toolbar" menu
        self.setContentsMargins(style.GAP, 0, style.GAP, 0)
        self.layout().setSpacing(style.GAP)
        self._actions: dict[int, object] = {}  # id(widget) -> its QWidgetAction
        extension = self.findChild(QToolButton, "qt_toolbar_ext_button")
        if extension is not None:
            extension.setToolTip("More tools (the row is too narrow to show them all)")
            if extension.menu() is not None:
                extension.menu().aboutToShow.connect(lambda: self.fill_overflow(extension.menu()))

    def hidden_widgets(self) -> list[QWidget]:
        """The widgets of the row that do not fit (in the row's order)."""
        hidden = []
        for action in self.actions():
            widget = self.widgetForAction(action)
            if widget is not None and action.isVisible() and widget.isHidden():
                hidden.append(widget)
        return hidden

    def fill_overflow(self, menu: QMenu) -> None:
        """Put a stand-in for each hidden widget at the end of ``menu`` (the extension's menu)."""
        for action in menu.actions():
            if action.property("studio_stand_in"):
                menu.removeAction(action)
                action.deleteLater()
        for widget in self.hidden_widgets():
            action = _stand_in(widget, menu)
            if action is not None:
                action.setProperty("studio_stand_in", True)
                menu.addAction(action)

    def addWidget(self, widget: QWidget, stretch: int = 0):  # Qt override: also takes a stretch
        """Add ``widget`` at the end; with ``stretch`` it takes the row's free space (and gives it
        back first when the row gets narrow)."""
        if stretch:
            widget.setSizePolicy(QSizePolicy.Policy.Expanding, widget.sizePolicy().verticalPolicy())
        action = super().addWidget(widget)
        self._actions[id(widget)] = action
        return action

    def set_shown(self, widget: QWidget, shown: bool) -> None:
        """Show or hide a widget of this row (``QWidget.setVisible`` does not work in a toolbar)."""
        self._actions[id(widget)].setVisible(shown)

    def is_shown(self, widget: QWidget) -> bool:
        """Whether ``widget`` has a place in the row (on it or in its overflow menu)."""
        return self._actions[id(widget)].isVisible()


def _stand_in(widget: QWidget, menu: QMenu) -> QAction | None:
    """A menu entry that does what ``widget`` does (None for a widget with nothing to offer)."""
    if isinstance(widget, QAbstractButton):
        text = widget.text().rstrip(" ▾") or widget.toolTip().split("\n")[0]
        if isinstance(widget, QToolButton) and widget.menu() is not None:
            sub = QMenu(text, menu)
            for entry in widget.menu().actions():
                sub.addAction(entry)
            action = sub.menuAction()
        else:
            action = QAction(text, menu)
            action.setCheckable(widget.isCheckable())
            action.setChecked(widget.isChecked())
            action.triggered.connect(lambda _=False, w=widget: w.click())
        action.setToolTip(widget.toolTip())
        action.setEnabled(widget.isEnabled())
        return action
    if isinstance(widget, QComboBox):
        sub = QMenu(widget.toolTip().split("\n")[0] or widget.currentText() or "Choose", menu)
        for index in range(widget.count()):
            choice = sub.addAction(widget.itemText(index))
            choice.setCheckable(True)
            choice.setChecked(index == widget.currentIndex())
            choice.triggered.connect(lambda _=False, w=widget, i=index: w.setCurrentIndex(i))
        sub.menuAction().setEnabled(widget.isEnabled() and widget.count() > 0)
        return sub.menuAction()
    if isinstance(widget, QLineEdit):
        action = QAction(f"{widget.placeholderText() or 'Text'}", menu)
        action.triggered.connect(lambda _=False, w=widget: _ask_text(w))
        action.setEnabled(widget.isEnabled())
        return action
    if isinstance(widget, QLabel) and widget.text():
        action = QAction(widget.text(), menu)
        action.setEnabled(False)  # information, not a command
        return action
    return None


def _ask_text(edit: QLineEdit) -> None:
    text, ok = QInputDialog.getText(edit.window(), "Tools", edit.placeholderText() or "Text", text=edit.text())
    if ok:
        edit.setText(text)
        edit.returnPressed.emit()


def menu_button(parent: QWidget, text: str, tip: str, menu) -> QToolButton:
    """A tool button that opens ``menu`` at once; its text ends with "▾", so Qt's own arrow is hidden."""
    button = QToolButton(parent)
    button.setText(text if text.endswith("▾") else f"{text} ▾")
    button.setToolTip(tip)
    button.setMenu(menu)
    button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
    button.setStyleSheet("QToolButton::menu-indicator { image: none; width: 0px; }")
    return button
