"""The Profiler's loading jobs: a profile opened, or a multi-rank folder's lanes joined, with
everything the panel shows of it computed off the GUI thread (:class:`~.state.Loaded`).

A big trace read by a worker process comes with the views' statistics that worker computed
(:mod:`studio.tools.profiler.view_stats`); the rest are computed here, on the job's thread.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.gc_pause import paused_gc
from studio.tools.profiler import stats, view_stats
from studio.tools.profiler.cluster.rank_windows import RankWindows
from studio.tools.profiler.db_window import DbWindow
from studio.tools.profiler.model import Trace, source_label
from studio.tools.profiler.view_stats import ViewStats, counter_peaks
from studio.ui.panels.profiler.layout import build_rows
from studio.ui.panels.profiler.state import Loaded, ready_rows, typed_rows

FREEZE_LOADED = 20_000  # young objects over which a profile's rows made in a job are frozen
COUNTED = ("the whole database, from its query cache (total time per name; nested calls are not subtracted); "
           "the timeline shows the visible window, summarised per bucket where events are denser than pixels")


def load_job(path: Path, cancel: CancelToken, show: Callable[[Loaded], None] | None = None,
             read_options: dict | None = None) -> Generator[Progress, None, Loaded]:
    """Open a profile and compute its statistics (runs on a worker thread).

    A big Chrome trace is shown while it is read: ``show`` gets a partial profile (its first
    stretch, then more, statistics marked partial) each time more is read, built here so the
    window only swaps it in. ``read_options``: see :func:`~studio.tools.profiler.partial_read.open_growing`
    (tests force small pieces with them)."""
    from studio.tools.profiler.partial_read import open_growing

    def partial(read) -> None:
        # The tens of thousands of rows each partial profile makes would be walked by the GUI
        # thread's next young collection (gc1 73 ms measured on a busy machine): frozen instead.
        # They hold no cycles, so reference counting frees each profile swapped out.
        with paused_gc(FREEZE_LOADED):
            loaded = partial_file(path, read)
        show(loaded)

    # Big sources are parsed by a worker process into the cache and mapped here, with the views'
    # statistics it computed; small ones are read in this thread and cached after they are shown.
    trace, view = yield from open_growing(path, cancel, partial if show is not None else None,
                                          **(read_options or {}))
    with paused_gc(FREEZE_LOADED):
        return (yield from loaded_with_stats(path, trace, view))


def partial_file(path: Path, read) -> Loaded:
    """A profile shown while its file is still read (``read``: a
    :class:`~studio.tools.profiler.partial_read.PartialRead`): statistics of what is read, marked partial."""
    loaded = with_stats(path, read.trace, read.stats)
    loaded.complete, loaded.cached, loaded.reading = False, True, read.band_text()
    share = read.covered / max(1, read.total)
    loaded.counted = (f"PARTIAL: only the events of the first {share:.0%} of the file are read so far; these "
                      f"rows change until the read completes" + (f" · {loaded.counted}" if loaded.counted else ""))
    return loaded


def rank_lanes_job(folder: Path, cancel: CancelToken, show: Callable[[Loaded, int, int], None] | None = None
                   ) -> Generator[Progress, None, Loaded]:
    """Every rank of a multi-rank folder on one timeline, a lane group per rank (worker thread).

    The ranks are decoded (in parallel) by a worker process into their caches; while they are,
    ``show`` gets the joined trace of what there is (the ranks decoded so far, each other rank's
    step summary) each time a rank is added, built here so the window only swaps it in."""
    from studio.tools.profiler.cluster.progressive import open_rank_timelines_progressive

    def partial(trace: Trace, done: int, total: int) -> None:
        if show is not None:
            show(partial_loaded(folder, trace, done, total), done, total)

    # Each join makes names, tracks and rows by the thousand: a full collection on the way walked
    # them all while holding the interpreter (22-35 ms, measured), so the collector waits.
    with paused_gc():
        windows: list = []  # the ranks read from their database alone are read by window, never whole
        trace = yield from open_rank_timelines_progressive(folder, partial, cancel, workers=1, offload=True,
                                                           windows=windows)
        if windows:
            yield Progress(None, "statistics")
            return loaded_window(windows[0], trace=trace)
        loaded = yield from loaded_with_stats(folder, trace)
        loaded.label = f"{source_label(folder)} (all ranks)"
        loaded.cached = True  # each rank has its own cache; the joined trace is not stored again
        loaded.counter_max = counter_peaks(trace)
        loaded.rows = default_rows(trace)
    return loaded


def partial_loaded(folder: Path, trace: Trace, done: int, total: int) -> Loaded:
    """A joined trace shown while ranks still decode: no statistics yet (they come with the last one)."""
    return Loaded(folder, f"{source_label(folder)} (all ranks: {done} of {total} decoded)", trace, [], [], {},
                  share=stats.share_by_name_id(trace, []), ready=ready_rows([], []), cached=True,
                  first_view_note=f"{done} of {total} ranks decoded, the others show their step summary",
                  counter_max=counter_peaks(trace), complete=False, rows=default_rows(trace))


def default_rows(trace: Trace) -> list | None:
    """The timeline's rows with nothing collapsed or pinned: thousands of rows over 16 ranks take
    5-10 ms of Python to lay out, which the job does rather than the window's swap."""
    return build_rows(trace, set(), []) if trace.lod is not None else None


