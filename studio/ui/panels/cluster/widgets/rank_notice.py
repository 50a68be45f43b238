"""The line under the Cluster panel's toolbar that says why a rank's timeline cannot be opened, and
offers what the export does hold: a nearby rank's timeline, the rank's communication."""

from __future__ import annotations

import html

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from studio.ui.panels.cluster.state import step_label

SHOWN_FILES = 4  # the folder's files named in the notice; the rest are counted (all are in the tooltip)


def no_timeline_text(row: dict, files: list[str]) -> str:
    """Why ``row``'s rank opens with no slice: its folder's files are statistics only."""
    names = [f.split("/")[-1] for f in files]
    listed = ", ".join(names[:SHOWN_FILES]) + (f" and {len(names) - SHOWN_FILES} more" if len(names) > SHOWN_FILES
                                                else "")
    return (f"rank {row['rank']} has no timeline in this export: its folder holds only {listed or 'no file'} "
            f"(the step times and communication shown here), no trace_view.json, kernel_details.csv or profiler "
            f"database. Profile again with every rank's timeline exported to see it.")


class RankNotice(QFrame):
    """Signals: open_rank(dict) — open this rank's timeline instead; show_comm(int) — show the rank's
    communication."""

    open_rank = Signal(object)
    show_comm = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.timeline_button = QPushButton(self)
        self.comm_button = QPushButton(self)
        self.close_button = QPushButton("Close", self)
        # The text takes the whole width (beside the buttons it wrapped into nine lines at 1,024 px
        # and pushed the window past the screen's height); the buttons go under it.
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.label)
        buttons = QHBoxLayout()
        for button in (self.timeline_button, self.comm_button, self.close_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self._row = self._stand_in = None
        self.timeline_button.clicked.connect(lambda: self._stand_in and self.open_rank.emit(self._stand_in))
        self.comm_button.clicked.connect(lambda: self._row and self.show_comm.emit(self._row["rank"]))
        self.close_button.clicked.connect(self.hide)
        self.hide()

    @property
    def rank(self) -> int | None:
        """The rank the notice speaks of (None when hidden)."""
        return self._row["rank"] if self._row is not None and self.isVisible() else None

    def show_for(self, row: dict, files: list[str], stand_in: dict | None) -> None:
        """Say that ``row``'s rank has no timeline; offer ``stand_in``'s (None: there is none)."""
        self._row, self._stand_in = row, stand_in
        self.label.setText(html.escape(no_timeline_text(row, files), quote=False))
        self.label.setToolTip("\n".join(files))
        if stand_in is not None:
            same = stand_in.get("pp_stage") is not None and stand_in.get("pp_stage") == row.get("pp_stage")
            self.timeline_button.setText(f"Open rank {stand_in['rank']}'s timeline"
                                         + (f" (same stage {stand_in['pp_stage']})" if same else ""))
            self.timeline_button.setToolTip(f"rank {stand_in['rank']}, step {step_label(stand_in.get('step'))}: "
                                            "the nearest rank whose folder holds a timeline")
        self.timeline_button.setVisible(stand_in is not None)
        self.comm_button.setText(f"Rank {row['rank']}'s communication")
        self.comm_button.setToolTip("The communication tab: the links this rank sends and receives on")
        self.show()
