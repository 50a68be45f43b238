"""A real OpenSSH sshd on 127.0.0.1 for tests: temporary host key, client key and known_hosts.

Used by the ``sshd`` session fixture in conftest.py. sshd has no "port 0", so a free port is
picked and the start retried if another process takes it first.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"  # sshd re-executes itself: it needs an absolute path


def sshd_missing_reason() -> str | None:
    """Why no sshd can be started here, or None."""
    if not os.path.exists(SSHD):
        return "openssh-server is not installed (apt-get install openssh-server)"
    if not shutil.which("ssh-keygen"):
        return "ssh-keygen is not installed (apt-get install openssh-client)"
    return None


def require_sshd() -> None:
    """Skip the calling test where no sshd can be started, or fail it where one is required.

    On CI (``CI`` set) a missing sshd means ``.ci/run`` could not install openssh-server: the
    tests against a real server must fail loudly then, never vanish as skips.
    """
    reason = sshd_missing_reason()
    if reason is None:
        return
    import pytest
    from shared_fixtures import fixtures_required

    if fixtures_required():
        pytest.fail(f"{reason} — required on CI (CI is set): the SSH tests cannot run without it",
                    pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (children first listed before theirs), read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:  # ended meanwhile
            continue
        parent = int(stat[stat.rindex(b")") + 2:].split()[1])  # after "pid (comm) state"
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _become_subreaper() -> None:
    """In the sshd child before exec: orphaned session processes are re-parented to the listener
    (not to init), so :meth:`Sshd.kill_sessions` and :meth:`Sshd.stop` still find and end them."""
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _wait_banner(port: int, proc: subprocess.Popen, deadline_s: float = 10.0) -> bool:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                if sock.recv(64).startswith(b"SSH-2.0-"):
                    return True
        except OSError:
            time.sleep(0.02)
    return False


@dataclass
class Sshd:
    """A running sshd and what a client needs to reach it."""

    root: Path
    host: str
    port: int
    user: str
    client_key: Path
    known_hosts: Path          # a known_hosts file holding this server's key
    host_key_pub: Path
    proc: subprocess.Popen | None = field(default=None, repr=False)

    def session_pids(self) -> list[int]:
        """Every process of the open connections: each session's sshd, its SFTP server, the commands
        it runs and what they started (orphans too: the listener is their subreaper, see start_sshd)."""
        if self.proc is None:
            return []
        return _descendants(self.proc.pid)

    def kill_sessions(self) -> None:
        """Drop every open connection (the listener stays): simulates a lost connection.

        Every process of every session is killed, not just the session's sshd: an SFTP server or a
        command left running would keep its channel's work going (a transfer in flight would not
        really be cut) and would outlive the test. Stopped processes die by SIGKILL too.
        """
        for _ in range(20):  # a session may fork while it is being killed: repeat until none is left
            pids = self.session_pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)  # the listener reaps them (SIGCHLD)
        raise RuntimeError(f"sshd sessions survived SIGKILL: {self.session_pids()}")

    def log(self) -> str:
        return (self.root / "sshd.log").read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        """Kill every session's processes, then the listener: nothing of this server outlives it."""
        if self.proc is None:
            return
        self.kill_sessions()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def _set_env(extra_config) -> str:
    """One SetEnv line with the variables of ``extra_config``'s SetEnv lines (none: an empty string)."""
    pairs = [pair for line in extra_config if line.startswith("SetEnv ") for pair in line.split()[1:]]
    return "SetEnv " + " ".join(pairs) if pairs else ""


def _pyenv_lock() -> Path:
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    return root / "shims" / ".pyenv-shim"


def remove_stale_pyenv_lock(age_s: float = 5.0) -> bool:
    """Remove a pyenv rehash lock older than ``age_s``; True if removed.

    SSH sessions run the user's shell start-up files; a pyenv there rehashes on every command, and
    a login killed mid-rehash (the connection-cut tests kill whole sessions) or frozen mid-rehash
    (the frozen-host tests stop them) holds its lock forever: every later command then waits 60 s
    for it and prints pyenv's error into stderr. A live rehash takes well under a second, so an
    older lock is an orphan. (Its owner cannot be told from the waiting rehash processes: they run
    the same script, so "a rehash is running" is no sign the lock is held.)
    """
    lock = _pyenv_lock()
    try:
        if time.time() - lock.stat().st_mtime <= age_s:
            return False
        lock.unlink()
        return True
    except OSError:
        return False


class PyenvLockJanitor:
    """A background thread that removes orphaned pyenv rehash locks while tests run (see above).

    Before each test is not enough: a test that cuts or freezes a session and then logs in again
    waits on the lock its own cut left.
    """

    def __init__(self, interval_s: float = 0.2):
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pyenv-lock-janitor", daemon=True)

    def __enter__(self) -> "PyenvLockJanitor":
        if _pyenv_lock().parent.is_dir():
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            remove_stale_pyenv_lock()


def start_sshd(root: Path, extra_config: list[str] = ()) -> Sshd:
    """Generate keys under ``root`` and start sshd; raises RuntimeError with its log on failure."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("host_ed25519", "client_ed25519"):
        if not (root / name).exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(root / name)],
                           check=True)
    (root / "authorized_keys").write_text((root / "client_ed25519.pub").read_text())
    os.chmod(root / "authorized_keys", 0o600)
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation folder, root only
    for _ in range(5):
        port = _free_port()
        (root / "sshd_config").write_text("\n".join([
            f"Port {port}", "ListenAddress 127.0.0.1",
            f"HostKey {root / 'host_ed25519'}", f"PidFile {root / 'sshd.pid'}",
            f"AuthorizedKeysFile {root / 'authorized_keys'}",
            "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "UsePAM no", "StrictModes no", "PermitRootLogin prohibit-password",
            "Subsystem sftp internal-sftp", "AcceptEnv LANG LC_*", "MaxSessions 32", "MaxStartups 64",
            "LogLevel VERBOSE", _set_env(extra_config), *(c for c in extra_config if not c.startswith("SetEnv ")),
            ""]))
        log = open(root / "sshd.log", "ab")
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(root / "sshd_config")], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_become_subreaper if sys.platform == "linux" else None)
        log.close()
        if _wait_banner(port, proc):
            break
        proc.kill()
        proc.wait()
    else:
        raise RuntimeError("sshd did not start:\n" + (root / "sshd.log").read_text(errors="replace")[-2000:])
    key_type, key_b64 = (root / "host_ed25519.pub").read_text().split()[:2]
    (root / "known_hosts").write_text(f"[127.0.0.1]:{port} {key_type} {key_b64}\n")
    return Sshd(root, "127.0.0.1", port, getpass.getuser(), root / "client_ed25519", root / "known_hosts",
                root / "host_ed25519.pub", proc)


@contextmanager
def running_sshd(root: Path, extra_config: list[str] = ()):
    """A started sshd under ``root`` for a ``with`` block, stopped after it; skips the test where
    sshd is missing (a failure on CI, see :func:`require_sshd`)."""
    require_sshd()
    server = start_sshd(root, list(extra_config))
    try:
        yield server
    finally:
        server.stop()
