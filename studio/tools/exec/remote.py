"""Commands on an SSH host, with the same contract as locally.

The command goes to the user's login shell as ``echo $$; <setup> && cd <dir> && exec <argv>``:
the first stdout line is the shell's PID, which ``exec`` hands on to the command. sshd starts a
no-pty session with ``setsid()``, so that PID is also the process group of the command and of
everything it starts; cancel kills that group through a second channel (closing an exec channel
without a pty does not stop the remote process).
"""

from __future__ import annotations

import select
import shlex
from collections.abc import Callable, Generator

from studio.errors import RemoteError, UserError
from studio.jobs import CancelToken
from studio.tools.deploy.connection import AskSecret, SshConnection, connect_remembering
from studio.tools.deploy.hosts import HostEntry
from studio.tools.deploy.known_hosts import KnownHosts
from studio.tools.exec.executor import Executor, LineSplitter, OutputLine, shell_command

_KILL = ("kill -TERM -- -{pid} 2>/dev/null || exit 0; i=0; "
         "while kill -0 -- -{pid} 2>/dev/null && [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done; "
         "kill -KILL -- -{pid} 2>/dev/null; exit 0")


def remote_command(argv: list[str], cwd: str | None = None, env_setup: str | None = None) -> str:
    """The full string sent to the remote shell (PID line first, the command ``exec``-ed last)."""
    inner = shell_command(argv, cwd, env_setup)
    head, _, last = inner.rpartition(" && ")
    return f"echo $$; {head} && exec {last}" if head else f"echo $$; exec {last}"


class SshExecutor(Executor):
    """Runs commands on one host entry over one SSH connection (opened on first use)."""

    def __init__(self, entry: HostEntry, known_hosts: KnownHosts | None = None,
                 ask_secret: AskSecret | None = None, connection: SshConnection | None = None,
                 resolve_host: Callable[[str], HostEntry] | None = None, timeout: float = 10.0):
        self.entry = entry
        self.name = entry.name
        self.toolkit = entry.toolkit
        self._known_hosts = known_hosts
        self._ask_secret = ask_secret
        self._resolve_host = resolve_host
        self._timeout = timeout
        self._conn = connection
        self._owns = connection is None

    @property
    def connection(self) -> SshConnection:
        """The open connection (connected on first use; host key verified, then authenticated)."""
        if self._conn is None or not self._conn.alive:
            self._conn = connect_remembering(self.entry, self._known_hosts, self._ask_secret, self._timeout,
                                 self._resolve_host)
            self._owns = True
        return self._conn

    def run(self, argv: list[str], cwd: str | None = None, env_setup: str | None = None,
            cancel: CancelToken | None = None) -> Generator[OutputLine, None, int]:
        command = remote_command(argv, cwd, env_setup)
        conn = self.connection
        try:
            channel = conn.transport.open_session(timeout=self._timeout)
            channel.exec_command(command)
        except Exception as exc:  # SSHException, EOFError, socket errors: the link is gone
            raise self._lost(argv, exc) from exc
        channel.shutdown_write()
        out, err = LineSplitter(), LineSplitter()
        pid: int | None = None
        finished = False
        try:
            while True:
                if cancel is not None:
                    cancel.raise_if_cancelled()
                got = False
                if channel.recv_ready():
                    got = True
                    for line in out.feed(channel.recv(65536)):
                        if pid is None:  # the first line is the PID our prefix printed
                            pid = int(line) if line.isdigit() else -1
                            continue
                        yield OutputLine(None, line, "stdout")
                if channel.recv_stderr_ready():
                    got = True
                    for line in err.feed(channel.recv_stderr(65536)):
                        yield OutputLine(None, line, "stderr")
                if got:
                    continue
                if channel.eof_received and channel.exit_status_ready() or channel.closed:
                    break
                if not conn.transport.is_active():
                    break
                select.select([channel], [], [], 0.02)  # wakes on stdout; stderr within 20 ms
            for line in out.flush():
                yield OutputLine(None, line, "stdout")
            for line in err.flush():
                yield OutputLine(None, line, "stderr")
            # paramiko marks the status "ready" when the transport dies too; -1 then means lost.
            status = channel.exit_status if channel.status_event.is_set() else -1
            if status == -1 and not conn.transport.is_active():
                raise self._lost(argv, None)
            finished = True
            return status
        finally:
            if not finished and pid and pid > 0 and conn.alive:
                self._kill(pid)
            channel.close()

    def _kill(self, pid: int) -> None:
        try:
            self.connection.run(_KILL.format(pid=pid), timeout=5)
        except Exception:  # the connection died too: sshd hangs up the session itself
            pass

    def _lost(self, argv: list[str], exc: BaseException | None) -> RemoteError:
        detail = f": {exc}" if exc else ""
        return RemoteError(f"The connection to {self.entry.address} was lost while running "
                           f"{shlex.join(argv)[:200]}{detail}\n  fix:   Check the network and the host, "
                           f"then run it again (`studio ssh test {self.entry.name}` checks the link).")

    def realpath(self, path: str) -> str:
        # realpath(1) is in coreutils; readlink -f covers busybox systems without it.
        quoted = shlex.quote(path)
        script = f"realpath -- {quoted} 2>/dev/null || readlink -f -- {quoted}"
        status, out, err = self.connection.run(script, timeout=self._timeout)
        resolved = out.decode("utf-8", "replace").strip()
        if status != 0 or not resolved:
            raise UserError(f"Cannot resolve the remote path {path!r}: {err.decode('utf-8', 'replace').strip()}",
                            f"{self.entry.name}:{path}", "Check that the folder exists on the host.")
        return resolved

    def close(self) -> None:
        if self._conn is not None and self._owns:
            self._conn.close()
        self._conn = None
