"""Downloads: one remote ``tar -c`` for many small files, SFTP or ``cat`` for the rest."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import deque
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, Progress
from studio.remote.connection import quiet_prefetch
from studio.targets.files import RESUME_MIN, new_token, verified_prefix
from studio.targets.transfer import remote_ops
from studio.targets.transfer.safe_paths import (Changed, FolderIsLink, LocalRootGuard, WriteRefused, check_relative,
                                                local_problem, open_local_folder)
from studio.targets.transfer.scan import FileInfo
from studio.targets.transfer.tar_read import MemberBody, TarFormatError, TarReader
from studio.targets.transfer.common import (CHUNK, HASH_THREAD, MIN_BATCH, SMALL_FILE, STREAM_FILE, Landed, Progressor,
                                            Sha256, TransferStats, connection_lost, is_connection_error, run_parallel,
                                            safe_mode, temp_name, expect_plan)


WRITERS = 4  # threads that create the small files of a download batch
GROUP = 32  # small files per writer task: a task (a future, a hand-over) per file cost as much Python as its write
TAR_C = b" && exec tar -c -b 256 -f - --null --verbatim-files-from --no-recursion -T -"


def open_download_stream(conn, remote: str):
    """Start the remote ``tar -c`` of a download batch while the folders are still being listed.

    The command's start-up (the login shell's files: ~250 ms here) then overlaps the listing, as the
    upload's batch command does; tar reads the names from stdin once the plan is made. Unused, its
    stdin is closed: it writes an empty archive and exits, having read nothing. None when it cannot
    be started (the caller starts one later).
    """
    from studio.targets.transfer.scan import remote_root_expr

    try:
        return remote_ops.ExecStream(conn, b"cd -- " + remote_root_expr(remote).encode("utf-8", "surrogateescape") +
                                     TAR_C, receiving=True)
    except Exception:  # noqa: BLE001 - the batch opens its own stream, which reports the error
        return None


class Downloader:
    """Download files from the remote root into ``local_root``."""

    def __init__(self, conn, local_root: Path, remote_root: str, cancel: CancelToken | None = None,
                 token: str | None = None, spare=None, real_root: str | None = None):
        self.conn, self.local_root, self.remote_root = conn, local_root, remote_root
        self._spare = spare  # a tar stream started early (see open_download_stream)
        self.real_root = real_root  # the local root's real path at plan time (None: it did not exist)
        self._root = LocalRootGuard(local_root, real_root)
        self.cancel = cancel
        self.token = token or new_token()  # the run's token: recorded as ours before any temporary file
        self.stop = threading.Event()
        self.expected: dict = {}  # path -> local FileInfo the plan saw (None: absent)
        self.expected_hash: dict = {}  # path -> SHA-256 of that local content, where known
        self.partial: dict[str, int] = {}  # path -> bytes a cut run left in this run's temporary file

    def _check_root(self, rel: str) -> None:
        problem = self._root.problem()
        if problem:
            raise WriteRefused(f"Refused to write {rel}: {problem}", self.local_root,
                               "Look at what replaced the folder, then plan again.")

    @staticmethod
    def _worth_keeping(temp: str, where: int) -> bool:
        try:
            return os.stat(temp, dir_fd=where, follow_symlinks=False).st_size >= RESUME_MIN
        except OSError:
            return False

    def _alive(self, wait: float = 1.0) -> bool:
        """Whether the link is up; a channel cut with it may end a moment before paramiko notices."""
        import time

        deadline = time.monotonic() + wait
        while self.conn.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.conn.alive

    def _folder(self, rel: str) -> int:
        """A directory handle of ``rel``'s folder (made when missing), reached without following any
        symlink (see :func:`open_local_folder`): the file is written, checked and renamed by name in it."""
        check_relative(rel)
        try:
            return open_local_folder(self._root, rel.rpartition("/")[0], create=True)
        except WriteRefused as exc:
            raise WriteRefused(f"Refused to write {rel}: {exc.what}", self.local_root, exc.fix) from None
        except FolderIsLink as exc:
            raise UserError(f"Refused to write {rel}: {exc.what}", self.local_root, exc.fix) from None

    def _land(self, rel: str, source, size: int, mtime: int, mode: int, progress: Progressor, offset: int = 0,
              prefix=None, keep_on_cut: bool = False) -> Landed:
        """Write ``source`` to a temporary file beside ``rel``; rename it over ``rel`` only if the local
        file is still as the plan saw it (else ``Changed``: someone's new work is kept).

        Every step is relative to the folder's directory handle (:meth:`_folder`), never a path
        walked again: a folder swapped for a symlink meanwhile is not written through.
        With ``offset``, the temporary file already holds that many checked bytes (``prefix``: their
        SHA-256) and ``source`` gives the rest. With ``keep_on_cut``, a lost connection leaves the
        temporary file for the next run to resume (see resume.py).
        """
        where = self._folder(rel)
        name = rel.rpartition("/")[2]
        temp = temp_name(name, self.token)
        digest = Sha256(threaded=size >= HASH_THREAD, start=prefix)
        try:
            flags = os.O_RDWR if offset else os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            fd = os.open(temp, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=where)
            with open(fd, "r+b" if offset else "wb") as out:
                if offset:
                    out.truncate(offset)
                    out.seek(offset)
                    progress.add(offset, rel, size=size)  # already here
                while chunk := source.read(CHUNK):
                    if self.stop.is_set() or (self.cancel is not None and self.cancel.cancelled):
                        raise Cancelled()
                    out.write(chunk)
                    digest.update(chunk)
                    progress.add(len(chunk), rel, size=size)
                written = out.tell()
                out.flush()
                if written == size:
                    os.fchmod(out.fileno(), safe_mode(mode))
                    os.utime(out.fileno(), (mtime, mtime))
            if written != size:
                if not self._alive():
                    raise EOFError(f"{rel}: got {written} of {size} bytes")
                raise UserError(f"The remote file changed while it was read ({written} of {size} bytes)", rel,
                                "Run again once it is no longer being written.")
            self._rename_if_unchanged(rel, temp, name, where)
        except BaseException as exc:
            digest.abandon()
            if not (keep_on_cut and is_connection_error(exc, self.conn) and self._worth_keeping(temp, where)):
                try:
                    os.unlink(temp, dir_fd=where)
                except FileNotFoundError:
                    pass
            raise
        finally:
            os.close(where)
        progress.add(0, rel, finished=True)
        return Landed(rel, FileInfo(size, mtime, safe_mode(mode)), FileInfo(size, mtime, mode), digest.hexdigest())

    def _rename_if_unchanged(self, rel: str, temp: str, name: str, where: int) -> None:
        """Rename the finished ``temp`` over ``name`` (both in the folder open as ``where``) if the
        local file is still as the plan saw it; else ``Changed`` (someone's new work is kept).
        The root is checked again here, at write time: it may have been swapped while the file came."""
        self._check_root(rel)
        problem = local_problem(name, self.expected.get(rel), self.expected_hash.get(rel), dir_fd=where)
        if problem:
            raise Changed(f"The local copy of {rel}: {problem}; left as it is", self.local_root / rel,
                          "Plan again and choose.")
        os.replace(temp, name, src_dir_fd=where, dst_dir_fd=where)

    def run(self, items: list, on_landed: Callable[[Landed], None]) -> Generator[Progress, None, TransferStats]:
        stats = TransferStats()
        small = expect_plan(items, "local", self.expected, self.expected_hash)
        if self._spare is not None:
            # The tar command started with the listing is running already: every file without a part
            # of a cut run to resume travels in it (big ones streamed straight to disk), so no other
            # command pays the login shell's start-up (one `cat` per big file did, after the plan).
            small = [i for i in items if i.remote and i.path not in self.partial]
        elif len(small) < MIN_BATCH:
            small = []
        small_set = {i.path for i in small}
        big = [i for i in items if i.path not in small_set]
        progress = Progressor(sum(i.remote.size for i in items if i.remote), len(items), "downloading")

        def landed(value: Landed) -> None:
            stats.files += 1
            stats.bytes += value.local.size
            on_landed(value)

        if small:
            yield from self._tar_batch(small, progress, landed, stats)
        if big:
            stats.failed += yield from run_parallel(big, lambda i: self._get(i, progress), progress, self.cancel,
                                                     self.stop, landed, self.conn, stats)
        return stats

    def _tar_batch(self, batch: list, progress: Progressor, landed: Callable, stats: TransferStats
                   ) -> Generator[Progress, None, None]:
        """Many small files through ONE remote ``tar -c``, each landed as it arrives (see :meth:`_land_small`)."""
        wanted = {i.path: i for i in batch}
        names = b"".join(remote_ops.encode(i.path) + b"\0" for i in batch)
        stream, self._spare = self._spare, None
        if stream is not None and stream.channel.exit_status_ready():  # its `cd` failed: start afresh
            stream.close()
            stream = None
        try:
            stream = stream or remote_ops.ExecStream(self.conn, b"cd -- " + remote_ops.q(self.remote_root) + TAR_C,
                                                     receiving=True)
        except Exception as exc:
            raise connection_lost(self.conn, exc) from exc
        feeder = threading.Thread(target=self._feed, args=(stream, names), daemon=True)
        feeder.start()
        seen = set()
        folders: dict = {}  # folder -> its open descriptor, or why it cannot be written (see _folder_fd)
        folders_lock = threading.Lock()
        # Creating a file is a file-system round trip (0.1-1 ms on a busy disk); a few writer threads
        # overlap them, as the host's tar overlaps its writes with our reads in an upload. Results
        # are taken in order here, on the job's thread (the state and progress live here).
        writers = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="deploy-land")
        pending: deque = deque()
        step_at = 0

        group: list = []  # small files not handed to a writer yet

        def flush() -> None:
            if group:
                pending.append(writers.submit(self._land_group, list(group), folders, folders_lock))
                group.clear()

        def take(done_only: bool) -> None:
            while pending and (not done_only or pending[0].done()):
                fatal = None
                for member, value, exc in pending.popleft().result():
                    if isinstance(exc, Changed):
                        stats.conflicts.append((member.name, exc.what))
                    elif isinstance(exc, WriteRefused):
                        stats.refused.append((member.name, exc.what))
                    elif isinstance(exc, UserError):
                        stats.failed.append((member.name, exc.what))
                    elif isinstance(exc, OSError) and exc.errno is not None:
                        stats.failed.append((member.name, exc.strerror or str(exc)))
                    elif exc is not None:  # the link, a cancel: reported once the group's landed files are recorded
                        fatal = fatal or exc
                    else:
                        if member.size <= SMALL_FILE:  # a big one (see _land) counted its bytes as they came
                            progress.add(member.size, member.name, finished=True)
                        landed(value)
                if fatal is not None:
                    raise fatal

        try:
            for member, data in TarReader(stream).members(stream_over=SMALL_FILE):
                if member.name not in wanted or not member.regular or member.name in seen:
                    continue  # only the files we asked for, under the names we asked for
                if self.cancel is not None:
                    self.cancel.raise_if_cancelled()
                seen.add(member.name)
                if isinstance(data, MemberBody):  # a big file: written as it comes, on a writer thread
                    flush()
                    pending.append(writers.submit(self._land_big, member, data, progress))
                    while not pending[-1].done():
                        yield progress.step()
                        wait([pending[-1]], timeout=0.1)
                    take(done_only=True)
                    continue
                group.append((member, bytes(data)))
                if len(group) >= GROUP:
                    flush()
                take(done_only=len(pending) < 4 * WRITERS)
                if progress.done_files >= step_at:  # a Progress per file would cost more than the file
                    step_at = progress.done_files + 64
                    yield progress.step()
            flush()
            take(done_only=False)
            status, err = stream.finish()
        except (Cancelled, GeneratorExit, KeyboardInterrupt):  # Ctrl-C too: a blocked read must end now
            stream.close()
            raise
        except (TarFormatError, Exception) as exc:
            stream.close()
            if isinstance(exc, TarFormatError) or is_connection_error(exc, self.conn):
                raise connection_lost(self.conn, exc) from exc
            raise
        finally:
            writers.shutdown(wait=True, cancel_futures=True)
            for fd in folders.values():
                if isinstance(fd, int):
                    os.close(fd)
            try:  # files that landed before a cancel or a cut are recorded as such
                take(done_only=True)
            except Exception:  # noqa: BLE001 - the error being raised is the one to report
                pass
        stream.close()
        yield progress.step()
        for path in wanted.keys() - seen:
            if not any(p == path for p, _ in stats.failed):
                stats.failed.append((path, err.splitlines()[-1] if err else "not sent by the remote tar"))

    def _folder_fd(self, rel: str, folder: str, folders: dict, lock: threading.Lock) -> int:
        """An open descriptor of the local ``folder`` (made when missing), cached per batch.

        It is reached from the checked root (:class:`LocalRootGuard`) one name at a time with
        ``O_NOFOLLOW``, so no symlink is ever on the way, and files made relative to it stay in
        that folder whatever later happens to its path. A root that is not the folder the plan saw
        raises WriteRefused; a symlink on the way, UserError.
        """
        with lock:
            if folder not in folders:
                parts = folder.split("/") if folder else []
                for depth in range(len(parts) + 1):
                    here = "/".join(parts[:depth])
                    if here not in folders:
                        folders[here] = self._open_folder(here, parts[depth - 1] if depth else "",
                                                          folders.get("/".join(parts[:depth - 1])) if depth else None)
            value = folders[folder]
        if isinstance(value, int):
            return value
        kind, text = value
        if kind == "root":
            raise WriteRefused(f"Refused to write {rel}: {text}", self.local_root,
                               "Look at what replaced the folder, then plan again.")
        if kind == "link":
            raise UserError(f"Refused to write {rel}: the local folder {text!r} is a symlink", self.local_root,
                            "Studio never writes through symlinks; replace the link with a folder.")
        raise OSError(kind, text)

    def _open_folder(self, path: str, name: str, parent):
        """:meth:`_folder_fd`'s one step: the descriptor of ``name`` in ``parent`` (a descriptor, or the
        error value that parent got, passed on), or an error value ``(kind, text)``."""
        import errno

        if not path:
            problem = self._root.problem()
            if problem:
                return "root", problem
            try:
                return self._root.open()
            except OSError as exc:
                return "root", str(exc)
        if not isinstance(parent, int):
            return parent
        try:
            os.mkdir(name, dir_fd=parent)
        except FileExistsError:
            pass
        except OSError as exc:
            return exc.errno, exc.strerror or str(exc)
        try:
            return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "link", path
            return exc.errno, exc.strerror or str(exc)

    def _land_group(self, group: list, folders: dict, lock: threading.Lock) -> list:
        """:meth:`_land_small` for each ``(member, data)``: ``(member, Landed or None, error or None)`` each."""
        out = []
        for member, data in group:
            try:
                out.append((member, self._land_small(member, data, folders, lock), None))
            except Exception as exc:  # noqa: BLE001 - sorted out on the job's thread (see _tar_batch)
                out.append((member, None, exc))
        return out

    def _land_big(self, member, body: MemberBody, progress: Progressor) -> list:
        """:meth:`_land` of a big member as it streams, in :meth:`_land_group`'s form."""
        try:
            return [(member, self._land(member.name, body, member.size, member.mtime, member.mode, progress,
                                        keep_on_cut=True), None)]
        except Exception as exc:  # noqa: BLE001 - as in _land_group
            return [(member, None, exc)]

    def _land_small(self, member, data: bytes, folders: dict, lock: threading.Lock) -> Landed:
        """:meth:`_land` for a small file whose bytes are all here: the same temporary name, checks
        and rename, with no file object and every call relative to its folder's open descriptor
        (the per-file cost is what bounds a download of many small files: 8 system calls each,
        with no path walked twice)."""
        rel = member.name
        check_relative(rel)
        folder, _, name = rel.rpartition("/")
        where = self._folder_fd(rel, folder, folders, lock)
        temp = temp_name(name, self.token)
        mode = safe_mode(member.mode)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=where)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fchmod(fd, mode)
                os.utime(fd, (member.mtime, member.mtime))
            finally:
                os.close(fd)
            self._rename_if_unchanged(rel, temp, name, where)
        except BaseException:
            os.unlink(temp, dir_fd=where)
            raise
        return Landed(rel, FileInfo(member.size, member.mtime, mode), FileInfo(member.size, member.mtime, member.mode),
                      hashlib.sha256(data).hexdigest())

    @staticmethod
    def _feed(stream, names: bytes) -> None:
        try:
            stream.write(names)
            stream.channel.shutdown_write()
        except Exception:  # the reader reports a dead channel
            pass

    def _get(self, item, progress: Progressor) -> Landed:
        size = item.remote.size
        if size < STREAM_FILE:
            # Medium files: SFTP with read-ahead; no remote command, so no shell start-up per file.
            remote_file = self.conn.sftp().open(remote_ops.encode(f"{self.remote_root}/{item.path}"), "rb")
            try:
                quiet_prefetch(remote_file, size)
                return self._land(item.path, remote_file, size, item.remote.mtime, item.remote.mode, progress)
            finally:
                try:
                    remote_file.close()
                except Exception:  # a dead connection: the error that matters is already raised
                    pass
        # Big files: `cat` on an exec channel streams at OpenSSH-like speed and, unlike paramiko's
        # prefetch thread, stops the moment the channel is closed (cancel). A part a cut run left
        # here is kept when the host's file starts with the same bytes: `tail` sends the rest.
        remote = f"{self.remote_root}/{item.path}"
        offset, prefix = 0, None
        temp = self.local_root / temp_name(item.path, self.token)
        if 0 < self.partial.get(item.path, 0) <= size:
            prefix = verified_prefix(self.conn, remote, temp, self.partial[item.path], remote_head=True)
            offset = self.partial[item.path] if prefix is not None else 0
        command = (b"exec tail -c +" + str(offset + 1).encode() + b" -- " if offset else b"exec cat -- ") + \
            remote_ops.q(remote)
        stream = remote_ops.ExecStream(self.conn, command, receiving=True)
        try:
            stream.channel.shutdown_write()
            value = self._land(item.path, stream, size, item.remote.mtime, item.remote.mode, progress, offset, prefix,
                               keep_on_cut=True)
            status, err = stream.finish()
            if status != 0:
                raise UserError(f"Reading the remote file failed: {err}", item.path, "Check its permissions.")
            return value
        finally:
            stream.close()
