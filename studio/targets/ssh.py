"""Commands on an SSH host, with the same contract as locally.

The command goes to the user's login shell as ``echo $$; <setup> && cd <dir> && exec <argv>``:
the first stdout line is the shell's PID, which ``exec`` hands on to the command. sshd starts a
no-pty session with ``setsid()``, so that PID is also the process group of the command and of
everything it starts; cancel kills that group through a second channel (closing an exec channel
without a pty does not stop the remote process).
"""

from __future__ import annotations

import select
import time
import shlex
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import PurePosixPath

from pathlib import Path

from studio.core.errors import RemoteError, UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.printable import printable
from studio.remote.connection import SshConnection, is_link_error
from studio.remote.context import HostContext
from studio.remote.hosts import HostEntry
from studio.remote.known_hosts import KnownHosts
from studio.targets.base import LineSplitter, OutputLine, Target, shell_command
from studio.targets.files import (RESUME_MIN, ShortWrite, resume_token, sftp_read_atomic, sftp_write_atomic, temp_name,
                                  verified_prefix, write_failure)

_KILL = ("kill -TERM -- -{pid} 2>/dev/null || exit 0; i=0; "
         "while kill -0 -- -{pid} 2>/dev/null && [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done; "
         "kill -KILL -- -{pid} 2>/dev/null; exit 0")


def remote_command(argv: list[str], cwd: str | None = None, env_setup: str | None = None) -> str:
    """The full string sent to the remote shell (PID line first, the command ``exec``-ed last)."""
    # The exec goes in front of the command itself, not after the last " && " of the whole string:
    # an argument may hold " && " inside its quotes (``sh -c '[ a ] && [ b ]'``).
    return "echo $$; " + shell_command(argv, cwd, env_setup, exec_last=True)


