"""Every rank of a multi-rank folder on one timeline: a group of lanes per rank, on one clock.

Each rank is read as the profiler reads it alone (its ``*_ascend_pt`` folder: the db or the text
timeline, whichever is richer), into its own columnar cache, so a second open maps files. Ranks
not cached yet are decoded in parallel, one forked process per core (each pinned to its core,
decoding its ranks there alone). The per-rank traces are then put side by side: tracks, names
and flows renumbered, times moved to the earliest rank's origin (the ranks' clocks are the hosts' wall
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
from studio.tools.profiler.args_blob import JoinedBlob
from studio.tools.profiler.lod import Level, Lod
from studio.tools.profiler.model import WARNING, Counter, Trace, Track, add_warning

_RANK_GAP = 1000  # process sort keys per rank (a rank has far fewer processes)


def open_rank_timelines(folder: Path, cancel: CancelToken | None = None, workers: int | None = None
                        ) -> Generator[Progress, None, Trace]:
    """One trace holding every rank of ``folder``, its processes named ``rank N · <process>``."""
    from studio.tools.profiler.cluster.discover import find_ranks

    found = find_ranks(Path(folder))
    if not found.ranks:
        raise UserError("This folder holds msprof-analyze's summaries, not the ranks' timelines", folder,
                        "Open the folder that holds the *_ascend_pt (or PROF_*) folders of the ranks.")
    sources = rank_sources(found)
    paths = list(sources)
    traces = yield from decode_ranks(paths, cancel, workers)
    yield Progress(0.95, f"lining up {len(found.ranks)} ranks")
    return join_ranks(traces, rank_labels(sources), folder, len(found.ranks))


def rank_labels(sources: dict[Path, list[int]]) -> list[str]:
    """The lane-group label of each source folder: ``rank N`` (or ``ranks N, M`` for a shared one)."""
    return [("rank " if len(r) == 1 else "ranks ") + ", ".join(map(str, r)) for r in sources.values()]


def join_ranks(traces: Sequence[Trace], labels: Sequence[str], folder: Path, ranks: int,
               origin: int | None = None) -> Trace:
    """The decoded ranks' traces as the one joined trace of ``folder`` (facts and warnings added;
    ``origin``: see :func:`merge_traces`)."""
    trace = merge_traces(traces, labels, source=str(folder), origin=origin)
    trace.facts["ranks"] = str(ranks)
    empty = [label for label, t in zip(labels, traces) if not t.size]
    if empty:
        add_warning(trace.facts, f"{', '.join(empty)}: no timeline in the folder (only summaries such as "
                                 f"step_trace_time.csv or analysis.db), so no lanes")
    return trace


def rank_sources(found) -> dict[Path, list[int]]:
    """The folder each rank's timeline is read from, and the ranks it holds.

    A PyTorch rank is its ``*_ascend_pt`` folder; an msprof rank (``PROF_*/device_N``) is read with
    its PROF_ folder, which may hold several devices: those ranks then share one lane group."""
    sources: dict[Path, list[int]] = {}
    for rank in sorted(found.ranks, key=lambda r: r.rank):
        path = rank.path.parent if rank.kind == "msprof" and rank.path.parent.name.startswith("PROF_") else rank.path
        sources.setdefault(path, []).append(rank.rank)
    return sources


def cache_ranks(folder: str, cancel: CancelToken | None = None) -> Generator[Progress, None, int]:
    """Every rank of ``folder`` decoded into its cache (the GUI runs this in a worker process, so
    nothing forks from the window's process); returns how many folders were read."""
    from studio.tools.profiler.cluster.discover import find_ranks

    paths = list(rank_sources(find_ranks(Path(folder))))
    yield from decode_ranks(paths, cancel)
    return len(paths)


def cache_paths(paths: list[str], cancel: CancelToken | None = None, nice: int = 0) -> Generator[Progress, None, int]:
    """The rank folders ``paths`` decoded into their caches (in a worker process, as
    :func:`cache_ranks`; ``nice``: the decoding children's, see :func:`decode_ranks`); returns how
    many were read."""
    yield from decode_ranks([Path(p) for p in paths], cancel, nice=nice)
    return len(paths)


def decode_ranks(paths: Sequence[Path], cancel: CancelToken | None = None, workers: int | None = None,
                 nice: int = 0) -> Generator[Progress, None, list[Trace]]:
    """Each path's trace with its levels of detail, from the cache or decoded on every core (by
    children made ``nice`` that much: the window drawing the ranks decoded so far comes first)."""
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
        yield from _decode_parallel(paths, missing, traces, count, cancel, nice)
    return traces  # type: ignore[return-value]


def _decode_parallel(paths, missing: list[int], traces: list, count: int, cancel, nice: int = 0
                     ) -> Generator[Progress, None, None]:
    """Decode the ``missing`` ranks in ``count`` forked children (plain ``fork``, as the range
    decoders do: it works inside Studio's worker processes, where a process pool may not start),
    each pinned to a core of its own and writing its ranks' caches; the caches are mapped here."""
    import json
    import select
    import shutil

    from studio.tools.profiler import cache
    from studio.tools.profiler.chrome_parallel import _kill

    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    children: dict[int, int] = {}  # pid -> read end of its pipe
    completed = False
    try:
        for slot in range(count):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child never returns from here
                os.close(read_end)
                _child(slot, [(i, str(paths[i])) for i in missing[slot::count]], allowed, write_end, nice)
            os.close(write_end)
            children[pid] = read_end
        buffers = {fd: b"" for fd in children.values()}
        open_fds = set(buffers)
        done = 0
        while open_fds:
            if cancel is not None:
                cancel.raise_if_cancelled()
            ready, _, _ = select.select(list(open_fds), [], [], 0.1)
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.discard(fd)
                    continue
                buffers[fd] += chunk
                *lines, buffers[fd] = buffers[fd].split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if message[0] == "error":
                        raise UserError(*message[1:])
                    i, folder, temporary = message
                    traces[i] = cache.load_folder(Path(folder))
                    if temporary:
                        shutil.rmtree(folder, ignore_errors=True)  # the mappings keep the data (POSIX)
                    if traces[i] is None:
                        raise UserError("A rank's parsed timeline could not be read back from the cache", paths[i],
                                        "Check the disk is not full, then open the folder again.")
                    done += 1
                    yield Progress(0.9 * done / len(missing), f"{done} of {len(missing)} ranks decoded")
        missed = [paths[i] for i in missing if traces[i] is None]
        if missed:
            raise UserError("A process decoding ranks ended before its ranks were read", missed[0],
                            "Open the folder again; if it recurs, open that rank alone to see its error.")
        completed = True
    finally:
        for pid, fd in children.items():
            os.close(fd)
            try:
                finished, _ = os.waitpid(pid, 0 if completed else os.WNOHANG)
            except ChildProcessError:
                continue
            if not finished:
                _kill(pid)  # cancelled or failed: its rank is not wanted any more


def _child(slot: int, jobs: list[tuple[int, str]], allowed: list[int], out: int, nice: int = 0) -> None:
    """A decoding child: its ranks, one after the other, on core ``slot``; one JSON line per rank."""
    import json

    code = 0
    try:
        if allowed and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {allowed[slot % len(allowed)]})  # its ranks decode here alone
        if nice:
            os.nice(nice)
        from studio.core.jobs import run_job
        from studio.tools.profiler.loader import parse_to_cache

        for index, path in jobs:
            folder, temporary = run_job(parse_to_cache(path))
            os.write(out, (json.dumps([index, folder, temporary]) + "\n").encode())
    except UserError as exc:
        os.write(out, (json.dumps(["error", exc.what, exc.where, exc.fix]) + "\n").encode())
    except BaseException as exc:  # noqa: BLE001 - the parent turns it into a message
        os.write(out, (json.dumps(["error", f"Decoding a rank failed: {type(exc).__name__}: {exc}", None,
                                   "Open that rank alone to see the error in full."]) + "\n").encode())
        code = 1
    finally:
        os._exit(code)


