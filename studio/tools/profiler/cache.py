"""On-disk columnar cache of parsed traces: the second open of a big trace is a few memory maps.

Each source gets a folder in the per-user cache (``studio.core.paths.cache_dir()/profiler/<key>``),
keyed on its resolved path, size and modification time (for folders: of every file in them), so
a changed source misses the cache and is parsed again. Arrays are ``.npy`` files opened with
``mmap_mode="r"``; names, tracks, tables and facts are one JSON file. A folder is written under a
temporary name and renamed, so a crash never leaves a half cache behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from studio.core import paths
from studio.core.lru import oldest_over_limit
from studio.tools.profiler.args_blob import ArgsBlob, SourceArgs
from studio.tools.profiler.lod import Level, Lod
from studio.tools.profiler.model import Counter, Table, Trace, Track

MAX_BYTES = 4 << 30  # the oldest cached traces go beyond this
FORMAT_VERSION = 8  # bump whenever what a reader produces changes
_SLICE_COLUMNS = ("start", "dur", "track", "depth", "name", "cat", "args_off", "args_len",
                  "instant_time", "instant_track", "instant_name", "flow_src", "flow_dst")
_LEVEL_COLUMNS = ("start", "end", "end_max", "rep", "count", "bounds")


def cache_root() -> Path:
    """Where cached traces live."""
    return paths.cache_dir() / "profiler"


def source_key(source: Path) -> str:
    """A key that changes whenever the source (file, or any file in the folder) changes."""
    source = Path(source).resolve()
    parts = [str(source), str(FORMAT_VERSION)]
    files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]
    for path in files[:5000]:
        stat = path.stat()
        parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:24]


def load(source: Path) -> Trace | None:
    """The cached trace of ``source``, or None when there is none or it is stale or unreadable."""
    return load_folder(cache_root() / source_key(source))


def load_folder(folder: Path) -> Trace | None:
    """The trace stored in ``folder`` (memory-mapped), or None when it is missing or unreadable."""
    folder = Path(folder)
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _SLICE_COLUMNS}
        blob = _map_bytes(folder / "args.bin")
        sources = [SourceArgs(**source) for source in meta.get("args_sources", [])]
        if sources:  # args read in place from the trace file (see args_blob)
            blob = ArgsBlob(blob, sources)
        trace = Trace(
            **{name: arrays[name] for name in _SLICE_COLUMNS}, args_blob=blob,
            names=meta["names"], cats=meta["cats"], tracks=[Track(**t) for t in meta["tracks"]],
            counters=[Counter(c["process"], c["name"], np.load(folder / f"counter{i}_t.npy"),
                              np.load(folder / f"counter{i}_v.npy"), c["pid"], c["process_sort"],
                              c.get("source", ""))
                      for i, c in enumerate(meta["counters"])],
            tables={k: Table(**t) for k, t in meta["tables"].items()}, facts=meta["facts"],
            origin_ns=meta["origin_ns"], source=meta["source"], model_path=meta.get("model_path"),
        )
        if meta["levels"] is None:  # stored without levels of detail (``studio profile stats``)
            return trace
        levels = [Level(lvl["bucket_ns"], *(np.load(folder / f"lod{i}_{c}.npy", mmap_mode="r")
                                             for c in _LEVEL_COLUMNS))
                  for i, lvl in enumerate(meta["levels"])]
        trace.lod = Lod(np.load(folder / "row_track.npy"), np.load(folder / "row_depth.npy"), levels)
        return trace
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged cache is only a miss


def store(source: Path, trace: Trace) -> Path | None:
    """Write ``trace`` to the cache for ``source``; returns the folder (None if it cannot be written)."""
    try:
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    final = root / source_key(source)
    if store_into(root / f".tmp-{final.name}-{os.getpid()}", trace, final) is None:
        return None
    evict(root, keep=final)
    return final


def _save_lod(folder: Path, trace: Trace) -> list:
    """Write ``trace``'s levels of detail into ``folder``; return the levels (none without them)."""
    levels = trace.lod.levels if trace.lod is not None else []
    # A level that merges little shares the finer level's arrays (and a row-sorted level its end
    # as end_max): each array is written once and linked under its other names. On 2M events
    # three levels share one set: 120 MB of the entry's writes.
    written: dict[int, Path] = {}
    for i, level in enumerate(levels):
        for column in _LEVEL_COLUMNS:
            array, target = getattr(level, column), folder / f"lod{i}_{column}.npy"
            earlier = written.get(id(array))
            if earlier is not None and _link(earlier, target):
                continue
            if not _link_column(array, target):
                np.save(target, np.ascontiguousarray(array))
            written[id(array)] = target
    if trace.lod is not None:
        np.save(folder / "row_track.npy", trace.lod.row_track)
        np.save(folder / "row_depth.npy", trace.lod.row_depth)
    return levels


