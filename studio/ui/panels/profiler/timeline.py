"""The timeline canvas: navigation, selection and hit testing (drawing is in ``paint.py``).

Keys: W/S zoom, A/D pan, F fit (the selection, else everything), Esc clears, Ctrl+P finds a
track (fuzzy) to go to or pin. Mouse: wheel zooms at the cursor (Shift+wheel or wheel over the
names scrolls), drag pans, Shift+drag or a drag on the ruler selects a time range, click selects a
slice, hover explains it, right-click a track's name to pin it. Pinned tracks sit in a band under
the ruler that does not scroll, so a few lanes stay in view beside any other (Perfetto's pins).
"""

from __future__ import annotations

import json

import numpy as np
from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QKeyEvent, QMouseEvent, QStaticText, QWheelEvent
from PySide6.QtWidgets import QScrollBar, QToolTip, QWidget

from studio.tools.profiler import lod as lodlib
from studio.tools.profiler import stats
from studio.tools.profiler.model import Trace
from studio.ui.panels.profiler.layout import Row, build_rows, content_height, pinned_height, row_at
from studio.ui.panels.profiler.paint import BANDS, GUTTER, KEYS_HELP, RULER, TimelinePainting
from studio.ui.panels.profiler.timefmt import format_duration
from studio.ui.panels.profiler.markers import TimelineMarkers
from studio.ui.panels.profiler.track_actions import TrackActions

__all__ = ["GUTTER", "RULER", "TimelineView"]


# The fields a hover shows first, as readers name them (ONNX Runtime, msprof CSV and DB, PyTorch).
KEY_FIELDS = ("op_name", "op type", "optype", "provider", "task type", "input shapes", "input_type_shape",
              "output shapes", "output_type_shape", "block num", "category")
MAX_FIELDS = 4
MAX_VALUE = 72  # characters of one field's value in a hover


def key_fields(args: dict) -> list[tuple[str, object]]:
    """At most MAX_FIELDS (key, value) pairs of ``args``: the known important keys first, in
    KEY_FIELDS order; other keys only when none of those is there."""
    norm = {key.lower().replace("_", " ").strip(): key for key in args}
    chosen = []
    for wanted in KEY_FIELDS:
        key = norm.get(wanted.replace("_", " "))
        if key is not None and key not in (k for k, _ in chosen) and args[key] not in ("", None, [], {}):
            chosen.append((key, args[key]))
    if not chosen:
        chosen = [(key, value) for key, value in args.items() if not isinstance(value, (dict, list))]
    return chosen[:MAX_FIELDS]


def short_value(value) -> str:
    """A field's value on one line, cut after a whole item (never inside a number) when long."""
    text = value if isinstance(value, str) else json.dumps(value)
    text = " ".join(text.split())
    if len(text) <= MAX_VALUE:
        return text
    cut = max(text.rfind(sep, 0, MAX_VALUE) for sep in (",", ";", " "))
    return text[:cut if cut > 0 else MAX_VALUE].rstrip(",; ") + " …"


