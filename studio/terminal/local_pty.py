"""A shell on this computer in a pseudo-terminal, shaped like an SSH shell channel.

:class:`LocalShell` stands in for an SSH connection in :class:`~studio.terminal.shell.ShellSession`
(``open_shell``, ``alive``, ``close``), so the Terminal panel runs a local shell with the same
reader thread, emulation and painting as a remote one. POSIX only (pty, termios).
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import termios


def _set_size(fd: int, columns: int, lines: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))


class _Exited:
    """``status_event`` look-alike: set once the shell has exited."""

    def __init__(self, proc: subprocess.Popen):
        self._proc = proc

    def is_set(self) -> bool:
        return self._proc.poll() is not None


class PtyChannel:
    """The parts of paramiko's Channel that ShellSession uses, over a local pty."""

    def __init__(self, argv: list[str], term: str, columns: int, lines: int):
        import pty

        master, slave = pty.openpty()
        _set_size(slave, columns, lines)
        env = {**os.environ, "TERM": term, "COLUMNS": str(columns), "LINES": str(lines)}

        def controlling_tty() -> None:  # runs in the child: a new session whose terminal is the pty
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        try:
            self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                         cwd=os.path.expanduser("~"), preexec_fn=controlling_tty, close_fds=True)
        finally:
            os.close(slave)
        self._fd = master
        self.closed = False
        self.eof_received = False
        self.status_event = _Exited(self.proc)

    def fileno(self) -> int:
        return self._fd

    def recv_ready(self) -> bool:
        return not self.closed and bool(select.select([self._fd], [], [], 0)[0])

    def recv(self, size: int) -> bytes:
        try:
            data = os.read(self._fd, size)
        except OSError:  # EIO: the shell and everything on the pty have exited
            data = b""
        if not data:
            self.eof_received = True
        return data

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def resize_pty(self, width: int, height: int) -> None:
        _set_size(self._fd, width, height)  # the kernel sends SIGWINCH to the foreground job

    def exit_status_ready(self) -> bool:
        return self.proc.poll() is not None

    @property
    def exit_status(self) -> int:
        code = self.proc.poll()
        return -1 if code is None else code

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.proc.poll() is None:
            for sig in (signal.SIGHUP, signal.SIGKILL):
                try:
                    os.killpg(self.proc.pid, sig)
                    self.proc.wait(timeout=1)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
        try:
            os.close(self._fd)
        except OSError:
            pass


class LocalShell:
    """The user's login shell on this computer (``$SHELL``, else /bin/sh)."""

    def __init__(self, argv: list[str] | None = None):
        self.argv = argv or [os.environ.get("SHELL") or "/bin/sh", "-i"]
        self._channel: PtyChannel | None = None
        self.alive = True   # nothing to lose: a local shell always ends with an exit status

    def open_shell(self, term: str, columns: int, lines: int) -> PtyChannel:
        self._channel = PtyChannel(self.argv, term, columns, lines)
        return self._channel

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
