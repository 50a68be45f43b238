"""Ctrl+P in the timeline: find a track by a few letters of its name, go to it or pin it.

The match is fuzzy the way editors' "go to file" is: the letters typed appear in order in the
track's ``process / track`` label; matches in a row, at the start of a word, and short labels
rank first. Enter goes to the best match; Ctrl+Enter pins it; "Pin all matches" pins every match
(every rank's lane of one communication group, say).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout

from studio.tools.profiler.model import Trace

MAX_SHOWN = 500


def fuzzy_score(query: str, text: str) -> float | None:
    """How well ``query``'s letters match ``text`` in order (higher is better), or None for no match."""
    query, lowered = "".join(query.lower().split()), text.lower()
    if not query:
        return 0.0
    score, at, previous = 0.0, 0, -2
    for char in query:
        found = lowered.find(char, at)
        if found < 0:
            return None
        score += 1.0
        if found == previous + 1:
            score += 2.0  # letters in a row
        if found == 0 or not lowered[found - 1].isalnum():
            score += 1.5  # the start of a word
        previous, at = found, found + 1
    return score - 0.01 * len(text)


def rank_tracks(trace: Trace, query: str, tracks: list[int] | None = None) -> list[tuple[int, str]]:
    """(track id, label) of the tracks matching ``query``, best first."""
    scored = []
    for track in tracks if tracks is not None else range(len(trace.tracks)):
        label = trace.track_label(track)
        score = fuzzy_score(query, label)
        if score is not None:
            scored.append((-score, label, track))
    scored.sort()
    return [(track, label) for _, label, track in scored]


class TrackFinder(QDialog):
    """Signals: go_to(int) — a track id; pin(list) — the track ids to pin."""

    go_to = Signal(int)
    pin = Signal(object)

    def __init__(self, trace: Trace, pinned: list[int], parent=None):
        super().__init__(parent)
        self.setWindowTitle("Find a track")
        self.trace = trace
        self.pinned = set(pinned)
        self.tracks = sorted({int(t) for t in trace.lod.row_track.tolist()}) if trace.lod is not None else []
        self.query = QLineEdit(self)
        self.query.setPlaceholderText("letters of a process or track name, e.g. rank3 hccl")
        self.query.textChanged.connect(self._refresh)
        self.list = QListWidget(self)
        self.list.itemActivated.connect(lambda item: self._go(item.data(Qt.ItemDataRole.UserRole)))
        self.count = QLabel(self)
        pin_one = QPushButton("Pin", self)
        pin_one.setToolTip("Pin the selected track (Ctrl+Enter)")
        pin_one.clicked.connect(self._pin_selected)
        self.pin_all = QPushButton("Pin all matches", self)
        self.pin_all.setToolTip("Pin every track listed (e.g. one group's lane on every rank)")
        self.pin_all.clicked.connect(self._pin_matches)
        buttons = QHBoxLayout()
        buttons.addWidget(self.count, 1)
        buttons.addWidget(pin_one)
        buttons.addWidget(self.pin_all)
        layout = QVBoxLayout(self)
        layout.addWidget(self.query)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        self.resize(520, 420)
        self._matches: list[int] = []
        self._refresh("")

    def _refresh(self, text: str) -> None:
        ranked = rank_tracks(self.trace, text, self.tracks)
        self._matches = [track for track, _ in ranked]
        self.list.clear()
        for track, label in ranked[:MAX_SHOWN]:
            item = QListWidgetItem(("★ " if track in self.pinned else "") + label)
            item.setData(Qt.ItemDataRole.UserRole, track)
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)
        shown = f" (the first {MAX_SHOWN} listed)" if len(ranked) > MAX_SHOWN else ""
        self.count.setText(f"{len(ranked):,} of {len(self.tracks):,} tracks{shown}")
        self.pin_all.setEnabled(bool(ranked) and bool(text.strip()))

    def keyPressEvent(self, event) -> None:  # Qt override
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                self._pin_selected()
            else:
                item = self.list.currentItem()
                if item is not None:
                    self._go(item.data(Qt.ItemDataRole.UserRole))
            return
        if event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up) and self.query.hasFocus():
            step = 1 if event.key() == Qt.Key.Key_Down else -1
            self.list.setCurrentRow(max(0, min(self.list.count() - 1, self.list.currentRow() + step)))
            return
        super().keyPressEvent(event)

    def _go(self, track: int) -> None:
        self.go_to.emit(int(track))
        self.accept()

    def _pin_selected(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.pin.emit([int(item.data(Qt.ItemDataRole.UserRole))])
            self.accept()

    def _pin_matches(self) -> None:
        self.pin.emit(list(self._matches))
        self.accept()
