"""Every rank of a multi-rank folder on one timeline: a group of lanes per rank, on one clock.

Each rank is read as the profiler reads it alone (its ``*_ascend_pt`` folder: the db or the text
timeline, whichever is richer), into its own columnar cache, so a second open maps files. Ranks
not cached yet are decoded in parallel, one process per core (each pinned to its core and decoding
its rank on it alone). The per-rank traces are then put side by side: tracks, names and flows
renumbered, times moved to the earliest rank's origin (the ranks' clocks are the hosts' wall
clocks, as msprof stamps them), and the levels of detail of each rank joined rather than built
again (their bucket sizes are the same for every trace), which is most of the cost of a first
frame over millions of slices.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Sequence
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.tools.profiler.lod import Level, Lod
from studio.tools.profiler.model import Counter, Trace, Track, add_warning

_RANK_GAP = 1000  # process sort keys per rank (a rank has far fewer processes)


def open_rank_timelines(folder: Path, cancel: CancelToken | None = None, workers: int | None = None
                        ) -> Generator[Progress, None, Trace]:
    """One trace holding every rank of ``folder``, its processes named ``rank N · <process>``."""
    from studio.tools.profiler.cluster.discover import find_ranks

    found = find_ranks(Path(folder))
    if not found.ranks:
        raise UserError("This folder holds msprof-analyze's summaries, not the ranks' timelines", folder,
                        "Open the folder that holds the *_ascend_pt (or PROF_*) folders of the ranks.")
    # A PyTorch rank is its *_ascend_pt folder; an msprof rank (PROF_*/device_N) is read with its
    # PROF_ folder, which may hold several devices: those ranks then share one lane group.
    sources: dict[Path, list[int]] = {}
    for rank in sorted(found.ranks, key=lambda r: r.rank):
        path = rank.path.parent if rank.kind == "msprof" and rank.path.parent.name.startswith("PROF_") else rank.path
        sources.setdefault(path, []).append(rank.rank)
    paths = list(sources)
    traces = yield from decode_ranks(paths, cancel, workers)
    labels = [("rank " if len(r) == 1 else "ranks ") + ", ".join(map(str, r)) for r in sources.values()]
    yield Progress(0.95, f"lining up {len(found.ranks)} ranks")
    trace = merge_traces(traces, labels, source=str(folder))
    trace.facts["ranks"] = str(len(found.ranks))
    empty = [label for label, t in zip(labels, traces) if not t.size]
    if empty:
        add_warning(trace.facts, f"{', '.join(empty)}: no timeline in the folder (only summaries such as "
                                 f"step_trace_time.csv or analysis.db), so no lanes")
    return trace


def decode_ranks(paths: Sequence[Path], cancel: CancelToken | None = None, workers: int | None = None
                 ) -> Generator[Progress, None, list[Trace]]:
    """Each path's trace with its levels of detail, from the cache or decoded on every core."""
    from studio.tools.profiler import cache
    from studio.tools.profiler.chrome_parallel import cores

    traces: list[Trace | None] = []
    for path in paths:
        cached = cache.load(path)
        traces.append(cached if cached is not None and cached.lod is not None else None)
    missing = [i for i, t in enumerate(traces) if t is None]
    count = min(len(missing), workers or cores())
    if missing and count <= 1:
        from studio.tools.profiler.loader import open_profile

        for done, i in enumerate(missing):
            yield Progress(0.9 * done / len(missing), f"reading {Path(paths[i]).name}")
            traces[i] = yield from open_profile(paths[i], cancel)
    elif missing:
        yield from _decode_parallel(paths, missing, traces, count, cancel)
    return traces  # type: ignore[return-value]


