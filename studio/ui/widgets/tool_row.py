"""A panel's row of tools that fits any width: what does not fit goes under "More ▾".

A ``ToolRow`` is a QToolBar laid in a panel (not in the main window): Qt's toolbar layout shrinks
the widgets that may shrink (an :class:`~studio.ui.widgets.elided_label.ElidedLabel`, a find box)
first, then moves the tools at the end of the row into its extension menu, so a panel's
toolbar never makes the window wider. Put the tools used most first.

Showing and hiding a widget in the row goes through :meth:`ToolRow.set_shown`: a toolbar
manages the visibility of its widgets itself.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QSizePolicy, QToolBar, QToolButton, QWidget

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


def menu_button(parent: QWidget, text: str, tip: str, menu) -> QToolButton:
    """A tool button that opens ``menu`` at once; its text ends with "▾", so Qt's own arrow is hidden."""
    button = QToolButton(parent)
    button.setText(text if text.endswith("▾") else f"{text} ▾")
    button.setToolTip(tip)
    button.setMenu(menu)
    button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
    button.setStyleSheet("QToolButton::menu-indicator { image: none; width: 0px; }")
    return button
