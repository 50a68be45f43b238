"""The labelled free gaps of every rank: from the cache, else read and labelled — the ranks not
cached yet in parallel, one forked process per core, when there is enough to read.

A rank's timeline is its profiler db when that holds the tables the analysis reads, else its
``trace_view.json``. Children label their share of the ranks and keep each in the cache
(:mod:`.free_cache`); the parent then loads every rank from there, and labels here whatever a
child could not keep (a cache folder not writable, a child that failed: its error is raised here,
where it is the user's to read). Plain ``fork``, as the rank timelines use: it works inside
Studio's worker processes, where a process pool may not start.
"""

from __future__ import annotations

import os
from pathlib import Path

from studio.tools.profiler.cluster import free_cache
from studio.tools.profiler.cluster.discover import OUTPUT, RankDir
from studio.tools.profiler.cluster.free_labels import label_gaps
from studio.tools.profiler.cluster.free_sources import DeviceTimeline, db_usable, from_db, from_trace

# Below this much to read, the ranks are labelled here one after another: forking costs more than
# it saves, and a small export is read on a thread of the window's process, which must not fork.
PARALLEL_BYTES = 4 << 20


def timeline_file(rank: RankDir) -> Path | None:
    """The file the rank's device timeline is read from: its profiler db, else its trace_view.json."""
    if rank.kind != "pytorch":
        return None
    db = rank.files.get("profiler_db")
    if db is not None and db_usable(db):
        return db
    trace = rank.path / OUTPUT / "trace_view.json"
    return trace if trace.is_file() else None


def read_timeline(source: Path) -> DeviceTimeline:
    """The device timeline in ``source`` (a profiler db or a trace_view.json)."""
    return from_trace(source) if source.suffix == ".json" else from_db(source)


def labelled(source: Path) -> free_cache.Entry:
    """The gaps of the timeline in ``source``, labelled (from the cache when it holds them)."""
    entry = free_cache.load(source)
    if entry is None:
        timeline = read_timeline(source)
        entry = free_cache.Entry(timeline.source, label_gaps(timeline))
        free_cache.store(source, entry)
    return entry


def labelled_all(sources: list[Path], workers: int | None = None) -> list[free_cache.Entry]:
    """:func:`labelled` for each of ``sources``, those not cached read in ``workers`` processes
    (default: one per core) when they are big enough to be worth it."""
    from studio.tools.profiler.chrome_parallel import cores

    entries = [free_cache.load(s) for s in sources]
    missing = [s for s, entry in zip(sources, entries) if entry is None]
    count = min(len(missing), workers or cores())
    if count > 1 and hasattr(os, "fork") and sum(_size(s) for s in missing) >= PARALLEL_BYTES:
        _label_in_children(sorted(missing, key=_size, reverse=True), count)
    entries = [entry if entry is not None else labelled(s) for s, entry in zip(sources, entries)]
    if missing:  # the cache grew: bounded again, never at the cost of this run's ranks
        free_cache.evict(keep=sources)
    return entries


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _label_in_children(sources: list[Path], count: int) -> None:
    """Label ``sources`` in ``count`` forked children (the biggest first, dealt round the children),
    each keeping its ranks in the cache; waits for all of them."""
    children = []
    try:
        for slot in range(count):
            pid = os.fork()
            if pid == 0:  # the child never returns from here
                status = 0
                try:
                    for source in sources[slot::count]:
                        labelled(source)
                except BaseException:  # noqa: BLE001 - the parent labels this rank again and raises
                    status = 1
                finally:
                    os._exit(status)
            children.append(pid)
    finally:
        for pid in children:
            os.waitpid(pid, 0)
