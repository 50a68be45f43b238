"""The labelled free gaps of one rank, kept in Studio's cache folder so a second ``--free`` (or the
Cluster panel after the CLI) does not read the rank's timeline again.

An entry is keyed by the identity of the file the timeline was read from — its resolved path,
device, inode, size and modification time — and by the format below, so a changed, replaced or
moved file misses it. Entries live under ``paths.cache_dir()/cluster_free``, never beside the
user's files; each is written under a temporary name and renamed, so a crash leaves no half entry.
A cache that cannot be read or written is skipped: the gaps are then labelled again.

The folder is bounded as the profiler's database caches are: past :data:`MAX_BYTES`, the least
recently used entries go (reading an entry marks it used). An entry in use is never deleted: those
of the run that evicts, and any used in the last :data:`IN_USE_S` seconds (another run, in another
process, may be between writing its ranks and reading them back).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

import msgspec

from studio.core import paths
from studio.core.gc_pause import paused_gc
from studio.core.lru import oldest_over_limit, touch

FORMAT_VERSION = 1  # bump whenever the gaps' labels, fields or the way a timeline is read change
MAX_BYTES = 1 << 30  # the least recently used entries go beyond this (16 ranks x 1M events: ~45 MB)
IN_USE_S = 600       # an entry used this recently may be another run's, between its write and its read


class Entry(msgspec.Struct):
    """What is kept per rank: where its timeline came from, and its gaps (without the rank number)."""

    source: str
    gaps: list[dict]


def cache_root() -> Path:
    """Where the rank entries live."""
    return paths.cache_dir() / "cluster_free"


def key(source: Path) -> str | None:
    """The entry's name for the timeline file ``source``; None when the file cannot be stat'ed."""
    try:
        resolved = Path(source).resolve()
        stat = resolved.stat()
    except OSError:
        return None
    identity = f"{resolved}\n{stat.st_dev}:{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}\n{FORMAT_VERSION}"
    return hashlib.sha1(identity.encode()).hexdigest()[:24]


def load(source: Path) -> Entry | None:
    """The entry of ``source``, or None (none yet, the file changed, or the entry is unreadable)."""
    name = key(source)
    if name is None:
        return None
    path = cache_root() / f"{name}.msgpack"
    try:
        data = path.read_bytes()
        with paused_gc():  # ~9,000 gap dicts a rank: collections would walk them again and again
            entry = msgspec.msgpack.decode(data, type=Entry)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    touch(path)
    return entry


def store(source: Path, entry: Entry) -> None:
    """Keep ``entry`` for ``source`` (silently not, where the cache folder is not writable)."""
    name = key(source)
    if name is None:
        return
    try:
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        part = root / f"{name}.{os.getpid()}.part"
        part.write_bytes(msgspec.msgpack.encode(entry))
        os.replace(part, root / f"{name}.msgpack")
    except OSError:
        return


def evict(keep: Iterable[Path] = (), limit: int | None = None) -> None:
    """Delete the least recently used entries until the folder holds at most ``limit`` bytes
    (default :data:`MAX_BYTES`), never
    the entries of the timelines ``keep`` (the run's own) nor one used in the last IN_USE_S seconds;
    part files no write has touched for as long (a crash, a kill) go first."""
    limit = MAX_BYTES if limit is None else limit
    kept = {f"{name}.msgpack" for name in map(key, keep) if name is not None}
    now, entries, total = time.time(), [], 0
    try:
        files = list(cache_root().iterdir())
    except OSError:
        return
    for path in files:
        try:
            info = path.stat()
        except OSError:
            continue
        if path.suffix == ".part":
            if now - info.st_mtime > IN_USE_S:
                _unlink(path)
            continue
        total += info.st_size
        if path.suffix == ".msgpack" and path.name not in kept and now - info.st_mtime > IN_USE_S:
            entries.append((info.st_mtime, info.st_size, path))
    for path in oldest_over_limit(entries, total, limit):
        _unlink(path)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass  # gone already (another run evicted it) or not ours to delete
