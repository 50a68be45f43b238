"""Keep where the user is on the timeline when its trace is swapped for a fuller one (a rank's
decoded lanes replacing its step summary): the time window, the selected range, the selected
slice, the pinned tracks (by process and track name), the markers and the vertical scroll.
Times are kept on the wall clock, since the joined trace's origin (its earliest rank) may move
when a rank comes in; the selected slice is found again in the new trace by its lane, start,
duration and name (binary searches: slices are sorted by track, then start), and is let go when
its lane is gone (a step summary replaced), as a pinned track is. A window the user has not
moved is not kept: the new trace opens where it would open on its own (its first iteration, or
the whole of it), since a summary's fitted span can lie before every decoded slice."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from studio.tools.profiler.model import Trace


@dataclass
class Position:
    """Where the view is: times (ns) from ``origin`` (the wall-clock ns of the trace's 0; kept
    apart, since a float of wall-clock ns is only good to some hundred ns)."""

    origin: int
    t0: float
    t1: float
    range: tuple[int, int] | None
    selected: tuple | None  # (process, track name, start, dur, name) of the selected slice
    scroll: int
    moved: bool = True  # False: the window is still the one the trace opened on
    pinned: list[tuple[str, str]] = field(default_factory=list)  # (process, track name), in pin order
    markers: list[int] = field(default_factory=list)  # wall-clock ns


def position(view) -> Position | None:
    """The view's position (None when it shows no trace)."""
    trace = view.trace
    if trace is None:
        return None
    origin = trace.origin_ns
    selected = None
    if view.selected >= 0:
        i = view.selected
        track = trace.tracks[int(trace.track[i])]
        selected = (track.process, track.name, int(trace.start[i]) + origin, int(trace.dur[i]),
                    trace.names[int(trace.name[i])])
    rng = None if view.range is None else (int(view.range[0]), int(view.range[1]))
    moved = (view.t0, view.t1) != getattr(view, "opened_window", None)
    pinned = [(trace.tracks[t].process, trace.tracks[t].name) for t in view.pinned if 0 <= t < len(trace.tracks)]
    markers = [int(round(m)) + origin for m in view.markers]
    return Position(origin, view.t0, view.t1, rng, selected, view.scroll.value(), moved, pinned, markers)


def restore(view, kept: Position | None) -> None:
    """Put the view (now on its new trace) back at ``kept``."""
    trace = view.trace
    if kept is None or trace is None:
        return
    shift = trace.origin_ns - kept.origin  # the joined clock's 0 moves with the earliest rank
    if kept.moved:
        view.set_window(kept.t0 - shift, kept.t1 - shift)
    if kept.range is not None:
        view.range = (kept.range[0] - shift, kept.range[1] - shift)
    view.markers = [m - trace.origin_ns for m in kept.markers]
    if kept.pinned:  # a pinned lane that is gone (a step summary replaced) is let go
        ids = {(t.process, t.name): t.id for t in trace.tracks}
        view.set_pinned([ids[key] for key in kept.pinned if key in ids])
    view.scroll.setValue(min(kept.scroll, view.scroll.maximum()))
    index = find_slice(trace, kept.selected) if kept.selected is not None else -1
    if index >= 0:
        view.select_slice(index, centre=False)
        view.scroll.setValue(min(kept.scroll, view.scroll.maximum()))  # selecting may have scrolled
    view.update()


def find_slice(trace: Trace, key: tuple) -> int:
    """The index of the slice ``key`` (see :class:`Position`) in ``trace``, or -1."""
    process, track_name, start, dur, name = key
    ids = [t.id for t in trace.tracks if t.process == process and t.name == track_name]
    if not ids:
        return -1
    tracks = np.asarray(trace.track)
    a, b = (int(np.searchsorted(tracks, ids[0], side=s)) for s in ("left", "right"))
    starts = np.asarray(trace.start[a:b])
    i = a + int(np.searchsorted(starts, start - trace.origin_ns, side="left"))
    while i < b and int(trace.start[i]) == start - trace.origin_ns:
        if int(trace.dur[i]) == dur and trace.names[int(trace.name[i])] == name:
            return i
        i += 1
    return -1
