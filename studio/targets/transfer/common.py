"""Moving files, the shared parts: temporary names, modes, progress, parallel SFTP channels.

Uploads are in upload.py, downloads in download.py. Tar batches carry many small files,
parallel SFTP channels the rest.

Every file lands under a temporary name in its final folder (or in a staging folder inside the
root, for tar batches), gets its mtime and permissions, and is then renamed over the target,
so a reader — or a cancelled or cut transfer — sees the old file or the new one, never a part.
Permissions are kept, minus group/world write and set-id bits.

Measured on loopback (../shared/reference/deploy_ssh.md §3.4): a tar stream into ``tar -x``
moved 5,000 x 4 KiB in 3.6 s against 8-9 s for per-file SFTP; a few SFTP channels with large
write requests reach ~100 MB/s for big files.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, Progress
from studio.targets.files import CHUNK, REQUEST, temp_name  # noqa: F401  (one copy routine and its sizes)
from studio.targets.transfer.scan import FileInfo

SMALL_FILE = 256 * 1024         # files up to this size travel in tar batches
MIN_BATCH = 8                   # fewer small files than this are not worth a tar process
BATCH_BYTES = 64 * 1024 * 1024  # one tar batch: a cut connection loses at most this much work
CHANNELS = 4                    # parallel SFTP channels (sshd allows 10 sessions by default)
STREAM_FILE = 16 * 1024 * 1024  # downloads from this size stream through `cat` (see Downloader._get)
HASH_THREAD = 8 * 1024 * 1024   # files from this size are hashed on a thread of their own


def safe_mode(mode: int) -> int:
    """Keep read/execute bits; never group/world-writable, never set-id (owner may always read)."""
    return (mode & 0o755) | 0o400 if mode else 0o644


@dataclass
class Landed:
    """A file that is now the same on both sides (with the SHA-256 of what was copied)."""

    path: str
    local: FileInfo
    remote: FileInfo
    sha256: str | None = None


class Sha256:
    """SHA-256 of a stream of chunks; for big files on its own thread.

    hashlib lets go of the GIL on large updates, so hashing a 200 MB file (0.2 s here) runs on
    the second core while this thread moves the bytes, instead of adding to the transfer time.
    """

    def __init__(self, threaded: bool = False, start=None):
        self._digest = start if start is not None else hashlib.sha256()  # start: a prefix already hashed
        self._queue: queue.Queue | None = None
        if threaded:
            self._queue = queue.Queue(maxsize=16)
            self._thread = threading.Thread(target=self._run, args=(self._queue,), name="deploy-sha256", daemon=True)
            self._thread.start()

    def _run(self, chunks: queue.Queue) -> None:
        while (chunk := chunks.get()) is not None:
            self._digest.update(chunk)

    def update(self, chunk: bytes) -> None:
        if self._queue is None:
            self._digest.update(chunk)
        else:
            self._queue.put(chunk)

    def hexdigest(self) -> str:
        if self._queue is not None:
            self._queue.put(None)
            self._thread.join()
            self._queue = None
        return self._digest.hexdigest()

    def abandon(self) -> None:
        """Stop the thread without waiting for a result (errors, cancel)."""
        if self._queue is not None:
            self._queue.put(None)
            self._queue = None


class HashingReader:
    """Reads a file object and hashes what passes through."""

    def __init__(self, source, threaded: bool = False, start=None):
        self.source = source
        self.digest = Sha256(threaded, start)

    def read(self, size: int = -1) -> bytes:
        data = self.source.read(size)
        self.digest.update(data)
        return data

    def hexdigest(self) -> str:
        return self.digest.hexdigest()

    def abandon(self) -> None:
        self.digest.abandon()


@dataclass
class TransferStats:
    files: int = 0
    bytes: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # refused at write time (safe_paths)
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # changed since the plan: left alone


def expect_plan(items: list, written: str, expected: dict, expected_hash: dict) -> list:
    """Record what the plan saw on the ``written`` side ("remote" for an upload, "local" for a
    download) of each item — the last check before a write compares with it — and return the
    items small enough on the other side to travel in a tar batch."""
    from studio.targets.transfer.safe_paths import check_relative

    source = "local" if written == "remote" else "remote"
    small = []
    for item in items:
        check_relative(item.path)
        expected[item.path] = getattr(item, written)
        expected_hash[item.path] = getattr(item, f"{written}_sha256", None)
        info = getattr(item, source)
        if info and info.size <= SMALL_FILE:
            small.append(item)
    return small


def connection_lost(conn, exc: BaseException) -> UserError:
    if getattr(conn, "dead", False):
        reason = "the host stopped answering (no reply to keepalives)"
    else:
        reason = str(exc).strip() or {EOFError: "the host closed the connection"}.get(type(exc), type(exc).__name__)
    return UserError(f"The connection to {conn.entry.address} was lost: {reason}",
                     conn.entry.name,
                     "Nothing was left half-written: files already moved are complete, the others are "
                     "untouched. Run the same command again to finish.")


def is_connection_error(exc: BaseException, conn=None) -> bool:
    """``exc`` is the link failing (see :func:`~studio.remote.connection.is_link_error`; with ``conn``,
    a failure reply of the SFTP server on a live link is not)."""
    from studio.remote.connection import is_link_error

    return is_link_error(exc, conn)


class Progressor:
    """Collects byte counts from workers; the job's own thread turns them into Progress steps.

    The message carries the totals and the file being moved, with its own percentage when it
    is big enough to take a while.
    """

    def __init__(self, total_bytes: int, total_files: int, verb: str):
        self.total_bytes, self.total_files, self.verb = max(total_bytes, 1), total_files, verb
        self.done_bytes = 0
        self.done_files = 0
        self.current = ""
        self.file_done: dict[str, int] = {}
        self.file_size: dict[str, int] = {}
        self.lock = threading.Lock()

    def add(self, nbytes: int, path: str | None = None, finished: bool = False, size: int | None = None) -> None:
        with self.lock:
            self.done_bytes += nbytes
            if path:
                self.current = path
                if size is not None:
                    self.file_size[path] = size
                self.file_done[path] = self.file_done.get(path, 0) + nbytes
            if finished:
                self.done_files += 1
                self.file_done.pop(path, None)
                self.file_size.pop(path, None)

    def step(self) -> Progress:
        with self.lock:
            fraction = min(self.done_bytes / self.total_bytes, 0.999)
            current = self.current
            size = self.file_size.get(current)
            if size and size >= 4 * CHUNK:
                current += f" ({100 * self.file_done.get(current, 0) / size:.0f}%)"
            return Progress(fraction, f"{self.verb} {self.done_files}/{self.total_files} files, "
                                      f"{self.done_bytes / 1e6:.1f}/{self.total_bytes / 1e6:.1f} MB: {current}")


def run_parallel(items: list, work: Callable, progress: Progressor, cancel: CancelToken | None,
                  stop: threading.Event, on_done: Callable, conn, stats: TransferStats | None = None
                  ) -> Generator[Progress, None, list]:
    """Run ``work(item)`` on CHANNELS threads; yield progress while they run; call on_done per result.

    Returns the per-file failures; when ``stats`` is given, a file refused at write time
    (``WriteRefused``) goes to its ``refused`` and one changed since the plan (``Changed``) to its
    ``conflicts`` instead.
    """
    from studio.targets.files import DiskFull
    from studio.targets.transfer.safe_paths import Changed, WriteRefused

    failed: list[tuple[str, str]] = []
    fatal: list[BaseException] = []
    events: queue.Queue = queue.Queue()

    def wrapped(item):
        try:
            if stop.is_set() or (cancel is not None and cancel.cancelled):
                events.put(("cancelled", None))
                return
            events.put(("ok", work(item)))
        except Cancelled:
            events.put(("cancelled", None))
        except BaseException as exc:  # noqa: BLE001 - reported per file or as a lost connection
            events.put(("error", (item, exc)))

    pool = ThreadPoolExecutor(max_workers=CHANNELS, thread_name_prefix="deploy-sftp")
    futures: list = []
    try:
        futures = [pool.submit(wrapped, item) for item in items]
        remaining = len(futures)
        while remaining:
            if cancel is not None and cancel.cancelled:
                stop.set()
            try:
                kind, value = events.get(timeout=0.1)
            except queue.Empty:
                yield progress.step()
                if all(f.done() for f in futures) and events.empty():
                    break
                continue
            remaining -= 1
            if kind == "ok":
                on_done(value)
            elif kind == "error":
                item, exc = value
                if is_connection_error(exc, conn) or isinstance(exc, DiskFull):
                    stop.set()  # a full disk fails every file after this one too
                    fatal.append(exc)
                elif isinstance(exc, WriteRefused) and stats is not None:
                    stats.refused.append((item.path, exc.what))
                elif isinstance(exc, Changed) and stats is not None:
                    stats.conflicts.append((item.path, exc.what))
                elif isinstance(exc, UserError):
                    failed.append((item.path, exc.what))
                else:
                    failed.append((item.path, str(exc) or type(exc).__name__))
            yield progress.step()
    except BaseException:
        # Ctrl-C, the job closed, an error: the workers stop at their next chunk (removing their
        # temporary files); ones blocked on a silent host never would, and shutdown() waits for
        # them — closing the connection makes their reads and writes fail at once.
        stop.set()
        from concurrent.futures import wait

        if wait(futures, timeout=1.0).not_done:
            conn.close()
        raise
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
    if cancel is not None:
        cancel.raise_if_cancelled()
    if fatal:
        if isinstance(fatal[0], UserError):
            raise fatal[0]
        raise connection_lost(conn, fatal[0])
    return failed