class SshTarget(Target):
    """Runs commands and keeps files on one SSH host, over the context's pooled connection.

    ``context`` (a :class:`~studio.remote.context.HostContext`) supplies the connection, host
    keys and secrets; a KnownHosts may be given instead for a private context (tests, scripts),
    which :meth:`close` then closes. ``connection`` pins an already open connection.
    """

    is_local = False

    def __init__(self, entry: HostEntry, context: HostContext | KnownHosts | None = None,
                 connection: SshConnection | None = None, timeout: float = 10.0):
        self.entry = entry
        self.name = entry.name
        self.toolkit = entry.toolkit
        self._own_context = not isinstance(context, HostContext)
        if self._own_context:
            context = HostContext(known_hosts=context, timeout=timeout)
        self.context = context
        self._timeout = timeout
        self._conn = connection

    @property
    def key(self) -> str:
        return f"host:{self.entry.name}"

    @property
    def where(self) -> str:
        return self.entry.name

    @property
    def connection(self) -> SshConnection:
        """The open connection (connected on first use; host key verified, then authenticated)."""
        if self._conn is None or not self._conn.alive:
            self._conn = self.context.connection(self.entry)
        return self._conn

    def run(self, argv: list[str], cwd: str | None = None, env_setup: str | None = None,
            cancel: CancelToken | None = None) -> Generator[OutputLine, None, int]:
        conn = self.connection  # once: a lost link is not dialled again behind the command's back
        channel = self._exec(conn, argv, cwd, env_setup)
        channel.shutdown_write()
        out, err = LineSplitter(), LineSplitter()
        pid: int | None = None
        finished = False
        try:
            for kind, data in self._pump(conn, channel, cancel):
                # The host's output is shown on terminals and in messages: escape sequences and
                # control characters are dropped as it arrives (see studio.core.printable).
                if kind == "stderr":
                    for line in err.feed(data):
                        yield OutputLine(None, printable(line), "stderr")
                    continue
                for line in out.feed(data):
                    if pid is None:  # the first line is the PID our prefix printed
                        pid = int(line) if line.isdigit() else -1
                        continue
                    yield OutputLine(None, printable(line), "stdout")
            for line in out.flush():
                yield OutputLine(None, printable(line), "stdout")
            for line in err.flush():
                yield OutputLine(None, printable(line), "stderr")
            status = self._exit_status(conn, channel, argv)
            finished = True
            return status
        finally:
            if not finished and pid is None and conn.alive:
                pid = self._late_pid(channel, out)  # cancelled before the shell printed its PID
            self._end(conn, channel, finished, pid)

    @staticmethod
    def _late_pid(channel, splitter, wait: float = 3.0) -> int | None:
        """The PID line of a command cancelled right after it started (a slow login shell)."""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and not channel.closed:
            if channel.recv_ready():
                lines = splitter.feed(channel.recv(65536))
                if lines:
                    return int(lines[0]) if lines[0].isdigit() else None
            else:
                select.select([channel], [], [], 0.05)
        return None

    def pipe(self, argv: list[str], stdin, stdout, stderr, cwd: str | None = None, env_setup: str | None = None,
             cancel: CancelToken | None = None) -> int:
        """Run ``argv`` with its streams as bytes, unchanged: ``stdin`` (a binary file or None) is
        forwarded until its end, output is written to the binary files ``stdout``/``stderr`` as it
        comes (no decoding, no line splitting, no added newline). Returns the exit status; cancel
        or Ctrl-C kills the remote process group (``studio ssh run``)."""
        import threading

        conn = self.connection
        channel = self._exec(conn, argv, cwd, env_setup)

        def feed() -> None:
            try:
                if stdin is not None:
                    while chunk := (stdin.read1(65536) if hasattr(stdin, "read1") else stdin.read(65536)):
                        channel.sendall(chunk)
                channel.shutdown_write()
            except Exception:  # the command ended (or the link died) before reading all its input
                pass

        threading.Thread(target=feed, name="ssh-run-stdin", daemon=True).start()
        head, pid, finished = b"", None, False
        try:
            for kind, data in self._pump(conn, channel, cancel):
                if kind == "stderr":
                    stderr.write(data)
                    stderr.flush()
                    continue
                if pid is None:  # the first line is the PID our prefix printed; the rest is the command's
                    head += data
                    if b"\n" not in head:
                        continue
                    line, _, data = head.partition(b"\n")
                    pid = int(line) if line.strip().isdigit() else -1
                if data:
                    stdout.write(data)
                    stdout.flush()
            status = self._exit_status(conn, channel, argv)
            finished = True
            return status
        finally:
            self._end(conn, channel, finished, pid)

    def _exec(self, conn: SshConnection, argv: list[str], cwd: str | None, env_setup: str | None):
        """A session channel running ``argv`` behind the PID prefix (a lost link: RemoteError)."""
        command = remote_command(argv, cwd, env_setup)
        try:
            channel = conn.transport.open_session(timeout=self._timeout)
            # Arguments that are not UTF-8 (surrogate escapes from the command line) go as their bytes.
            channel.exec_command(command.encode("utf-8", "surrogateescape"))
        except Exception as exc:  # SSHException, EOFError, socket errors: the link is gone
            raise self._lost(f"running {shlex.join(argv)[:200]}", exc) from exc
        return channel

    @staticmethod
    def _pump(conn: SshConnection, channel, cancel: CancelToken | None) -> Generator[tuple[str, bytes], None, None]:
        """The channel's output as ("stdout" | "stderr", bytes) chunks until the command ends or
        the link goes; the cancel token is checked between chunks."""
        transport = conn.transport
        while True:
            if cancel is not None:
                cancel.raise_if_cancelled()
            got = False
            if channel.recv_ready():
                got = True
                yield "stdout", channel.recv(65536)
            if channel.recv_stderr_ready():
                got = True
                yield "stderr", channel.recv_stderr(65536)
            if got:
                continue
            if channel.eof_received and channel.exit_status_ready() or channel.closed:
                break
            if not transport.is_active():
                break
            select.select([channel], [], [], 0.02)  # wakes on stdout; stderr within 20 ms

    def _exit_status(self, conn: SshConnection, channel, argv: list[str]) -> int:
        """The command's exit status; a RemoteError when the link died under it."""
        # paramiko marks the status "ready" when the transport dies too; -1 then means lost.
        status = channel.exit_status if channel.status_event.is_set() else -1
        if status == -1 and not conn.transport.is_active():
            raise self._lost(f"running {shlex.join(argv)[:200]}", None)
        return status

    def _end(self, conn: SshConnection, channel, finished: bool, pid: int | None) -> None:
        """Close the channel; a command that did not finish (cancel, error) has its group killed."""
        if not finished and pid and pid > 0 and conn.alive:
            self._kill(pid)
        channel.close()

    def _kill(self, pid: int) -> None:
        try:
            self.connection.run(_KILL.format(pid=pid), timeout=5)
        except Exception:  # the connection died too: sshd hangs up the session itself
            pass

    def _lost(self, doing: str, exc: BaseException | None) -> RemoteError:
        detail = str(exc).strip() if exc is not None else ""
        if exc is not None and not detail:
            detail = "the host closed the connection" if isinstance(exc, EOFError) else type(exc).__name__
        return RemoteError(f"The connection to {self.entry.address} was lost while {doing}"
                           f"{': ' + detail if detail else ''}\n  fix:   Check the network and the host, "
                           f"then run it again (`studio ssh test {self.entry.name}` checks the link).")

    def realpath(self, path: str) -> str:
        # realpath(1) is in coreutils; readlink -f covers busybox systems without it.
        quoted = shlex.quote(path)
        script = f"realpath -- {quoted} 2>/dev/null || readlink -f -- {quoted}"
        with self._link(f"resolving {path}"):
            status, out, err = self.connection.run(script, timeout=self._timeout)
        resolved = out.decode("utf-8", "replace").strip()
        if status != 0 or not resolved:
            raise UserError(f"Cannot resolve the remote path {path!r}: {err.decode('utf-8', 'replace').strip()}",
                            f"{self.entry.name}:{path}", "Check that the folder exists on the host.")
        return resolved

    def run_script(self, script: str, timeout: float | None = 60) -> tuple[int, bytes, bytes]:
        with self._link(f"running a check ({script[:60]}...)" if len(script) > 60 else f"running {script}"):
            return self.connection.run(script, timeout=timeout)

    def run_detached(self, script: str) -> None:
        # One exec on the open connection, not waited for: a login shell's round trip would be
        # waited for while the caller already has what it needs.
        with self._link("starting a clean-up"):
            channel = self.connection.transport.open_session(timeout=10)
            channel.exec_command(f"nohup sh -c {shlex.quote(script)} >/dev/null 2>&1 </dev/null &")
            channel.shutdown_write()

    @contextmanager
    def _link(self, doing: str):
        """Around a short exchange with the host: a dropped link is a lost connection, said once."""
        try:
            yield
        except Exception as exc:
            if not isinstance(exc, (UserError, RemoteError)) and is_link_error(exc, self._conn):
                raise self._lost(doing, exc) from exc
            raise

    def work_root(self) -> str:
        # The deployment root when the host has one (work stays with the project), else ~/.studio.
        root = self.entry.extra.get("deploy_root")
        return str(root) if root else "~/.studio"

    def put(self, local: Path, path: str, cancel: CancelToken | None = None, mode: int | None = None
            ) -> Generator[Progress, None, None]:
        local = Path(local)
        size = local.stat().st_size
        yield Progress(0.0, f"uploading {local.name} ({size / 1e6:.1f} MB) to {self.name}")
        folder, _, name = path.rpartition("/")
        # The same temporary name for the same file and path: a copy a cut stopped is resumed.
        token = resume_token(local, path)
        temp = f"{folder}/{temp_name(name, token)}" if folder else temp_name(name, token)
        st = local.stat()
        with self._copying(f"uploading {local.name} to {self.name}:{path}", folder or ".", name, size, cancel), \
                open(local, "rb") as source:
            sftp = self.connection.sftp()
            offset = self._resumable(sftp, temp, local, size)
            source.seek(offset)
            sftp_write_atomic(sftp, source, path, temp, st.st_mode & 0o755 | 0o400 if mode is None else mode,
                              (int(st.st_atime), int(st.st_mtime)), None,
                              lambda: cancel is not None and cancel.cancelled, offset=offset,
                              on_stuck=self.connection.close)
        yield Progress(1.0, f"uploaded {local.name}")

    def _resumable(self, sftp, temp: str, local: Path, size: int) -> int:
        """How many bytes of ``temp`` (left by a cut copy of the same file) can stay: 0 unless they
        are the local file's first bytes."""
        try:
            kept = sftp.stat(temp).st_size or 0
        except FileNotFoundError:
            return 0
        if not RESUME_MIN <= kept <= size:
            return 0
        return kept if verified_prefix(self.connection, temp, local, kept) is not None else 0

    def get(self, path: str, local: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, None]:
        yield Progress(None, f"downloading {PurePosixPath(path).name} to {local}")
        with self._copying(f"downloading {self.name}:{path}", None, PurePosixPath(path).name, 0, cancel):
            conn = self.connection
            sftp_read_atomic(conn.sftp(), path, Path(local), None, lambda: cancel is not None and cancel.cancelled,
                             on_stuck=conn.close)
        if cancel is not None:
            cancel.raise_if_cancelled()
        yield Progress(1.0, f"downloaded {Path(local).name}")

    @contextmanager
    def _copying(self, doing: str, folder: str | None, name: str, size: int, cancel: CancelToken | None):
        """Around one SFTP copy: cancel as :meth:`_cancellable`; a dropped link is a lost connection,
        a write the host refused (into ``folder``) says why — a full disk with where it is."""
        try:
            with self._cancellable(cancel):
                yield
        except (ShortWrite, OSError, EOFError) as exc:
            conn = self._conn
            if conn is None or is_link_error(exc, conn):
                raise self._lost(doing, exc) from exc
            if folder is not None and (isinstance(exc, ShortWrite) or exc.errno is None):
                raise write_failure(conn, folder, name, exc, size) from exc
            if isinstance(exc, OSError) and exc.errno is not None:  # a refusal here or there, by name
                raise UserError(f"{doing[0].upper()}{doing[1:]} failed: {exc.strerror or exc}",
                                exc.filename or f"{self.name}:{folder or name}",
                                "Check that the file exists and the folder may be written, then run again.") from exc
            raise
        except Exception as exc:
            if is_link_error(exc):  # paramiko's SSHException
                raise self._lost(doing, exc) from exc
            raise

    @contextmanager
    def _cancellable(self, cancel: CancelToken | None):
        """Around one SFTP copy: a cancel closes a stuck connection (see :meth:`_close_if_stuck`), and
        the error the copy then raises is reported as the cancel it is."""
        unhook = self._close_if_stuck(cancel)
        try:
            yield
        except Exception:
            if cancel is not None:
                cancel.raise_if_cancelled()
            raise
        finally:
            if unhook is not None:
                unhook()

    def _close_if_stuck(self, cancel: CancelToken | None):
        """On cancel, close the connection unless the copy stopped by itself within a second (a
        read or write blocked on a silent host returns only then). Returns the unhook function."""
        if cancel is None:
            return None
        import threading

        timer = threading.Timer(1.0, self.connection.close)
        timer.daemon = True
        unhook = cancel.on_cancel(timer.start)

        def done() -> None:
            unhook()
            timer.cancel()
        return done

    def exists(self, path: str) -> bool:
        with self._link(f"looking for {path}"):
            try:
                self.connection.sftp().stat(path)
                return True
            except OSError as exc:
                if is_link_error(exc, self._conn):
                    raise
                return False

    def write_bytes(self, path: str, data: bytes) -> None:
        with self._link(f"writing {path}"), self.connection.sftp().open(path, "w") as handle:
            handle.write(data)

    def close(self) -> None:
        """Let go of the connection (a private context's connections are closed)."""
        if self._own_context:
            self.context.close()
        self._conn = None