def _decode_parallel(paths, missing: list[int], traces: list, count: int, cancel) -> Generator[Progress, None, None]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    from studio.tools.profiler import cache

    method = "fork" if hasattr(os, "fork") else "spawn"
    context = multiprocessing.get_context(method)
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    started = context.Value("i", 0)
    pool = ProcessPoolExecutor(count, mp_context=context, initializer=_pin, initargs=(allowed, started))
    try:
        pending = {pool.submit(_rank_to_cache, str(paths[i])): i for i in missing}
        done_count = 0
        while pending:
            finished, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            if cancel:
                cancel.raise_if_cancelled()
            for future in finished:
                i = pending.pop(future)
                folder, temporary = future.result()
                traces[i] = cache.load_folder(Path(folder))
                if temporary:
                    import shutil

                    shutil.rmtree(folder, ignore_errors=True)  # the mappings keep the data (POSIX)
                if traces[i] is None:
                    raise UserError("A rank's parsed timeline could not be read back from the cache", paths[i],
                                    "Check the disk is not full, then open the folder again.")
                done_count += 1
                yield Progress(0.9 * done_count / len(missing), f"{done_count} of {len(missing)} ranks decoded")
    finally:
        for process in list(getattr(pool, "_processes", {}).values()):
            if process.is_alive() and cancel is not None and cancel.cancelled:
                process.kill()
        pool.shutdown(wait=True, cancel_futures=True)


def _pin(allowed: list[int], started) -> None:
    """Pool worker start: stay on a core of its own, so its rank decodes in this process alone."""
    with started.get_lock():
        nth = started.value
        started.value += 1
    if allowed and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {allowed[nth % len(allowed)]})


def _rank_to_cache(path: str) -> tuple[str, bool]:
    from studio.core.jobs import run_job
    from studio.tools.profiler.loader import parse_to_cache

    return run_job(parse_to_cache(path))


def merge_traces(traces: Sequence[Trace], labels: Sequence[str], source: str = "") -> Trace:
    """``traces`` side by side in one trace: processes prefixed with their label, one clock."""
    timed = [t for t in traces if t.size or t.counters or t.instant_time.size]
    origin = min((t.origin_ns for t in timed), default=0)
    names: dict[str, int] = {}
    cats: dict[str, int] = {}
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("start", "dur", "track", "depth", "name", "cat", "args_off",
                                                            "args_len", "it", "itr", "iname", "fs", "fd")}
    tracks: list[Track] = []
    counters: list[Counter] = []
    blobs: list = []
    facts: dict[str, str] = {}
    slice_offset = blob_offset = 0
    for index, (trace, label) in enumerate(zip(traces, labels)):
        shift = trace.origin_ns - origin
        track_offset = len(tracks)
        sort = _process_order(trace, index)
        for t in trace.tracks:
            tracks.append(Track(track_offset + t.id, f"{label} · {t.process}", t.name, f"{label}:{t.pid}", t.tid,
                                sort[t.process], t.sort, t.labels))
        for c in trace.counters:
            counters.append(Counter(f"{label} · {c.process}", c.name, c.times + shift, c.values, f"{label}:{c.pid}",
                                    sort[c.process], c.source))
        name_map = np.array([names.setdefault(n, len(names)) for n in trace.names] or [0], np.int32)
        cat_map = np.array([cats.setdefault(c, len(cats)) for c in trace.cats] or [0], np.int32)
        parts["start"].append(np.asarray(trace.start) + shift)
        parts["dur"].append(np.asarray(trace.dur))
        parts["track"].append(np.asarray(trace.track) + np.int32(track_offset))
        parts["depth"].append(np.asarray(trace.depth))
        parts["name"].append(name_map[np.asarray(trace.name)])
        parts["cat"].append(cat_map[np.asarray(trace.cat)])
        parts["args_off"].append(np.asarray(trace.args_off) + blob_offset)
        parts["args_len"].append(np.asarray(trace.args_len))
        parts["it"].append(np.asarray(trace.instant_time) + shift)
        parts["itr"].append(np.asarray(trace.instant_track) + np.int32(track_offset))
        parts["iname"].append(name_map[np.asarray(trace.instant_name)] if trace.instant_name.size
                              else np.zeros(0, np.int32))
        parts["fs"].append(np.asarray(trace.flow_src) + slice_offset)
        parts["fd"].append(np.asarray(trace.flow_dst) + slice_offset)
        blobs.append(trace.args_blob)
        for key, value in trace.facts.items():
            facts[f"{label} {key}"] = value
        facts[f"{label} source"] = trace.source
        slice_offset += trace.size
        blob_offset += len(trace.args_blob)
    joined = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    counters.sort(key=lambda c: (c.process_sort, c.process, c.name))
    merged = Trace(joined["start"], joined["dur"], joined["track"].astype(np.int32), joined["depth"],
                   joined["name"].astype(np.int32), joined["cat"].astype(np.int32), joined["args_off"],
                   joined["args_len"], JoinedBlob(blobs), list(names), list(cats), tracks, counters,
                   joined["it"].astype(np.int64), joined["itr"].astype(np.int32), joined["iname"].astype(np.int32),
                   joined["fs"].astype(np.int64), joined["fd"].astype(np.int64), facts=facts, origin_ns=origin,
                   source=source)
    if all(t.lod is not None for t in traces):
        merged.lod = merge_lods(traces, origin)
    return merged