def add_lod(source: Path, trace: Trace) -> Path | None:
    """Add ``trace``'s levels of detail to the cache entry of ``source`` stored without them.

    Only the level files are written, then ``meta.json`` is replaced in one rename: a reader sees
    the entry without levels or with all of them. Much cheaper than storing the whole entry again.
    """
    folder = cache_root() / source_key(source)
    meta_path = folder / "meta.json"
    try:
        meta = json.loads(meta_path.read_text())
        levels = _save_lod(folder, trace)
        meta["levels"] = [{"bucket_ns": lvl.bucket_ns} for lvl in levels]
        tmp = folder / f".meta-{os.getpid()}.json"
        tmp.write_text(json.dumps(meta))
        os.replace(tmp, meta_path)
        return folder
    except (OSError, ValueError):
        return None


def store_into(tmp: Path, trace: Trace, final: Path | None = None) -> Path | None:
    """Write ``trace`` into folder ``tmp``, then rename it to ``final`` (when given); None on failure."""
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in _SLICE_COLUMNS:
            column = getattr(trace, name)
            if not _link_column(column, tmp / f"{name}.npy"):
                np.save(tmp / f"{name}.npy", np.ascontiguousarray(column))
        blob, sources = trace.args_blob, []
        if isinstance(blob, ArgsBlob):  # only the reader's own bytes are written; the files are named
            blob, sources = blob.own, [source.to_json() for source in blob.sources]
        if not _link_args(blob, tmp / "args.bin"):
            _write_args(blob, tmp / "args.bin")
        for i, counter in enumerate(trace.counters):
            np.save(tmp / f"counter{i}_t.npy", counter.times)
            np.save(tmp / f"counter{i}_v.npy", counter.values)
        levels = _save_lod(tmp, trace)
        meta = {
            "names": trace.names, "cats": trace.cats, "tracks": [vars(t) for t in trace.tracks],
            "counters": [{"process": c.process, "name": c.name, "pid": c.pid, "process_sort": c.process_sort,
                          "source": c.source} for c in trace.counters],
            "tables": {k: vars(t) for k, t in trace.tables.items()}, "facts": trace.facts,
            "origin_ns": trace.origin_ns, "source": trace.source, "model_path": trace.model_path,
            "levels": [{"bucket_ns": lvl.bucket_ns} for lvl in levels] if trace.lod is not None else None,
            "args_sources": sources,
        }
        (tmp / "meta.json").write_text(json.dumps(meta))  # written last: its presence marks a whole cache
        if final is None:
            return tmp
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        return final
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return None


SCRATCH_PREFIX = ".tmp-ranges-"  # + the owner's pid: swept once that process is gone (chrome_parallel)


def scratch_folder(kind: str) -> Path:
    """A new scratch folder on the cache's file system (so what is written there can be linked
    into an entry rather than copied), else in the system's temporary folder; the caller deletes it."""
    try:
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-{kind}-", dir=root))
    except OSError:
        return Path(tempfile.mkdtemp(prefix=f"studio-{kind}-"))