def merge_traces(traces: Sequence[Trace], labels: Sequence[str], source: str = "", origin: int | None = None
                 ) -> Trace:
    """``traces`` side by side in one trace: processes prefixed with their label, one clock
    (``origin``: its zero in ns; default: the earliest trace's)."""
    origin = joined_origin(traces) if origin is None else origin
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
            if key.startswith(WARNING):  # a rank's warning stays a warning, saying whose
                add_warning(facts, f"{label}: {value}")
            else:
                facts[f"{label} {key}"] = value
        facts[f"{label} source"] = trace.source
        slice_offset += trace.size
        blob_offset += len(trace.args_blob)
    joined = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}

    def column(key: str, dtype) -> np.ndarray:  # cast only when it is not that type already: a
        return joined[key].astype(dtype, copy=False)  # copy of up to 100 MB, again on each rank's join

    counters.sort(key=lambda c: (c.process_sort, c.process, c.name))
    merged = Trace(joined["start"], joined["dur"], column("track", np.int32), joined["depth"],
                   column("name", np.int32), column("cat", np.int32), joined["args_off"],
                   joined["args_len"], JoinedBlob(blobs), list(names), list(cats), tracks, counters,
                   column("it", np.int64), column("itr", np.int32), column("iname", np.int32),
                   column("fs", np.int64), column("fd", np.int64), facts=facts, origin_ns=origin,
                   source=source)
    if all(t.lod is not None for t in traces):
        merged.lod = merge_lods(traces, origin)
    return merged


def joined_origin(traces: Sequence[Trace]) -> int:
    """The zero of the traces joined: the earliest origin of those holding anything timed."""
    timed = [t for t in traces if t.size or t.counters or t.instant_time.size]
    return min((t.origin_ns for t in timed), default=0)


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
        types = {"count": np.int32}  # the others int64; cast only when a part differs (no copy)
        levels.append(Level(bucket, *(np.concatenate(cols[c]).astype(types.get(c, np.int64), copy=False)
                                      for c in ("start", "end", "end_max", "rep", "count", "bounds"))))
    return Lod(np.concatenate(row_track).astype(np.int32, copy=False) if row_track else np.zeros(0, np.int32),
               np.concatenate(row_depth).astype(np.int16, copy=False) if row_depth else np.zeros(0, np.int16), levels)
