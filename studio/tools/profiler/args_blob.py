"""Where a trace's slice ``args`` bytes live: the reader's own blob, the trace file itself, or both.

A slice's args are ``args_blob[args_off:args_off + args_len]`` (raw JSON, decoded when a slice is
selected). The compiled scanner does not copy them out of a big JSON trace: a 10M-event file
carries ~1 GB of args, and gathering then writing them cost more than a third of the read. Its
slices point into the file instead, through :class:`SourceArgs`, at an offset in a segment of its
own; what the reader builds itself (events the typed decoder read) stays in the own blob at the
low offsets. :class:`ArgsBlob` joins the two, :class:`JoinedBlob` the blobs of several traces.

The file is read with ``pread`` when a slice is selected, never memory-mapped: a trace rewritten in
place while it is shown (a profiler exporting to the same name again) would kill a process that
touches a mapping past the file's new end. The file's identity (size, modification time, inode) is
checked on every read; a changed file gives :class:`ArgsUnavailable` saying so, never wrong args.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

SEGMENT_BITS = 40  # each source file gets 1 TiB of offsets; the own blob lives below the first
SEGMENT = 1 << SEGMENT_BITS


class ArgsUnavailable(Exception):
    """A slice's args cannot be read: the trace file they are in changed or is gone."""


@dataclass(frozen=True)
class SourceArgs:
    """The args bytes of a trace file read in place: the file's ``path`` and, as it was read, its
    ``size``, ``mtime_ns`` and ``inode`` (checked on each read)."""

    path: str
    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: Path | str, size: int) -> SourceArgs | None:
        """The file at ``path`` whose contents were read as ``size`` bytes, or None when the file
        on disk is not that size any more (it changes as it is read: its args are copied instead)."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        if stat.st_size != size:
            return None
        return cls(str(path), size, stat.st_mtime_ns, stat.st_ino)

    def to_json(self) -> dict:
        """What the cache keeps of it."""
        return asdict(self)

    def __len__(self) -> int:
        return self.size

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` of the file, as it was read."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise ArgsUnavailable(f"{self.path} cannot be opened any more ({exc.strerror}); "
                                  f"its args are read from it when a slice is selected") from exc
        try:
            stat = os.fstat(fd)
            if (stat.st_size, stat.st_mtime_ns, stat.st_ino) != (self.size, self.mtime_ns, self.inode):
                raise ArgsUnavailable(f"{self.path} changed since it was read; open it again to see its args")
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)


class ArgsBlob:
    """A trace's args: ``own`` bytes (or a mapping) at offsets below :data:`SEGMENT`, and source
    file ``k`` at offsets from ``(k + 1) * SEGMENT``; ``len`` and slicing, as bytes have."""

    def __init__(self, own, sources: list[SourceArgs]) -> None:
        if len(own) >= SEGMENT:
            raise ValueError("an args blob of 1 TiB or more")
        self.own, self.sources = own, list(sources)

    def __len__(self) -> int:
        return len(self.sources) * SEGMENT + len(self.sources[-1]) if self.sources else len(self.own)

    def __getitem__(self, key: slice) -> bytes:
        start, stop, _ = key.indices(len(self))
        segment = start >> SEGMENT_BITS
        if segment == 0:
            return bytes(self.own[start:stop])
        base = segment * SEGMENT
        return self.sources[segment - 1].read(start - base, max(0, min(stop, base + SEGMENT) - start))


class JoinedBlob:
    """Several traces' args blobs read as one (no copy of some hundred MB each): ``len`` and slicing."""

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