@contextlib.contextmanager
def spill_folder() -> Iterator[Path | None]:
    """A scratch folder for a reader's args file (see :func:`scratch_folder`), deleted afterwards;
    None when none can be made (the reader then spills to an anonymous file, as before)."""
    try:
        folder = scratch_folder("spill")
    except OSError:
        yield None
        return
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # a linked args file lives on in its entry


PARKED = ("start", "dur", "track", "depth", "name", "cat", "args_off", "args_len")


def park_columns(trace: Trace, folder: Path) -> None:
    """Write ``trace``'s slice columns into ``folder`` and map them back, before its levels of
    detail are built: the four the levels do not read (name, cat, args) are no longer resident at
    the worker's peak (10M slices: ~200 MB), the others are pages the kernel may drop, and the
    cache links the files (and the finest level's start, the same column) rather than writes them again."""
    for name in PARKED:
        target = folder / f"{name}.npy"
        np.save(target, np.ascontiguousarray(getattr(trace, name)))
        setattr(trace, name, np.load(target, mmap_mode="r"))


def _link_column(column: np.ndarray, target: Path) -> bool:
    """Link the ``.npy`` file ``column`` maps whole (see :func:`park_columns`) as ``target``; False
    (nothing done) when it is not such a mapping or the link cannot be made."""
    filename = getattr(column, "filename", None)
    if not isinstance(column, np.memmap) or filename is None or not column.flags.c_contiguous:
        return False
    try:
        whole = np.load(filename, mmap_mode="r")
        if (whole.dtype != column.dtype or whole.shape != column.shape or whole.offset != column.offset
                or os.path.getsize(filename) != column.offset + column.nbytes):
            return False
    except (OSError, ValueError):
        return False
    return _link(filename, target)


def _link(source: Path | str, target: Path) -> bool:
    """Hard-link ``source`` as ``target``; False (nothing done) where that cannot be done."""
    try:
        os.link(source, target)
        return True
    except OSError:
        return False


def _link_args(blob, target: Path) -> bool:
    """Link the file ``blob`` maps (a reader's named args file, see builder.MappedArgs) as
    ``target`` rather than copy it: the args are most of a big trace's bytes, and writing them
    again took longer than the scan that read them. False (nothing done): not a named file, or
    on another file system. The file may have grown past ``len(blob)`` (a snapshot of a read that
    goes on): the offsets only point into the part mapped."""
    path = getattr(blob, "path", None)
    if path is None:
        return False
    try:
        if os.path.getsize(path) < len(blob):
            return False
    except OSError:
        return False
    return _link(path, target)


def _write_args(blob, target: Path) -> None:
    """Copy the args bytes of ``blob`` (bytes or a mapping) into ``target``, in slices."""
    with target.open("wb") as handle:  # in slices: the blob may be a big mmap
        view = memoryview(blob) if not isinstance(blob, bytes) else blob
        mapped = blob if isinstance(blob, mmap.mmap) else None
        step = 64 << 20
        for offset in range(0, len(view), step):
            handle.write(view[offset:offset + step])
            if mapped is not None and hasattr(mmap, "MADV_DONTNEED"):
                # Let the copied pages go from this process (they stay in the file): a 5 GB
                # trace's ~2.5 GB of args would otherwise all count as resident here.
                mapped.madvise(mmap.MADV_DONTNEED, offset, min(step, len(view) - offset))


def evict(root: Path, keep: Path | None = None, limit: int = MAX_BYTES) -> None:
    """Delete the least recently written cached traces until the cache is under ``limit`` bytes."""
    entries = []
    for folder in root.iterdir():
        if folder.is_dir() and folder != keep and not folder.name.startswith(".tmp-"):
            size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
            entries.append((folder.stat().st_mtime, size, folder))
    total = sum(size for _, size, _ in entries)
    if keep is not None and keep.is_dir():
        total += sum(f.stat().st_size for f in keep.iterdir() if f.is_file())
    for folder in oldest_over_limit(entries, total, limit):
        shutil.rmtree(folder, ignore_errors=True)


def _map_bytes(path: Path) -> bytes | mmap.mmap:
    size = path.stat().st_size
    if size == 0:
        return b""
    with path.open("rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
