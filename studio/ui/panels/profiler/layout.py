"""Where each timeline row goes: pinned tracks, processes (collapsible), their tracks' depth rows, counters.

Pure Python over the trace's track list and LOD rows; recomputed only when a trace is shown or a
process is collapsed, never per frame.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.tools.profiler.model import Trace

HEADER_H = 20
ROW_H = 18
COUNTER_H = 36
PINNED = "\x00pinned"  # the process name of the pinned band's header (no trace process has a NUL)


@dataclass
class Row:
    """One horizontal band of the timeline."""

    kind: str            # "process", "slices" or "counter"
    y: int
    h: int
    label: str
    process: str
    track: int = -1
    depth: int = 0
    lod_row: int = -1
    counter: int = -1
    pinned: bool = False  # in the band under the ruler that does not scroll


def build_rows(trace: Trace, collapsed: set[str], pinned: list[int] | None = None) -> list[Row]:
    """Rows top to bottom: the pinned tracks (in the order pinned, under a header), then each
    process header and (unless collapsed) its other tracks and counters."""
    lod = trace.lod
    by_track: dict[int, list[tuple[int, int]]] = {}
    for index, (track, depth) in enumerate(zip(lod.row_track.tolist(), lod.row_depth.tolist())):
        by_track.setdefault(track, []).append((depth, index))
    processes: dict[str, tuple[float, list]] = {}
    for track in trace.tracks:
        if track.id not in by_track:
            continue
        sort, items = processes.setdefault(track.process, (track.process_sort, []))
        items.append(("track", track))
    for index, counter in enumerate(trace.counters):
        sort, items = processes.setdefault(counter.process, (counter.process_sort, []))
        items.append(("counter", index))
    rows: list[Row] = []
    y = 0
    pinned = [track for track in (pinned or []) if track in by_track]
    if pinned:
        rows.append(Row("process", y, HEADER_H, f"Pinned ({len(pinned)})", PINNED, pinned=True))
        y += HEADER_H
        for track in pinned:
            for depth, lod_row in sorted(by_track[track]):
                label = trace.track_label(track) if depth == 0 else ""
                rows.append(Row("slices", y, ROW_H, label, trace.tracks[track].process, track, depth, lod_row,
                                pinned=True))
                y += ROW_H
    for process, (sort, items) in sorted(processes.items(), key=lambda kv: (kv[1][0], kv[0])):
        tracks = sorted((t for kind, t in items if kind == "track" and t.id not in pinned),
                        key=lambda t: (t.sort, t.name))
        counters = [c for kind, c in items if kind == "counter"]
        rows.append(Row("process", y, HEADER_H, process, process))
        y += HEADER_H
        if process in collapsed:
            continue
        for track in tracks:
            for depth, lod_row in sorted(by_track[track.id]):
                label = track.name if depth == 0 else ""
                rows.append(Row("slices", y, ROW_H, label, process, track.id, depth, lod_row))
                y += ROW_H
        for index in counters:
            rows.append(Row("counter", y, COUNTER_H, trace.counters[index].name, process, counter=index))
            y += COUNTER_H
    return rows


def content_height(rows: list[Row]) -> int:
    """Total height of all rows."""
    return rows[-1].y + rows[-1].h if rows else 0


def row_at(rows: list[Row], y: int) -> Row | None:
    """The row covering content coordinate ``y`` (binary search; rows are sorted by y)."""
    lo, hi = 0, len(rows)
    while lo < hi:
        mid = (lo + hi) // 2
        if rows[mid].y + rows[mid].h <= y:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(rows) and rows[lo].y <= y:
        return rows[lo]
    return None


def pinned_height(rows: list[Row]) -> int:
    """Height of the pinned band (0 when nothing is pinned): the pinned rows come first."""
    end = 0
    for row in rows:
        if not row.pinned:
            break
        end = row.y + row.h
    return end
