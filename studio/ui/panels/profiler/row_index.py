"""The timeline's rows as laid out, and what a frame looks them up by (no Qt).

Rows are sorted by y: the pinned band's rows first (they do not scroll), then the scrolling ones.
Each lookup takes the vertical scroll offset, which the view's scroll bar owns.
"""

from __future__ import annotations

import bisect

import numpy as np

from studio.ui.panels.profiler.layout import Row, content_height, pinned_height, row_at


class RowIndex:
    """One layout of rows: their tops and bottoms (bisected for the visible ones), the first
    scrolling row, and (track, depth) -> row, as a dict and as an array (for the flows' end
    points, looked up all at once)."""

    def __init__(self, rows: list[Row] | None = None):
        rows = rows if rows is not None else []
        self.rows = rows
        self.pinned_h = pinned_height(rows)
        self.first_scrolling = next((i for i, r in enumerate(rows) if not r.pinned), len(rows))
        self.tops = [r.y for r in rows]
        self.bottoms = [r.y + r.h for r in rows]
        self.arrays = (np.array(self.tops, np.int64), np.array([r.h for r in rows], np.int64),
                       np.array([r.pinned for r in rows], bool))
        slices = [(i, r) for i, r in enumerate(rows) if r.kind == "slices"]
        self.row_of = {(r.track, r.depth): r for _, r in slices}
        tracks = max((r.track for _, r in slices), default=-1) + 1
        depths = max((r.depth for _, r in slices), default=-1) + 1
        self.table = np.full((tracks, depths), -1, np.int64)
        for i, r in slices:
            self.table[r.track, r.depth] = i

    def content_height(self) -> int:
        """The height of every row together (what the scroll bar scrolls over)."""
        return content_height(self.rows)

    def top(self, row: Row, scroll: int) -> int:
        """The row's top in the viewport below the ruler (pinned rows do not scroll)."""
        return row.y if row.pinned else row.y - scroll

    def hidden_by_band(self, row: Row, scroll: int) -> bool:
        """A scrolling row that is (partly) under the pinned band: not drawn, not picked."""
        return self.pinned_h > 0 and not row.pinned and self.top(row, scroll) < self.pinned_h

    def at(self, content_y: int, scroll: int) -> Row | None:
        """The row at height ``content_y`` below the ruler (the pinned band first)."""
        if content_y < 0:
            return None
        if content_y < self.pinned_h:
            return row_at(self.rows, content_y)
        return row_at(self.rows, content_y + scroll)

    def visible(self, scroll: int, viewport: int) -> list[Row]:
        """Rows in a viewport ``viewport`` px high: the scrolling ones below the pinned band, then
        the pinned ones (drawn last, over whatever scrolled under them).

        Found by bisection over the rows' tops and bottoms (they are sorted by y): 16 ranks have
        thousands of rows, and a scan of them all took 6 ms of every frame."""
        first = self.first_scrolling
        if self.pinned_h > 0:  # a row partly under the band is not drawn
            lo = bisect.bisect_left(self.tops, scroll + self.pinned_h, first)
        else:
            lo = bisect.bisect_right(self.bottoms, scroll, first)
        hi = bisect.bisect_left(self.tops, scroll + viewport, lo)
        return self.rows[lo:hi] + [r for r in self.rows[:first] if r.y < viewport]

    def middles(self, track: np.ndarray, depth: np.ndarray, scroll: int) -> tuple[np.ndarray, np.ndarray]:
        """For slices on (track, depth): the height of their row's middle below the ruler, and
        whether that row is laid out and not hidden under the pinned band (as arrays: hundreds
        of flows per frame, one Python call each, took 9 ms of a 16-rank frame)."""
        table = self.table  # (track, depth) -> index into self.rows, -1 when not laid out
        inside = (track >= 0) & (track < table.shape[0]) & (depth >= 0) & (depth < table.shape[1])
        index = np.full(track.size, -1, np.int64)
        index[inside] = table[track[inside], depth[inside]]
        laid_out = index >= 0
        ys, hs, pinned = self.arrays
        row = np.where(laid_out, index, 0)
        top = np.where(pinned[row], ys[row], ys[row] - scroll)
        hidden = (self.pinned_h > 0) & ~pinned[row] & (top < self.pinned_h)
        return top + hs[row] // 2, laid_out & ~hidden
