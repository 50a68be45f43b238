"""Uploads: one-command tar batches for many small files, parallel SFTP channels for the rest."""

from __future__ import annotations

import io
import os
import posixpath
import threading
from collections.abc import Callable, Generator
from pathlib import Path

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, Progress
from studio.targets.transfer import remote_ops
from studio.targets.transfer.safe_paths import HASH_CHANGED, Changed, WriteRefused, parents, stat_check_line
from studio.targets.transfer.scan import FileInfo, remote_root_expr
from studio.targets.transfer.tar_stream import BackgroundSender, TarWriter
from studio.targets.files import (ShortWrite, new_token, root_temp_name, sftp_write_atomic, verified_prefix,
                                  write_failure)
from studio.targets.transfer.common import (BATCH_BYTES, HASH_THREAD, MIN_BATCH, SMALL_FILE, HashingReader, Landed,
                                            Progressor, TransferStats, connection_lost, is_connection_error,
                                            run_parallel, safe_mode, expect_plan)


def staging_names(token: str) -> tuple[str, str]:
    """The staging folder (in the root) of one run, and its rename script's name inside it."""
    return f".studio-staging-{token}", f".studio-moves-{token}"


def open_batch_stream(conn, remote: str, token: str):
    """Start the remote command that receives one tar batch.

    It first waits for a line ``go``: opened early (while the plan is being made), its shell
    start-up overlaps the listing; closed without ``go`` it exits having changed nothing. The
    next line is the root's real path as the plan saw it: the command ``cd``s there and checks
    ``pwd -P`` against it, so a root replaced by a symlink since the scan is never written through
    (it reads the archive to its end and exits with ROOT_MOVED). An empty line means the root did
    not exist: it must still be absent, and is made with a plain ``mkdir``.
    ``cat |`` buffers between sshd and tar (measured 0.6 s instead of 1.1 s for 5,000 files on a
    busy 2-core host: tar's 10 KiB reads otherwise stall sshd's writes). The rename script is the
    archive's last member, so a cut stream (tar fails, ``&&`` stops) never runs it.
    """
    staging, script = staging_names(token)
    path = remote[2:] if remote.startswith("~/") else remote
    root = remote_root_expr(remote).encode("utf-8", "surrogateescape")
    parent = remote_ops.q(posixpath.dirname(path.rstrip("/")) or ".")
    enter = (b'{ if [ -n "$want" ]; then cd -- "$want" && [ "$(pwd -P)" = "$want" ]; else mkdir -p -- ' + parent +
             b" && mkdir -- " + root + b" && cd -- " + root + b"; fi 2>/dev/null || { cat >/dev/null; exit " +
             str(remote_ops.ROOT_MOVED).encode() + b"; }; }")
    # A failed unpack (a full disk, a cut stream) removes the staging folder: no half batch stays.
    command = (b'read -r go && [ "$go" = go ] && IFS= read -r want && ' + enter +
               b" && mkdir -m 700 -- " + remote_ops.q(staging) +
               b" && { cat | tar -x --no-same-owner -f - -C " + remote_ops.q(staging) +
               b" || { rm -rf -- " + remote_ops.q(staging) + b"; exit 1; }; }" +
               b" && exec sh " + remote_ops.q(f"{staging}/{script}"))
    return remote_ops.ExecStream(conn, command)


