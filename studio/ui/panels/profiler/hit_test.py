"""What is under a point of the timeline, and what a hover says about it: the slice (within
2 px), a counter's value, the tracks a drag spanned, a slice's description."""

from __future__ import annotations

import json

import numpy as np
from PySide6.QtCore import QPoint

from studio.tools.profiler import lod as lodlib
from studio.ui.panels.profiler.layout import Row
from studio.ui.panels.profiler.paint_edges import GUTTER, RULER
from studio.ui.panels.profiler.timefmt import format_duration

# The fields a hover shows first, as readers name them (ONNX Runtime, msprof CSV and DB, PyTorch).
KEY_FIELDS = ("op_name", "op type", "optype", "provider", "task type", "input shapes", "input_type_shape",
              "output shapes", "output_type_shape", "block num", "category")
MAX_FIELDS = 4
MAX_VALUE = 72  # characters of one field's value in a hover
PICK_PX = 2  # a click or hover this close to a slice picks it


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


class TimelineLookup:
    """Looks things up under widget positions of ``view`` (a :class:`TimelineView`)."""

    def __init__(self, view):
        self.view = view

    def slice_at(self, pos: QPoint) -> int:
        """The slice under widget position ``pos`` (within PICK_PX), or −1; the longest one
        containing the time when several do."""
        view, trace = self.view, self.view.state.trace
        if trace is None or pos.x() < GUTTER or pos.y() < RULER:
            return -1
        row = view.row_at_y(pos.y())
        if row is None or row.kind != "slices":
            return -1
        t = view.time_at(pos.x())
        tolerance = PICK_PX * view.ns_per_px
        level = trace.lod.levels[0]
        start, end, rep, _ = lodlib.visible(level, row.lod_row, t - tolerance, t + tolerance, 0)
        if not rep.size:
            return -1
        inside = np.flatnonzero((start <= t) & (end >= t))
        pick = inside[np.argmax(end[inside] - start[inside])] if inside.size else np.argmax(end - start)
        return int(rep[pick])

    def counter_value(self, row: Row, t: float) -> float | None:
        """The value of the counter of ``row`` at time ``t`` (the last sample at or before it)."""
        counter = self.view.state.trace.counters[row.counter]
        i = int(np.searchsorted(counter.times, t, side="right")) - 1
        return float(counter.values[i]) if i >= 0 else None

    def tracks_between(self, y_a: int, y_b: int) -> list[int]:
        """The track ids of the slice rows drawn between widget heights ``y_a`` and ``y_b``."""
        view = self.view
        top, bottom = sorted((y_a, y_b))
        found = []
        for row in view.visible_rows():
            y = RULER + view.row_top(row)
            if row.kind == "slices" and y < bottom and y + row.h > top and row.track not in found:
                found.append(row.track)
        return found

    def describe(self, index: int) -> str:
        """Hover text: name, duration and share, track, and the few fields that say what ran
        (op type, shapes, where); every other field is in the Selected slice table."""
        state = self.view.state
        trace = state.trace
        name_id = int(trace.name[index])
        share = state.share[name_id]
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
