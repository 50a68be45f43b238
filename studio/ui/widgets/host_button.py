"""The "On host ▾" button a panel puts in its toolbar: its host actions in one menu.

The actions emit ``links.host_action(kind, panel)``; the main window's Run controls open the action's
dialog, run it on the chosen run configuration's host and open the result in the panel, which comes
back to the front because the user acted there. One button keeps the panels' toolbars uncrowded.
"""

from __future__ import annotations

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QToolButton, QWidget

# The host actions by kind, with the title their menu entry and dialog show.
KINDS = {"profile": "Profile on host", "dump": "Dump on host", "dump_compare": "Dump on host and compare",
         "bench": "Benchmark .om"}

NEEDS = ("Needs a workspace with a run configuration (Run > Edit Configurations…); "
         "without one, the action says so and opens that dialog.")


def host_button(parent: QWidget, links, actions: dict[str, str]) -> tuple[QToolButton, dict[str, QAction]]:
    """A tool button whose menu holds ``actions`` ({kind: tooltip}); returns it and {kind: QAction}."""
    button = QToolButton(parent)
    button.setText("On host ▾")
    button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
    button.setStyleSheet("QToolButton::menu-indicator { image: none; width: 0px; }")  # the ▾ says it: no overlap
    menu = QMenu(button)
    menu.setToolTipsVisible(True)
    made = {}
    for kind, tip in actions.items():
        action = menu.addAction(f"{KINDS[kind]}…")
        action.setToolTip(f"{tip}. {NEEDS}")
        origin = getattr(parent, "NAME", "")
        action.triggered.connect(lambda _=False, k=kind, o=origin: links.host_action.emit(k, o))
        made[kind] = action
    button.setMenu(menu)
    button.setToolTip("Run on an Ascend host: " + ", ".join(f"{KINDS[k]}…" for k in actions) + f". {NEEDS}")
    return button, made
