"""The labelled free gaps of one rank, kept in Studio's cache folder so a second ``--free`` (or the
Cluster panel after the CLI) does not read the rank's timeline again.

An entry is keyed by the identity of the file the timeline was read from — its resolved path,
device, inode, size and modification time — and by the format below, so a changed, replaced or
moved file misses it. Entries live under ``paths.cache_dir()/cluster_free``, never beside the
user's files; each is written under a temporary name and renamed, so a crash leaves no half entry.
A cache that cannot be read or written is skipped: the gaps are then labelled again.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

from studio.core import paths
from studio.core.gc_pause import paused_gc

FORMAT_VERSION = 1  # bump whenever the gaps' labels, fields or the way a timeline is read change


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
    try:
        data = (cache_root() / f"{name}.msgpack").read_bytes()
        with paused_gc():  # ~9,000 gap dicts a rank: collections would walk them again and again
            return msgspec.msgpack.decode(data, type=Entry)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


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