def _process_order(trace: Trace, index: int) -> dict[str, float]:
    """Sort key of each process of ``trace`` inside rank ``index``'s band of keys."""
    keys = {t.process: t.process_sort for t in trace.tracks}
    for c in trace.counters:
        keys.setdefault(c.process, c.process_sort)
    ordered = sorted(keys, key=lambda p: (keys[p], p))
    return {p: index * _RANK_GAP + min(j, _RANK_GAP - 1) for j, p in enumerate(ordered)}


def merge_lods(traces: Sequence[Trace], origin: int) -> Lod:
    """The traces' levels of detail joined (rows renumbered, items moved to ``origin``)."""
    depth = max((len(t.lod.levels) for t in traces), default=0)
    row_track, row_depth, levels = [], [], []
    track_offset = 0
    for t in traces:
        row_track.append(np.asarray(t.lod.row_track) + np.int32(track_offset))
        row_depth.append(np.asarray(t.lod.row_depth))
        track_offset += len(t.tracks)
    for k in range(depth):
        chosen = [t.lod.levels[min(k, len(t.lod.levels) - 1)] for t in traces]
        if k and all(len(c.start) == len(t.lod.levels[min(k - 1, len(t.lod.levels) - 1)].start)
                     for c, t in zip(chosen, traces)):
            # No rank merged anything at this size (its level shares the finer one's items): share
            # the joined finer level too, as build_lod does, instead of another copy of it.
            bucket = max((t.lod.levels[k].bucket_ns for t in traces if k < len(t.lod.levels)), default=0)
            prev = levels[-1]
            levels.append(Level(bucket, prev.start, prev.end, prev.end_max, prev.rep, prev.count, prev.bounds))
            continue
        cols: dict[str, list[np.ndarray]] = {c: [] for c in ("start", "end", "end_max", "rep", "count", "bounds")}
        items = slices = 0
        bucket = 0
        for t in traces:
            level = t.lod.levels[min(k, len(t.lod.levels) - 1)]  # a shorter trace's coarsest level serves
            if k < len(t.lod.levels):
                bucket = level.bucket_ns
            shift = t.origin_ns - origin
            cols["start"].append(np.asarray(level.start) + shift)
            cols["end"].append(np.asarray(level.end) + shift)
            cols["end_max"].append(np.asarray(level.end_max) + shift)
            cols["rep"].append(np.asarray(level.rep) + slices)
            cols["count"].append(np.asarray(level.count))
            cols["bounds"].append(np.asarray(level.bounds)[:-1] + items)
            items += int(np.asarray(level.start).shape[0])
            slices += t.size
        cols["bounds"].append(np.array([items], np.int64))
        levels.append(Level(bucket, *(np.concatenate(cols[c]).astype(np.int64 if c != "count" else np.int32)
                                      for c in ("start", "end", "end_max", "rep", "count", "bounds"))))
    return Lod(np.concatenate(row_track).astype(np.int32) if row_track else np.zeros(0, np.int32),
               np.concatenate(row_depth).astype(np.int16) if row_depth else np.zeros(0, np.int16), levels)


class JoinedBlob:
    """The ranks' argument blobs read as one (no copy of some hundred MB each): ``len`` and slicing."""

    def __init__(self, parts: list) -> None:
        self.parts = parts
        self.offsets = np.cumsum([0] + [len(p) for p in parts])

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __getitem__(self, key: slice) -> bytes:
        start, stop, _ = key.indices(len(self))
        out = []
        while start < stop:
            i = int(np.searchsorted(self.offsets, start, side="right")) - 1
            part_end = min(stop, int(self.offsets[i + 1]))
            base = int(self.offsets[i])
            out.append(bytes(self.parts[i][start - base:part_end - base]))
            start = part_end
        return b"".join(out)
