"""Every rank's timeline, shown while the ranks are still being decoded.

A cold open of many big ranks decodes each rank's trace (hundreds of MB of JSON) before it can be
drawn, which takes a minute for 16 ranks of a million events. So the lanes come in stages:

1. at once, a lane group per rank from what the rank's step summary says (``step_trace_time.csv``
   or ``analysis.db``, read in well under a second for all ranks): per step, its computing,
   communication (not overlapped) and free time as blocks laid end to end from the rank's
   collection start. They are labelled as a step summary: the durations are the rank's own, the
   places in time are not (the summary has no time stamps). An msprof ``PROF_*`` device's summary
   is its ``step_trace_*.json``: each iteration and its parts, at their own times;
2. each rank's summary lanes are replaced by its decoded timeline as soon as that rank is decoded
   (the ranks decode in parallel, as :func:`~.timeline.decode_ranks` does);
3. the last joined trace is exactly :func:`~.timeline.open_rank_timelines`' one.

Every stage's joined trace is built by the caller's thread (a worker thread in the GUI) and
handed to ``show``; the window only swaps it in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.safe_read import SETTINGS_CAP, load_json
from studio.tools.profiler.cluster.rank_windows import RankWindows, cache_ready, window_source
from studio.tools.profiler.cluster.timeline import join_ranks, merge_traces, rank_labels, rank_sources
from studio.tools.profiler.model import Trace, Track, add_warning

SUMMARY_PROCESS = "step summary (timeline still decoding)"
SUMMARY_TRACK = "steps: durations from step_trace_time, laid end to end (not their times)"
MSPROF_SUMMARY_TRACK = "iterations from step_trace_*.json, at their times"
_ITERATION_PARTS = {"Iteration Time": 0, "FP_BP Time": 1, "Iteration Refresh": 1}  # msprof cat -> depth
PARTS = (("computing_us", "Computing"), ("communication_not_overlapped_us", "Communication (not overlapped)"),
         ("free_us", "Free"))

DECODE_NICE = 10  # the decoding children's niceness when the window waits on them
Show = Callable[[Trace, int, int], None]  # (joined trace, ranks decoded, ranks in all)


def decode_rank(path: Path, cancel: CancelToken | None) -> Generator[Progress, None, Trace]:
    """One rank folder's trace with its levels of detail, here (the in-process path)."""
    from studio.tools.profiler.loader import open_profile

    return (yield from open_profile(path, cancel))


def open_rank_timelines_progressive(folder: Path, show: Show, cancel: CancelToken | None = None,
                                    workers: int | None = None, offload: bool = False,
                                    windows: list | None = None) -> Generator[Progress, None, Trace]:
    """:func:`~.timeline.open_rank_timelines`, calling ``show`` with a joined trace first from the
    ranks' step summaries and caches, then again each time ranks are decoded; returns the final
    joined trace (not shown: the caller shows it). ``offload``: decode in a worker process (the
    GUI's way, nothing forks from the window's process), its ranks' caches mapped here as they come;
    else in forked children (``workers`` > 1) or here, one after the other. ``windows``: when a list,
    the ranks read from their database alone are opened by window (:mod:`.rank_windows`), never
    decoded whole, and the :class:`~.rank_windows.RankWindows` that reads further windows is
    appended to it."""
    from studio.tools.profiler import cache
    from studio.tools.profiler.cluster.discover import find_ranks

    folder = Path(folder)
    found = find_ranks(folder)
    if not found.ranks:
        raise UserError("This folder holds msprof-analyze's summaries, not the ranks' timelines", folder,
                        "Open the folder that holds the *_ascend_pt (or PROF_*) folders of the ranks.")
    sources = rank_sources(found)
    paths, labels = list(sources), rank_labels(sources)
    by_rank = {r.rank: r for r in found.ranks}
    traces: list[Trace | None] = []
    for path in paths:
        cached = cache.load(path)
        traces.append(cached if cached is not None and cached.lod is not None else None)
    missing = [i for i, t in enumerate(traces) if t is None]
    total = len(paths)
    if not missing:
        return join_ranks(traces, labels, folder, len(found.ranks))  # type: ignore[arg-type]
    reader = RankWindows(folder, labels, len(found.ranks)) if windows is not None else None
    by_window = {} if reader is None else {i: db for i in missing if (db := window_source(Path(paths[i])))}
    cold = {i for i, db in by_window.items() if not cache_ready(db)}
    waits = bool(cold) or len(by_window) < len(missing)  # else every rank's lanes are ready at once
    summaries = [None if t is not None or not waits else summary_trace([by_rank[r] for r in sources[p]])
                 for p, t in zip(paths, traces)]

    def show_partial() -> None:
        show(_partial(traces, summaries, labels, folder, total), sum(t is not None for t in traces), total)

    if waits:  # the step summaries meanwhile
        show_partial()
    yield Progress(0.0, f"{total - len(missing)} of {total} ranks decoded")
    if reader is not None:
        yield from _open_windows(reader, by_window, traces, cancel, lambda i: show_partial() if i in cold else None)
        missing = [i for i in missing if i not in by_window]
    if not missing:
        fill = iter(())
    elif offload:
        fill = _fill_offloaded(paths, missing, traces, cancel)
    else:
        fill = _fill_here(paths, missing, traces, cancel, workers)
    shown, ready_at = total - len(missing), 0.0
    for _progress in fill:
        done = sum(t is not None for t in traces)
        if shown < done < total and time.perf_counter() >= ready_at:
            shown = done
            began = time.perf_counter()
            show(_partial(traces, summaries, labels, folder, total), done, total)
            # Joining millions of slices again for each rank would take the cores from the
            # decoding: the next join waits twice as long as this one took.
            ready_at = time.perf_counter() + 2 * (time.perf_counter() - began)
        yield Progress(0.9 * done / total, f"{done} of {total} ranks decoded")
    yield Progress(0.95, f"lining up {len(found.ranks)} ranks")
    if reader is None or not reader.windows:
        return join_ranks(traces, labels, folder, len(found.ranks))  # type: ignore[arg-type]
    for i, trace in enumerate(traces):
        if i not in reader.windows:
            reader.set_trace(i, trace)
    windows.append(reader)  # type: ignore[union-attr]
    return reader.window_trace()


