"""Every rank's lanes with the database-only ranks read by time window, never whole.

A rank whose timeline comes from its profiling database alone (a PyTorch-NPU or msprof db
export, no timeline JSON and no op summary beside it) is opened through its query cache
(:mod:`studio.tools.profiler.db_window`): the joined trace holds, for such a rank, the window's
events where they are few enough to draw and one summary per bucket elsewhere — the whole session
at its coarsest level first, finer windows as the user zooms (:meth:`RankWindows.window_trace`).
Ranks read another way keep their decoded trace.

Each window trace is rebased on its database's first event, whatever the window, so the joined
trace's origin (the earliest rank's) stays the same from one window to the next and the timeline
can swap them without its view moving.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from studio.core.jobs import CancelToken
from studio.tools.profiler.cluster.timeline import join_ranks, joined_origin
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.db_window import DbWindow
from studio.tools.profiler.model import Trace
from studio.tools.profiler.stats import NameStat

FIRST_PIXELS = 2000  # the width the whole session is first read for (a window wider than a screen)


def window_source(folder: Path) -> Path | None:
    """The database ``folder``'s timeline is read from when nothing else draws it (no timeline
    file, no op summary); None otherwise (the rank is decoded as the profiler reads it alone)."""
    from studio.tools.profiler.db_reader import match_profiling_db
    from studio.tools.profiler.msprof_reader import timeline_sources

    folder = Path(folder)
    if not folder.is_dir():
        return None
    sources = timeline_sources(folder)  # timelines, databases, op summaries: the databases alone here
    if not sources or any(p.suffix != ".db" for p in sources):
        return None
    try:
        with sources[0].open("rb") as handle:
            return sources[0] if match_profiling_db(sources[0], handle.read(16)) else None
    except OSError:
        return None


def cache_ready(database: Path) -> bool:
    """True when ``database``'s query cache is built (opening it by window takes a moment)."""
    from studio.tools.profiler import db_cache

    return db_cache.is_complete(db_cache.cache_path(database))


class RankWindows:
    """A multi-rank folder's lanes: decoded traces for some ranks, window readers for the others."""

    def __init__(self, folder: Path, labels: Sequence[str], ranks: int):
        self.folder = Path(folder)
        self.labels = list(labels)
        self.ranks = ranks
        self.parts: list = [None] * len(labels)  # per source: a DbWindow, a decoded Trace, or None
        self.origin: int | None = None  # the joined trace's zero (ns), fixed by the first join
        self._whole: dict[int, Trace] = {}  # per window: its whole session as first read (asked again last)

    @property
    def windows(self) -> dict[int, DbWindow]:
        """The sources read by window: index -> its window reader."""
        return {i: p for i, p in enumerate(self.parts) if p is not None and not isinstance(p, Trace)}

    @property
    def source(self) -> Path:
        return self.folder

    def open(self, index: int, database: Path, cancel: CancelToken | None = None,
             progress: Callable[[str], None] | None = None) -> Trace:
        """Open source ``index`` by window (its query cache built first when there is none); the
        whole session's trace at its coarsest level."""
        from studio.tools.profiler.db_window import open_window

        window = open_window(database, progress, cancel)
        self.parts[index] = window
        self._whole[index] = window.window_trace(pixels=FIRST_PIXELS)
        return self._whole[index]

    def set_trace(self, index: int, trace: Trace) -> None:
        """Source ``index`` decoded whole."""
        self.parts[index] = trace

    def window_trace(self, t0: int | None = None, t1: int | None = None, pixels: int = FIRST_PIXELS) -> Trace:
        """The joined trace with each window-read rank's [t0, t1) (ns on the ranks' shared clock;
        None: the whole session) at the level of detail ``pixels`` allow; decoded ranks as they are."""
        whole = t0 is None and t1 is None and pixels == FIRST_PIXELS
        traces = [p if isinstance(p, Trace) or p is None else
                  self._whole[i] if whole and i in self._whole else p.window_trace(t0, t1, pixels)
                  for i, p in enumerate(self.parts)]
        traces = [t if t is not None else TraceBuilder().build(source=str(self.folder)) for t in traces]
        if self.origin is None:  # the first join's zero stays the zero of every later window
            self.origin = joined_origin(traces)
        trace = join_ranks(traces, self.labels, self.folder, self.ranks, self.origin)
        shown = ", ".join(self.labels[i] for i in self.windows)
        if shown:
            trace.facts["read by window"] = (f"{shown}: from the database's query cache, per-bucket summaries "
                                             f"where events are denser than pixels (finer as the view zooms)")
        return trace

    def name_stats(self) -> list[NameStat]:
        """Per name over every window-read rank's whole database, from their caches (a rank decoded
        whole beside them is not counted: the panel names it)."""
        merged: dict[str, list] = {}
        for window in self.windows.values():
            for s in window.name_stats():
                row = merged.setdefault(s.name, [0, 0.0, s.min_us, s.max_us])
                row[0] += s.count
                row[1] += s.total_us
                row[2], row[3] = min(row[2], s.min_us), max(row[3], s.max_us)
        grand = sum(r[1] for r in merged.values()) or 1.0
        out = [NameStat(name, n, t, t / n, lo, hi, t / grand, t) for name, (n, t, lo, hi) in merged.items()]
        out.sort(key=lambda s: (-s.total_us, s.name))
        return out

    def close(self) -> None:
        """Let every cache file go."""
        for window in self.windows.values():
            window.close()