class Uploader:
    """Upload files from ``local_root`` to the remote folder.

    Every remote command pays for the login shell's start-up files (measured here: ~250 ms per
    command with a pyenv-initialising ~/.bashrc, and conda set-ups on lab servers are similar),
    so a tar batch is ONE command: it creates the folders, unpacks into a staging folder and
    runs the rename script that travels as the archive's last member. SFTP needs no shell.
    """

    def __init__(self, conn, local_root: Path, remote: str, real_root: str | None, known_dirs: set[str] = frozenset(),
                 cancel: CancelToken | None = None, token: str | None = None, spare=None):
        self.conn, self.local_root, self.remote = conn, local_root, remote
        self.remote_root = real_root        # absolute real path once the folder exists
        self.known_dirs = set(known_dirs)   # remote folders the scan saw (no mkdir needed)
        self.cancel = cancel
        self.token = token or new_token()
        self._spare = spare                 # a batch stream opened early (see open_batch_stream)
        self.expected: dict = {}            # path -> remote FileInfo the plan saw (None: absent)
        self.expected_hash: dict = {}       # path -> SHA-256 of that remote content, where known
        self._checker = None                # a CheckShell for the SFTP writes' last check (made on first use)
        self._checker_lock = threading.Lock()
        self.partial: dict[str, int] = {}   # path -> bytes a cut run left in this run's temporary file
        self.stop = threading.Event()

    def _remote(self, rel: str) -> bytes:
        return remote_ops.encode(f"{self.remote_root}/{rel}")

    def run(self, items: list, on_landed: Callable[[Landed], None]) -> Generator[Progress, None, TransferStats]:
        """Upload ``items`` (PlanItems); ``on_landed`` is called as each file is in place."""
        stats = TransferStats()
        small = expect_plan(items, "remote", self.expected, self.expected_hash)
        if len(small) < MIN_BATCH:
            small = []
        small_set = {i.path for i in small}
        big = [i for i in items if i.path not in small_set]
        total = sum(i.local.size for i in items if i.local)
        progress = Progressor(total, len(items), "uploading")

        def landed(value: Landed) -> None:
            stats.files += 1
            stats.bytes += value.local.size
            on_landed(value)

        batch, batch_bytes = [], 0
        for item in small:
            batch.append(item)
            batch_bytes += item.local.size
            if batch_bytes >= BATCH_BYTES:
                yield from self._tar_batch(batch, progress, landed, stats)
                batch, batch_bytes = [], 0
        if batch:
            yield from self._tar_batch(batch, progress, landed, stats)
        if big:
            try:
                self._sftp_dirs(big)
                if self._check_shell().status(b":") is None:  # it could not enter the root as planned
                    raise remote_ops.root_moved(self.conn, self.remote_root)
            except WriteRefused as exc:
                stats.refused += [(item.path, exc.what) for item in big]
                if self._checker is not None:
                    self._checker.close()
                return stats
            except Exception as exc:
                if is_connection_error(exc, self.conn):
                    raise connection_lost(self.conn, exc) from exc
                raise
            try:
                stats.failed += yield from run_parallel(big, lambda i: self._put(i, progress), progress, self.cancel,
                                                         self.stop, landed, self.conn, stats)
            finally:
                if self._checker is not None:
                    self._checker.close()
        return stats

    def _sftp_dirs(self, items: list) -> None:
        """Make sure the root exists, over SFTP (no shell start-up). The folders of ``items`` are made
        by the shell that moves each file into place (see :meth:`_land`), in pinned folders."""
        try:
            if self.remote_root is None:
                self.remote_root = remote_ops.create_root_sftp(self.conn, self.remote)
        except UserError:  # WriteRefused too: already says what and where
            raise
        except Exception as exc:
            if is_connection_error(exc):
                raise connection_lost(self.conn, exc) from exc
            raise UserError(f"Cannot create remote folders: {exc}", self.remote,
                            "Check that the remote user may write there.") from exc

    def _move_units(self, paths: list[str]) -> list[tuple[str, list[str], bool]]:
        """(target folder, names, names are whole new folders) groups, in a stable order."""
        files: dict[str, set[str]] = {}    # target folder -> file names to move into it
        folders: dict[str, set[str]] = {}  # target folder -> new folder names to move in whole
        for path in paths:
            missing = next((f for f in parents(path) if f not in self.known_dirs), None)
            unit = missing or path
            folder, _, name = unit.rpartition("/")
            (folders if missing else files).setdefault(folder, set()).add(name)
        units = [(folder, sorted(names), False) for folder, names in sorted(files.items())]
        units += [(folder, sorted(names), True) for folder, names in sorted(folders.items())]
        return units

    def _moves_script(self, staging: str, units: list[tuple[str, list[str], bool]]) -> bytes:
        """Shell lines that rename the staged files into place, then print the root's real path.

        A folder missing on the remote moves in as a whole (one rename shows all its files at
        once); other files move one by one, grouped per folder into one ``mv -t`` each. Every
        ``mv`` here is a rename(2) within one file system: atomic. A first upload of 5,000 files
        in 100 new folders is then ONE ``mv`` process instead of 100 (each costs ~3-8 ms on a
        busy host).

        Each group runs in a subshell that first enters its target folder (``cd -P``, one name at a
        time from the root the script stands in) and checks with ``pwd -P`` that it is the root's
        folder of that name; every check and ``mv`` then names ``./NAME`` in it. The shell's working
        folder is pinned, not a path: a folder a process on the host exchanges for a symlink after
        the check is never written through. A refused group prints ``refused N`` (its index) and
        the rest goes on.
        """
        q = remote_ops.q
        lines = [b"set -e", b"R=$(pwd -P)", b'S="$R"/' + q(staging)]
        for index, (folder, names, whole) in enumerate(units):
            body = [remote_ops.enter_folder(folder)] if folder else []
            if whole:  # new folders: nothing of the host's is inside, so no per-file check
                body += [b"! [ -e " + q(n) + b" ] && ! [ -L " + q(n) + b" ]" for n in names]
                for i in range(0, len(names), remote_ops.CHUNK):
                    sources = b" ".join(b'"$S"/' + q(f"{folder}/{n}" if folder else n)
                                        for n in names[i: i + remote_ops.CHUNK])
                    body.append(b"mv -f -t . -- " + sources)
                lines.append(b"( " + b" && ".join(body) + b" ) || echo refused " + str(index).encode())
                continue
            # each file only if the host's copy is still as planned, else "changed FOLDER-INDEX NAME-INDEX"
            moves = [b"set --"]
            for n_index, name in enumerate(names):
                path = f"{folder}/{name}" if folder else name
                moves.append(b"if " + stat_check_line(name, self.expected.get(path), q, self.expected_hash.get(path)) +
                             b'; then set -- "$@" "$S"/' + q(path) + b"; else echo changed " +
                             f"{index} {n_index}".encode() + b"; fi")
                if (n_index + 1) % remote_ops.CHUNK == 0 or n_index == len(names) - 1:
                    moves.append(b'[ $# -eq 0 ] || mv -f -t . -- "$@"; set --')
            if folder:
                lines.append(b"( " + body[0] + b" || { echo refused " + str(index).encode() + b"; exit 0; }\n" +
                             b"\n".join(moves) + b"\n)")
            else:
                lines += moves
        lines += [b"rm -rf -- " + q(staging), b"pwd -P"]
        return b"\n".join(lines) + b"\n"

    def _tar_batch(self, batch: list, progress: Progressor, landed: Callable, stats: TransferStats
                   ) -> Generator[Progress, None, None]:
        """Stream ``batch`` into a staging folder and rename it into place, with ONE remote command.

        A cut stream never runs the rename script (see :func:`open_batch_stream`): nothing
        outside the staging folder changes.
        """
        staging, script = staging_names(self.token)
        sent: list[Landed] = []
        try:
            if self._spare is not None:  # opened while the folders were being listed
                stream, self._spare = self._spare, None
            else:
                stream = open_batch_stream(self.conn, self.remote, self.token)
            stream.write(b"go\n" + remote_ops.encode(self.remote_root or "") + b"\n")
        except Exception as exc:
            raise connection_lost(self.conn, exc) from exc
        sender = BackgroundSender(stream.write)
        try:
            tar = TarWriter(sender.put)
            for item in batch:
                if self.cancel is not None:
                    self.cancel.raise_if_cancelled()
                try:
                    handle = open(self.local_root / item.path, "rb")
                except OSError as exc:
                    stats.failed.append((item.path, exc.strerror or str(exc)))
                    continue
                with handle:
                    st = os.fstat(handle.fileno())
                    now = FileInfo(st.st_size, int(st.st_mtime), safe_mode(st.st_mode))
                    reader = HashingReader(handle)
                    tar.add(item.path, now.mode, now.mtime, reader, now.size)
                here = FileInfo(now.size, now.mtime, now.mode, st.st_mtime_ns, st.st_ctime_ns)
                sent.append(Landed(item.path, here, now, reader.hexdigest()))
                progress.add(now.size, item.path)
                if len(sent) % 64 == 1:  # a Progress per file would cost more than the file (as in downloads)
                    yield progress.step()
            if self.cancel is not None:
                self.cancel.raise_if_cancelled()
            units = self._move_units([s.path for s in sent])
            moves = self._moves_script(staging, units)
            tar.add(script, 0o600, 0, io.BytesIO(moves), len(moves))
            tar.close()
            sender.close()
            status, err = stream.finish()
            out = stream.read()
        except (Cancelled, GeneratorExit, KeyboardInterrupt):  # Ctrl-C too: a blocked read must end now
            sender.abandon()
            stream.close()
            raise
        except Exception as exc:
            sender.abandon()
            if is_connection_error(exc, self.conn):
                stream.close()
                raise connection_lost(self.conn, exc) from exc
            if isinstance(exc, OSError) and exc.errno is None:  # the remote tar ended early: say why
                status, err = stream.finish()
                stream.close()
                self._unpack_failed(status, err)
            stream.close()
            raise
        stream.close()
        if status == remote_ops.ROOT_MOVED:
            reason = remote_ops.root_moved(self.conn, self.remote_root or self.remote).what
            stats.refused += [(value.path, reason) for value in sent]
            for value in sent:
                progress.add(0, value.path, finished=True)
            return
        if status != 0:
            self._unpack_failed(status, err)
        *notes, root = out.decode("utf-8", "surrogateescape").rstrip("\n").split("\n")
        self.remote_root = self.remote_root or root
        refused: set[str] = set()
        for note in notes:
            if note.startswith("changed "):
                unit, name_index = (int(x) for x in note.split()[1:3])
                folder, names, _ = units[unit]
                path = f"{folder}/{names[name_index]}" if folder else names[name_index]
                refused.add(path)
                stats.conflicts.append((path, "the host's copy changed after the plan was made; left as it is"))
            elif note.startswith("refused "):
                folder, names, whole = units[int(note.split()[1])]
                where = folder or "(root)"
                reason = (f"the remote folder {where} is a symlink or was replaced on the host after the scan; "
                          "nothing was written through it") if not whole else \
                    f"the remote folder {'/'.join(filter(None, [folder, names[0]]))} appeared on the host after the scan"
                for value in sent:
                    top = value.path if not whole else next(
                        (f for f in parents(value.path) if f not in self.known_dirs), value.path)
                    unit_folder, _, unit_name = top.rpartition("/")
                    if unit_folder == folder and unit_name in names:
                        refused.add(value.path)
                        stats.refused.append((value.path, reason))
        self.known_dirs.update(f for s in sent if s.path not in refused for f in parents(s.path))
        for value in sent:
            if value.path not in refused:
                landed(value)
            progress.add(0, value.path, finished=True)
        yield progress.step()

    def _unpack_failed(self, status: int, err: str) -> None:
        """Raise the error for a tar batch the host did not unpack (a full disk: :class:`DiskFull`)."""
        folder = self.remote_root or self.remote
        full = [line for line in err.splitlines() if "No space left" in line or "Disk quota exceeded" in line]
        if full:
            raise write_failure(self.conn, folder, "the uploaded files", OSError(full[0]))
        lines = [line for line in err.splitlines() if "Exiting with failure status" not in line]
        raise UserError(f"Unpacking the uploaded files failed on {self.conn.entry.name}: "
                        f"{lines[-1] if lines else f'exit status {status}'}",
                        self.remote, "Check free space and permissions in the remote folder; run again.")

    def _check_shell(self) -> remote_ops.CheckShell:
        with self._checker_lock:
            if self._checker is None:
                self._checker = remote_ops.CheckShell(self.conn, self.remote_root)
            return self._checker

    def _land(self, path: str, temp: str) -> None:
        """Move the uploaded ``temp`` (in the root) to ``path``, from the shell standing in the root.

        One subshell checks the temporary file is in the root it stands in (an SFTP write through a
        root replaced meanwhile went elsewhere), enters the file's folder one name at a time,
        making the missing ones (:func:`~remote_ops.enter_folder`), checks the host's copy is as
        the plan saw it (nanoseconds and ctime, or the hash, where known) and renames onto
        ``./NAME`` there: nothing is written through a folder swapped for a symlink at any moment.
        """
        q = remote_ops.q
        folder, _, name = path.rpartition("/")
        steps = [b"{ [ -f " + q(temp) + b" ] && ! [ -L " + q(temp) + b" ] || exit 4; }"]
        if folder:
            steps.append(b"{ " + remote_ops.enter_folder(folder, create=True) + b" || exit 3; }")
        steps.append(b"{ " + stat_check_line(name, self.expected.get(path), q, self.expected_hash.get(path)) +
                     b" || exit 5; }")
        steps.append(b'mv -f -- "$R"/' + q(temp) + b" " + q("./" + name))
        status = self._check_shell().status(b"( " + b" && ".join(steps) + b" )")
        where = f"{self.conn.entry.name}:{self.remote_root}/{path}"
        if status == 0:
            self.known_dirs.update(parents(path))
            return
        if status is None:
            if not self.conn.alive:
                raise EOFError("the host closed the connection")
            raise remote_ops.root_moved(self.conn, self.remote_root)  # the shell could not stay in the root
        if status == 3:
            raise WriteRefused(f"the remote folder {folder} is a symlink or was replaced on the host after the "
                               "scan; nothing was written through it", where,
                               "Look at what changed on the host, then plan again.")
        if status == 4:
            raise WriteRefused("the remote root is not the folder the plan saw (replaced on the host after the "
                               "scan); the file was not moved into place", where,
                               "Look at what changed on the host, then plan again.")
        if status == 5:
            expected = self.expected.get(path)
            problem = "it appeared after the plan was made" if expected is None else \
                HASH_CHANGED if expected.ctime_ns is None and self.expected_hash.get(path) else \
                "it changed after the plan was made"
            raise Changed(f"The host's copy of {path}: {problem}; left as it is", where, "Plan again and choose.")
        raise UserError(f"Moving {path} into place failed on {self.conn.entry.name} (exit status {status})", where,
                        "Check the folder's permissions on the host, then run again.")

    def _put(self, item, progress: Progressor) -> Landed:
        sftp = self.conn.sftp()
        temp_rel = root_temp_name(item.path, self.token)
        temp = self._remote(temp_rel)  # in the root: the SFTP write passes no subfolder
        sent = [0]

        def count(n: int) -> None:
            sent[0] += n
            progress.add(n, item.path, size=st.st_size)

        offset, prefix = 0, None
        if 0 < self.partial.get(item.path, 0) <= os.path.getsize(self.local_root / item.path):
            prefix = verified_prefix(self.conn, temp, self.local_root / item.path, self.partial[item.path])
            offset = self.partial[item.path] if prefix is not None else 0
        with open(self.local_root / item.path, "rb") as raw:
            st = os.fstat(raw.fileno())
            raw.seek(offset)
            handle = HashingReader(raw, threaded=st.st_size >= HASH_THREAD, start=prefix)
            mode = safe_mode(st.st_mode)
            if offset:
                sent[0] = offset
                progress.add(offset, item.path, size=st.st_size)  # already on the host
            try:
                sftp_write_atomic(sftp, handle, self._remote(item.path), temp, mode,
                                  (int(st.st_atime), int(st.st_mtime)), on_chunk=count,
                                  stop=lambda: self.stop.is_set() or (self.cancel is not None and self.cancel.cancelled),
                                  on_abort=handle.abandon, offset=offset,
                                  rename=lambda: self._land(item.path, temp_rel))
            except (ShortWrite, OSError) as exc:
                if isinstance(exc, ShortWrite) or (exc.errno is None and self.conn.alive):  # the host refused
                    folder = f"{self.remote_root}/{item.path}".rpartition("/")[0]
                    raise write_failure(self.conn, folder, item.path, exc, st.st_size) from exc
                raise
        progress.add(0, item.path, finished=True)
        # What was actually sent: a file that grew while it was read has more bytes on the host than
        # its size at open; the local side is recorded as it was when opened (its growth is a local change).
        remote = FileInfo(sent[0], int(st.st_mtime), mode)
        return Landed(item.path, FileInfo(st.st_size, int(st.st_mtime), mode, st.st_mtime_ns, st.st_ctime_ns), remote,
                      handle.hexdigest())