def _open_windows(reader: RankWindows, databases: dict[int, Path], traces: list, cancel,
                  opened: Callable[[int], None]) -> Generator[Progress, None, None]:
    """Open by window each rank of ``databases`` (index -> the database its timeline is read from
    alone; its query cache built when there is none), calling ``opened`` after each."""
    for i, database in databases.items():
        yield Progress(None, f"{database.name}: opening by window (its query cache is built once)")
        traces[i] = reader.open(i, database, cancel)
        opened(i)


def _partial(traces, summaries, labels, folder: Path, total: int) -> Trace:
    """The joined trace of the decoded ranks and, for the others, their step summaries."""
    parts = [t if t is not None else s for t, s in zip(traces, summaries)]
    origins = [t.origin_ns for t in parts if t.size and t.origin_ns]
    for s in summaries:  # a summary without a known start sits at the earliest rank's
        if s is not None and not s.origin_ns:
            s.origin_ns = min(origins, default=0)
    merged = merge_traces(parts, labels, source=str(folder))
    done = sum(t is not None for t in traces)
    merged.facts["ranks decoded"] = f"{done} of {total}"
    add_warning(merged.facts, f"{total - done} of {total} ranks still decoding: their lanes show their step "
                              f"summary (the lane's name says whether its blocks are at their times)")
    return merged


def _fill_here(paths, missing, traces, cancel, workers) -> Generator[Progress, None, None]:
    """Decode the missing ranks in forked children (``workers`` > 1) or here, filling ``traces``."""
    from studio.tools.profiler.chrome_parallel import cores
    from studio.tools.profiler.cluster.timeline import _decode_parallel

    count = min(len(missing), workers or cores())
    if count > 1:
        yield from _decode_parallel(paths, missing, traces, count, cancel)
        return
    for i in missing:
        traces[i] = yield from decode_rank(paths[i], cancel)
        yield Progress(None, f"{Path(paths[i]).name} decoded")


def _fill_offloaded(paths, missing, traces, cancel) -> Generator[Progress, None, None]:
    """Decode the missing ranks in a worker process; each rank's cache is mapped here once written
    (a rank whose cache could not be written is decoded here afterwards)."""
    from studio.core.workers import WorkerUnavailable, run_in_worker
    from studio.tools.profiler import cache

    pending = list(missing)

    def poll() -> None:
        for i in list(pending):
            loaded = cache.load(paths[i])
            if loaded is not None and loaded.lod is not None:
                traces[i] = loaded
                pending.remove(i)

    try:
        # The decoding children yield the cores to the window: it draws the ranks decoded so far.
        job = run_in_worker("studio.tools.profiler.cluster.timeline:cache_paths", [str(paths[i]) for i in missing],
                            cancel=cancel, nice=DECODE_NICE)
        for progress in job:
            poll()
            yield progress
        poll()
    except WorkerUnavailable:
        pass
    for i in list(pending):
        traces[i] = yield from decode_rank(paths[i], cancel)
        pending.remove(i)
        yield Progress(None, f"{Path(paths[i]).name} decoded")