def loaded_with_stats(path: Path, trace: Trace, view: ViewStats | None = None
                      ) -> Generator[Progress, None, Loaded]:
    """``trace`` with everything the panel shows that costs more than a few ms on a big trace
    (``view``: see :func:`with_stats`)."""
    yield Progress(None, "statistics")
    return with_stats(path, trace, view)


def with_stats(path: Path, trace: Trace, view: ViewStats | None = None) -> Loaded:
    """:func:`loaded_with_stats`, not as a job; ``view``: the statistics the worker process that
    read the trace computed (None: computed here, off the GUI thread)."""
    # Everything the panel shows that costs more than a few ms on a big trace is computed off the
    # GUI thread: over what a worker process read, by that worker (view_stats), else here.
    if view is None:
        view = view_stats.compute(trace)
    view.apply(trace)
    tables = {kind: typed_rows(table.rows) for kind, table in trace.tables.items()}
    return Loaded(path, source_label(path), trace, view.by_name, view.apis, tables, share=view.share,
                  ready=ready_rows(view.by_name, view.apis), counted=view.counted, first_view=view.first_view,
                  first_view_note=view.first_view_note, rows=default_rows(trace), counter_max=view.counter_max,
                  computed_in=view.where)


def loaded_window(window: DbWindow | RankWindows, t0: int | None = None, t1: int | None = None, pixels: int = 2000,
                  trace: Trace | None = None) -> Loaded:
    """The panel's profile for the window [t0, t1) (database ns; None: the whole session) of one
    database or of a multi-rank folder's lanes (``trace``: that window, when already read)."""
    trace = window.window_trace(t0, t1, pixels) if trace is None else trace
    by_name = window.name_stats()
    ranks = isinstance(window, RankWindows)
    loaded = Loaded(window.source, f"{source_label(window.source)} ({'all ranks, ' if ranks else ''}by window)",
                    trace, by_name, [], {}, share=stats.share_by_name_id(trace, by_name), ready=ready_rows(by_name, []),
                    counted=rank_counted(window) if ranks else COUNTED, cached=True, rows=default_rows(trace),
                    window=window)
    if ranks:
        loaded.counter_max = counter_peaks(trace)
    return loaded


def rank_counted(window: RankWindows) -> str:
    """Which ranks a multi-rank folder's statistics count (the window-read ones, whole)."""
    counted = [window.labels[i] for i in window.windows]
    left = [label for i, label in enumerate(window.labels) if i not in window.windows]
    text = f"{', '.join(counted)}: their whole databases, from their query caches (total time per name; nested " \
           f"calls are not subtracted); the timeline shows the visible window, summarised per bucket where " \
           f"events are denser than pixels"
    if left:
        text += f". Not counted here: {', '.join(left)} (decoded whole: open that rank alone for its statistics)"
    return text