class TimelineView(TimelinePainting, TrackActions, TimelineMarkers, QWidget):
    """Signals: slice_selected(int, -1 for none), range_selected(int, int) in ns."""

    slice_selected = Signal(int)
    range_selected = Signal(object, object)
    area_selected = Signal(object, object, object)  # t0, t1 (ns) and the track ids a Shift+drag spanned

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumHeight(160)
        self.trace: Trace | None = None
        self.rows: list[Row] = []
        self.collapsed: set[str] = set()
        self.pinned: list[int] = []  # track ids, in the order pinned
        self.markers: list[int] = []  # marker times (ns), sorted
        self.pinned_h = 0
        self.thresholds = (0.05, 0.10)
        self.t0, self.t1 = 0.0, 1.0
        self.opened_window: tuple[float, float] | None = None  # set by set_trace
        self.selected = -1
        self.highlighted = np.zeros(0, np.int64)
        self._hl_start = np.zeros(0, np.int64)
        self._hl_longest = 0
        self.range: tuple[int, int] | None = None
        self.area_tracks: list[int] = []  # the tracks of the selected area ([] = a time range on every track)
        self._drag_y = 0
        self.last_frame_ms = 0.0
        self._after_paint: list = []  # called once the next frame is painted
        self._default_rows: list | None = None  # the trace's rows when nothing is collapsed or pinned
        self._colours = np.zeros(0, np.uint32)
        self._share = np.zeros(0)
        self._index_rows()
        self._counter_max: list[float] = []
        self._drag: tuple[str, int, float, float] | None = None
        self._label_cache: dict[tuple[int, int], QStaticText] = {}
        self._font = QFont(self.font())
        self._font.setPointSizeF(max(7.0, self._font.pointSizeF() - 1))
        self._metrics = QFontMetrics(self._font)
        self.scroll = QScrollBar(Qt.Orientation.Vertical, self)
        self.scroll.valueChanged.connect(self.update)

    # ------------------------------------------------------------------ model
    def set_trace(self, trace: Trace | None, by_name: list | None = None, share: np.ndarray | None = None,
                  first_view: tuple[int, int] | None = None, counter_max: list[float] | None = None,
                  rows: list | None = None) -> None:
        """Show ``trace`` (fitted, or on ``first_view`` (t0, t1) ns), or nothing; ``by_name`` is its op
        statistics and ``share`` :func:`stats.share_by_name_id` when already computed (they give
        the colours; computing them here would stall the GUI on big traces), as ``counter_max``
        (each counter's largest magnitude) and ``rows`` (its layout with nothing collapsed or
        pinned, :func:`~.layout.build_rows`) may be."""
        if trace is not self.trace:
            self.pinned, self.markers = [], []  # track ids and times mean nothing in another trace
        self.trace = trace
        self._default_rows = rows
        self.selected, self.range, self.area_tracks = -1, None, []
        self.set_highlighted(np.zeros(0, np.int64))
        self._label_cache.clear()
        if trace is not None:
            self._share = share if share is not None else stats.share_by_name_id(trace, by_name)
            self._counter_max = counter_max if counter_max is not None else [
                float(np.nanmax(np.abs(c.values))) if c.values.size else 1.0 for c in trace.counters]
            self._recolour()
            self._relayout()
            self.fit()
            if first_view is not None:
                pad = (first_view[1] - first_view[0]) * 0.02
                self.set_window(first_view[0] - pad, first_view[1] + pad)
        self.opened_window = (self.t0, self.t1)  # the window the trace opened on, not one the user chose
        self.update()

    def after_next_paint(self, callback) -> None:
        """Call ``callback`` (no arguments) when the next frame has been painted."""
        self._after_paint.append(callback)
        self.update()

    def set_highlighted(self, indices: np.ndarray) -> None:
        """Outline these slices (a find's matches, an op's slices)."""
        indices = np.asarray(indices, dtype=np.int64)
        if self.trace is None or not indices.size:
            self.highlighted, self._hl_start, self._hl_longest = np.zeros(0, np.int64), np.zeros(0, np.int64), 0
        else:
            starts = np.asarray(self.trace.start)[indices]
            order = np.argsort(starts, kind="stable")
            self.highlighted, self._hl_start = indices[order], starts[order]
            self._hl_longest = int(np.asarray(self.trace.dur)[indices].max())
        self.update()

    def set_thresholds(self, green_max: float, red_min: float) -> None:
        """Share bands: <= green_max green, >= red_min red, yellow between (fractions)."""
        self.thresholds = (green_max, red_min)
        self._recolour()
        self.update()

    def _recolour(self) -> None:
        if self.trace is None:
            return
        share = self._share
        with np.errstate(invalid="ignore"):
            band = np.where(share >= self.thresholds[1], 2, np.where(share > self.thresholds[0], 1, 0))
        band = np.where(np.isnan(share), 3, band)  # the run's wrappers are not ops: grey
        shade = np.arange(share.size) % 3
        palette = np.array(BANDS, dtype=np.uint32)
        self._colours = palette[band, shade]

    def _relayout(self) -> None:
        if self.trace is None:
            self.rows = []
        elif self._default_rows is not None and not self.pinned and not self.collapsed:
            self.rows = self._default_rows  # laid out by the job that opened the trace
        else:
            self.rows = build_rows(self.trace, self.collapsed, self.pinned)
        self.pinned_h = pinned_height(self.rows)
        self._index_rows()
        self._update_scroll()

    def _index_rows(self) -> None:
        """What a frame looks rows up by: their tops and bottoms (bisected for the visible ones),
        the first scrolling row, and (track, depth) -> row, as a dict and as an array (for the
        flows' end points, looked up all at once)."""
        rows = self.rows
        self._first_scrolling = next((i for i, r in enumerate(rows) if not r.pinned), len(rows))
        self._row_tops = [r.y for r in rows]
        self._row_bottoms = [r.y + r.h for r in rows]
        self._row_arrays = (np.array(self._row_tops, np.int64), np.array([r.h for r in rows], np.int64),
                            np.array([r.pinned for r in rows], bool))
        slices = [(i, r) for i, r in enumerate(rows) if r.kind == "slices"]
        self._row_of = {(r.track, r.depth): r for _, r in slices}
        tracks = max((r.track for _, r in slices), default=-1) + 1
        depths = max((r.depth for _, r in slices), default=-1) + 1
        self._row_table = np.full((tracks, depths), -1, np.int64)
        for i, r in slices:
            self._row_table[r.track, r.depth] = i

    def set_pinned(self, tracks: list[int]) -> None:
        """Pin these tracks (ids, in this order) in the band under the ruler; [] unpins all."""
        self.pinned = list(dict.fromkeys(int(t) for t in tracks))
        self._relayout()
        self.update()

    def toggle_pinned(self, track: int) -> None:
        """Pin ``track`` (at the end of the band), or unpin it."""
        self.set_pinned([t for t in self.pinned if t != track] if track in self.pinned else [*self.pinned, track])

    def gutter_width(self) -> int:
        return GUTTER

    def ruler_height(self) -> int:
        return RULER

    def tracks_between(self, y_a: int, y_b: int) -> list[int]:
        """The track ids of the slice rows drawn between widget heights ``y_a`` and ``y_b``."""
        top, bottom = sorted((y_a, y_b))
        found = []
        for row in self.visible_rows():
            y = RULER + self.row_top(row)
            if row.kind == "slices" and y < bottom and y + row.h > top and row.track not in found:
                found.append(row.track)
        return found

    # ------------------------------------------------------------------ rows on screen
    def row_top(self, row: Row) -> int:
        """The row's top in the viewport below the ruler (pinned rows do not scroll)."""
        return row.y if row.pinned else row.y - self.scroll.value()

    def hidden_by_band(self, row: Row) -> bool:
        """A scrolling row that is (partly) under the pinned band: not drawn, not picked."""
        return self.pinned_h > 0 and not row.pinned and self.row_top(row) < self.pinned_h

    def row_at_y(self, y: int) -> Row | None:
        """The row at widget ``y`` (the pinned band first)."""
        content = y - RULER
        if content < 0:
            return None
        if content < self.pinned_h:
            return row_at(self.rows, content)
        return row_at(self.rows, content + self.scroll.value())

    def toggle_process(self, process: str) -> None:
        """Collapse or expand a process group."""
        self.collapsed.symmetric_difference_update({process})
        self._relayout()
        self.update()

    # ------------------------------------------------------------------ view
    @property
    def canvas_width(self) -> int:
        return max(1, self.width() - GUTTER - self.scroll.width())

    @property
    def ns_per_px(self) -> float:
        return (self.t1 - self.t0) / self.canvas_width

    def time_at(self, x: float) -> float:
        """Trace time (ns) at widget x."""
        return self.t0 + (x - GUTTER) * self.ns_per_px

    def x_of(self, t: float) -> float:
        """Widget x of trace time ``t`` (ns)."""
        return GUTTER + (t - self.t0) / self.ns_per_px

    def set_window(self, t0: float, t1: float) -> None:
        """Show [t0, t1] ns (kept at least 100 ns wide)."""
        if t1 - t0 < 100:
            mid = (t0 + t1) / 2
            t0, t1 = mid - 50, mid + 50
        self.t0, self.t1 = float(t0), float(t1)
        self.update()

    def fit(self) -> None:
        """Fit the selected range or slice, else the whole trace."""
        if self.trace is None:
            return
        if self.range is not None:
            a, b = self.range
        elif self.selected >= 0:
            a = int(self.trace.start[self.selected])
            b = a + max(int(self.trace.dur[self.selected]), 1000)
        else:
            a, b = 0, max(self.trace.span_ns, 1000)
        pad = (b - a) * 0.02
        self.set_window(a - pad, b + pad)

    def zoom(self, factor: float, at_x: float | None = None) -> None:
        """Zoom by ``factor`` (< 1 zooms in) around widget x ``at_x`` (default: the centre)."""
        at = self.time_at(at_x) if at_x is not None else (self.t0 + self.t1) / 2
        self.set_window(at - (at - self.t0) * factor, at + (self.t1 - at) * factor)

    def pan(self, fraction: float) -> None:
        """Pan by a fraction of the visible window (negative = left)."""
        shift = (self.t1 - self.t0) * fraction
        self.set_window(self.t0 + shift, self.t1 + shift)

    def select_slice(self, index: int, centre: bool = True) -> None:
        """Select slice ``index`` (−1 clears) and bring it into view."""
        self.selected = index
        if index >= 0 and self.trace is not None:
            start, dur = int(self.trace.start[index]), int(self.trace.dur[index])
            if centre and (start + dur < self.t0 or start > self.t1):
                width = self.t1 - self.t0
                self.set_window(start + dur / 2 - width / 2, start + dur / 2 + width / 2)
            self._scroll_to_track(int(self.trace.track[index]), int(self.trace.depth[index]))
        self.slice_selected.emit(index)
        self.update()

    def step_on_row(self, step: int) -> None:
        """Select the next (1) or previous (−1) slice on the selected slice's row ('.' and ',')."""
        if self.trace is None or self.selected < 0:
            return
        row = self._row_of.get((int(self.trace.track[self.selected]), int(self.trace.depth[self.selected])))
        if row is None:
            return
        level = self.trace.lod.levels[0]
        a, b = int(level.bounds[row.lod_row]), int(level.bounds[row.lod_row + 1])
        here = np.flatnonzero(np.asarray(level.rep[a:b]) == self.selected)
        if here.size and 0 <= int(here[0]) + step < b - a:
            self.select_slice(int(level.rep[a + int(here[0]) + step]))

    def _scroll_to_track(self, track: int, depth: int) -> None:
        row = self._row_of.get((track, depth))
        if row is None:
            process = self.trace.tracks[track].process
            if process in self.collapsed:
                self.toggle_process(process)
                row = self._row_of.get((track, depth))
        if row is not None and not row.pinned:
            viewport = self.height() - RULER
            if not (self.pinned_h <= self.row_top(row) <= viewport - row.h):
                self.scroll.setValue(max(0, row.y - self.pinned_h - (viewport - self.pinned_h) // 3))

    def _update_scroll(self) -> None:
        viewport = max(0, self.height() - RULER)
        self.scroll.setRange(0, max(0, content_height(self.rows) - viewport))
        self.scroll.setPageStep(max(1, viewport))
        self.scroll.setSingleStep(18)

    def resizeEvent(self, event) -> None:  # Qt override
        self.scroll.setGeometry(self.width() - self.scroll.sizeHint().width(), RULER,
                                self.scroll.sizeHint().width(), max(0, self.height() - RULER))
        self._update_scroll()
        super().resizeEvent(event)

    def counter_value(self, row: Row, t: float) -> float | None:
        """The value of the counter of ``row`` at time ``t`` (the last sample at or before it)."""
        counter = self.trace.counters[row.counter]
        i = int(np.searchsorted(counter.times, t, side="right")) - 1
        return float(counter.values[i]) if i >= 0 else None

    # ------------------------------------------------------------------ hit testing
    def slice_at(self, pos: QPoint) -> int:
        """The slice under widget position ``pos`` (within 2 px), or −1."""
        if self.trace is None or pos.x() < GUTTER or pos.y() < RULER:
            return -1
        row = self.row_at_y(pos.y())
        if row is None or row.kind != "slices":
            return -1
        t = self.time_at(pos.x())
        tolerance = 2 * self.ns_per_px
        level = self.trace.lod.levels[0]
        start, end, rep, _ = lodlib.visible(level, row.lod_row, t - tolerance, t + tolerance, 0)
        if not rep.size:
            return -1
        inside = np.flatnonzero((start <= t) & (end >= t))
        pick = inside[np.argmax(end[inside] - start[inside])] if inside.size else np.argmax(end - start)
        return int(rep[pick])

    def describe(self, index: int) -> str:
        """Hover text: name, duration and share, track, and the few fields that say what ran
        (op type, shapes, where); every other field is in the Selected slice table."""
        trace = self.trace
        name_id = int(trace.name[index])
        share = self._share[name_id]
        lines = [trace.names[name_id],
                 f"duration {format_duration(int(trace.dur[index]))} · " + (
                     f"share of op self time {share * 100:.2f} %" if not np.isnan(share)
                     else "a range of the run itself (not an op)"),
                 f"track {trace.track_label(int(trace.track[index]))}"]
        args = trace.slice_args(index)
        if trace.cats[int(trace.cat[index])]:
            args = {"category": trace.cats[int(trace.cat[index])], **args}
        shown = key_fields(args)
        lines += [f"{key}: {short_value(value)}" for key, value in shown]
        if len(args) > len(shown):
            more = len(args) - len(shown)
            lines.append(f"+{more} more field{'s' if more != 1 else ''}: click the slice (Selected slice below)")
        return "\n".join(lines)

    # ------------------------------------------------------------------ input
    def keyPressEvent(self, event: QKeyEvent) -> None:  # Qt override
        key = event.key()
        fast = 2.0 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1.0
        if key == Qt.Key.Key_W:
            self.zoom(0.8 ** fast)
        elif key == Qt.Key.Key_S:
            self.zoom(1.25 ** fast)
        elif key == Qt.Key.Key_A:
            self.pan(-0.15 * fast)
        elif key == Qt.Key.Key_D:
            self.pan(0.15 * fast)
        elif key == Qt.Key.Key_F:
            self.fit()
        elif key in (Qt.Key.Key_Period, Qt.Key.Key_Comma):
            self.step_on_row(1 if key == Qt.Key.Key_Period else -1)
        elif key == Qt.Key.Key_P and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.find_track()
        elif key == Qt.Key.Key_K and self.trace is not None:
            self.add_marker(self.marker_time_here())
        elif key == Qt.Key.Key_Escape:
            self.range, self.area_tracks = None, []
            self.set_highlighted(np.zeros(0, np.int64))
            self.select_slice(-1)
        else:
            super().keyPressEvent(event)

    def wheelEvent(self, event: QWheelEvent) -> None:  # Qt override
        delta = event.angleDelta().y()
        if not delta:
            return
        x = event.position().x()
        if x < GUTTER or event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.scroll.setValue(self.scroll.value() - delta // 2)
            return
        self.zoom(0.85 ** (delta / 120.0), at_x=x)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # Qt override
        pos = event.position().toPoint()
        self.setFocus()
        if event.button() == Qt.MouseButton.RightButton and pos.y() < RULER and self.trace is not None:
            self.markers_menu().popup(event.globalPosition().toPoint())
            return
        if event.button() == Qt.MouseButton.RightButton and pos.x() < GUTTER:
            row = self.row_at_y(pos.y())
            if row is not None and row.kind == "slices":
                self.track_menu(row.track).popup(event.globalPosition().toPoint())
            return
        if event.button() != Qt.MouseButton.LeftButton:
            return
        if pos.x() < GUTTER:
            row = self.row_at_y(pos.y())
            if row is not None and row.kind == "process" and not row.pinned:
                self.toggle_process(row.process)
            return
        selecting = pos.y() < RULER or bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        self._drag = ("range" if selecting else "pan", pos.x(), self.t0, self.t1)
        self._drag_y = pos.y()  # a Shift+drag in the tracks selects an area: these rows down to the release

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # Qt override
        pos = event.position().toPoint()
        if self._drag is not None:
            mode, x_start, t0, t1 = self._drag
            if mode == "pan":
                shift = (x_start - pos.x()) * (t1 - t0) / self.canvas_width
                self.set_window(t0 + shift, t1 + shift)
            else:
                a, b = sorted((self.time_at(x_start), self.time_at(pos.x())))
                self.range = (int(a), int(b))
                self.update()
            return
        self._hover(pos, event.globalPosition().toPoint())

    def _hover(self, pos: QPoint, global_pos: QPoint) -> None:
        if pos.x() < GUTTER and pos.y() < RULER:
            QToolTip.showText(global_pos, KEYS_HELP, self)
            return
        if pos.x() < GUTTER and pos.y() >= RULER:
            row = self.row_at_y(pos.y())
            if row is not None and (row.label or row.kind == "process"):
                label = row.label if row.kind != "process" else f"{row.label} (click to collapse or expand)"
                if row.pinned and row.kind == "process":
                    label = f"{row.label}: right-click a track's name to unpin it"
                if row.kind == "slices" and row.track >= 0:
                    label = self.trace.track_label(row.track) + "\n(right-click: pin or unpin; Ctrl+P: find a track)"
                QToolTip.showText(global_pos, label, self)
                return
        if pos.x() >= GUTTER and pos.y() >= RULER:
            row = self.row_at_y(pos.y())
            if row is not None and row.kind == "counter":
                value = self.counter_value(row, self.time_at(pos.x()))
                if value is not None:
                    source = self.trace.counters[row.counter].source
                    QToolTip.showText(global_pos, f"{row.label}: {value:,.3f}\n{row.process}"
                                      + (f"\nread from {source}" if source else ""), self)
                    return
        index = self.slice_at(pos)
        if index >= 0:
            QToolTip.showText(global_pos, self.describe(index), self)
        else:
            QToolTip.hideText()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # Qt override
        if self._drag is None:
            return
        mode, x_start, _, _ = self._drag
        self._drag = None
        pos = event.position().toPoint()
        moved = abs(pos.x() - x_start) > 3
        if mode == "range" and moved and self.range is not None:
            self.area_tracks = self.tracks_between(self._drag_y, pos.y()) if self._drag_y >= RULER else []
            self.range_selected.emit(self.range[0], self.range[1])
            if self.area_tracks:
                self.area_selected.emit(self.range[0], self.range[1], list(self.area_tracks))
        elif not moved:
            self.range = None if mode == "range" else self.range
            self.area_tracks = [] if mode == "range" else self.area_tracks
            self.select_slice(self.slice_at(pos), centre=False)