def summary_trace(ranks: list) -> Trace:
    """A rank's lanes from its step summary. From ``step_trace_time.csv`` / ``analysis.db``: per
    step a ``step N`` block over its computing, communication (not overlapped) and free blocks, one
    after the other from the rank's collection start (when its profiler_info says it). From an
    msprof ``PROF_*`` device's ``step_trace_*.json``: each iteration and its FP/BP and refresh parts
    at their own times. Empty when the rank has neither."""
    if ranks and ranks[0].kind == "msprof":
        try:
            return _blocks_trace(*_msprof_iterations(ranks[0]), MSPROF_SUMMARY_TRACK, ranks[0])
        except (UserError, OSError, ValueError) as exc:  # a damaged summary: no lanes until decoded
            empty = _blocks_trace([], [], 0, MSPROF_SUMMARY_TRACK, ranks[0])
            add_warning(empty.facts, f"its step summary could not be read ({str(exc).splitlines()[0]}): "
                                     f"its lanes come when its timeline is decoded")
            return empty
    from studio.tools.profiler.cluster.step_time import read_rank_steps

    rows = []
    for rank in ranks:
        try:
            rows = read_rank_steps(rank, [])
        except (UserError, OSError, ValueError):
            rows = []
        if rows:
            break
    names = ["step " + ("?" if r.step is None else str(r.step)) for r in rows] + [label for _, label in PARTS]
    blocks = []
    t = 0
    for k, row in enumerate(rows):
        parts = [max(0, int(round((getattr(row, key) or 0.0) * 1000))) for key, _ in PARTS]
        blocks.append((t, max(1, sum(parts)), 0, k))
        at = t
        for j, d in enumerate(parts):
            if d:
                blocks.append((at, d, 1, len(rows) + j))
                at += d
        t += max(1, sum(parts))
    origin = _collection_start(ranks[0]) if ranks else 0
    return _blocks_trace(blocks, names, origin, SUMMARY_TRACK, ranks[0] if ranks else None)


def _msprof_iterations(rank) -> tuple[list, list[str], int]:
    """(blocks (start, dur, depth, name index), names, origin ns) of an msprof device's iterations,
    from its ``timeline/step_trace_*.json`` (small: one event per iteration and part)."""
    from studio.tools.profiler.rank_files import read_json

    events = []
    for path in sorted((Path(rank.path) / "timeline").glob("step_trace_*.json")):
        data = read_json(path)
        if isinstance(data, dict):
            data = data.get("traceEvents", [])
        events.extend(e for e in data or [] if isinstance(e, dict) and e.get("ph") == "X"
                      and e.get("cat") in _ITERATION_PARTS)
    names: dict[str, int] = {}
    spans = []
    for event in events:
        try:
            start, dur = round(float(event["ts"]) * 1000), round(float(event.get("dur", 0)) * 1000)
        except (KeyError, TypeError, ValueError):
            continue  # a cut or malformed event: the decoded timeline will say so
        spans.append((start, max(1, dur), _ITERATION_PARTS[event["cat"]],
                      names.setdefault(str(event.get("name", event["cat"])), len(names))))
    if not spans:
        return [], [], 0
    origin = min(start for start, *_ in spans)
    return [(start - origin, dur, depth, name) for start, dur, depth, name in spans], list(names), origin


def _blocks_trace(blocks: list, names: list[str], origin: int, track_name: str, rank) -> Trace:
    """A one-track trace of ``blocks`` (start, dur, depth, name index), with its levels of detail."""
    from studio.tools.profiler.lod import build_lod

    blocks = sorted(blocks, key=lambda b: (b[0], b[2]))
    n = len(blocks)
    start, dur, depth, name = (list(column) for column in zip(*blocks)) if n else ([], [], [], [])
    arrays = (np.array(start, np.int64), np.array(dur, np.int64), np.zeros(n, np.int32), np.array(depth, np.int16))
    trace = Trace(*arrays, np.array(name, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int64),
                  np.zeros(n, np.int32), b"", names, ["step summary"],
                  [Track(0, SUMMARY_PROCESS, track_name, "summary", 0)] if n else [],
                  origin_ns=origin, source=str(rank.path) if rank is not None else "")
    trace.lod = build_lod(*arrays)
    return trace


def _collection_start(rank) -> int:
    """The rank's collection start on its wall clock (ns), from its profiler_info; 0 when unknown."""
    try:
        info = load_json(next(Path(rank.path).glob("profiler_info*.json")), "profiler_info", SETTINGS_CAP)
        end = info["end_info"]
        return int(end["collectionTimeEnd"]) - (int(end["MonotonicTimeEnd"]) - int(info["start_info"]["start_monotonic"]))
    except (StopIteration, OSError, ValueError, KeyError, TypeError, UserError):
        return 0
