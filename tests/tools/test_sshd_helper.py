"""The test sshd's connection cut really cuts: every process of a session ends, none outlives the server.

The cut tests elsewhere rely on it: a transfer in flight must stop when the sessions are
killed, and a test must leave no sshd or command process behind (running or stopped).
"""

from __future__ import annotations

import os
import signal
import time

import pytest


def _connect(server):
    from studio.remote.connection import connect
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts

    entry = HostEntry(name="cut", host=server.host, port=server.port, user=server.user,
                      key_file=str(server.client_key))
    return connect(entry, KnownHosts(read_only=[server.known_hosts]), keepalive=0)


def _start_sleep(conn) -> int:
    """A remote `sleep` on its own channel; returns its PID."""
    channel = conn.transport.open_session()
    channel.exec_command("echo $$; exec sleep 300")
    pid = b""
    while not pid.endswith(b"\n"):
        pid += channel.recv(64)
    return int(pid)


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rpartition(")")[2].split()[1])


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rpartition(")")[2].split()[0] == "Z":
                    return True  # a zombie: dead, waiting for its parent
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def test_kill_sessions_ends_every_process_of_the_session(private_sshd):
    server = private_sshd
    conn = _connect(server)
    try:
        conn.sftp().listdir(".")  # an SFTP server process joins the session
        sleeper = _start_sleep(conn)
        session = _parent(sleeper)
        server.kill_sessions()
        assert _gone(session) and _gone(sleeper), "the session's command outlived the cut"
        assert server.session_pids() == []
        with pytest.raises(Exception):  # noqa: B017 - whatever paramiko raises: the channel is gone
            conn.sftp().listdir(".")
    finally:
        conn.close()


def test_stop_ends_stopped_and_orphaned_session_processes(tmp_path):
    from sshd_server import sshd_missing_reason, start_sshd

    if sshd_missing_reason():
        pytest.skip(sshd_missing_reason())
    server = start_sshd(tmp_path / "sshd")
    conn = _connect(server)
    try:
        conn.sftp().listdir(".")
        sleeper = _start_sleep(conn)
        pids = [sleeper, _parent(sleeper)]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)  # a frozen host, as the hang tests make it
    finally:
        conn.close()
        server.stop()
    try:
        assert all(_gone(pid) for pid in pids), "a session process outlived the server"
    finally:
        for pid in pids:  # (only when the assertion failed) end them anyway
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_an_orphaned_pyenv_lock_is_removed_but_a_fresh_one_is_kept(tmp_path, monkeypatch):
    """A rehash lock older than a rehash ever takes is removed, even while other logins wait on it
    (their rehash processes are running: that must not make the orphan look held); a fresh one stays."""
    import subprocess

    from sshd_server import remove_stale_pyenv_lock

    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    (tmp_path / "shims").mkdir()
    lock = tmp_path / "shims" / ".pyenv-shim"
    lock.write_text("")
    assert not remove_stale_pyenv_lock() and lock.exists()  # a rehash just starting
    old = time.time() - 30
    os.utime(lock, (old, old))
    script = tmp_path / "pyenv-rehash"  # a login waiting for the lock
    script.write_text("#!/bin/sh\nsleep 30\n")
    script.chmod(0o755)
    waiter = subprocess.Popen([str(script)])
    try:
        time.sleep(0.3)
        remove_stale_pyenv_lock()  # (the run's janitor thread may have been first)
        assert not lock.exists()
    finally:
        waiter.kill()
        waiter.wait()
