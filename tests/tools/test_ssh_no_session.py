"""Hosts that answer on TCP but give no SSH session, against real sshds: one whose listener is frozen
(connections wait in its backlog, no banner ever comes) and one that shares no key exchange with
paramiko. The connection ends in a NotConnected message, and the checklist says that the host key
and the login were not checked rather than calling them fine."""

from __future__ import annotations

import os
import signal

import pytest

from studio.core.jobs import run_job
from studio.remote.connection import NotConnected, connect, fetch_host_key
from studio.remote.hosts import HostEntry
from studio.remote.known_hosts import KnownHosts
from studio.targets.probe import FAILED, SKIPPED, probe
from studio.targets.ssh import SshTarget


def _sshd(tmp_path, extra=()):
    from sshd_server import sshd_missing_reason, start_sshd

    if sshd_missing_reason():
        pytest.skip(sshd_missing_reason())
    return start_sshd(tmp_path / "sshd", list(extra))


@pytest.fixture
def frozen_sshd(tmp_path):
    """A real sshd stopped with SIGSTOP: the kernel still completes TCP handshakes, sshd says nothing."""
    server = _sshd(tmp_path)
    os.kill(server.proc.pid, signal.SIGSTOP)
    yield server
    os.kill(server.proc.pid, signal.SIGCONT)
    server.stop()


@pytest.fixture
def foreign_kex_sshd(tmp_path):
    """A real sshd offering only a key exchange paramiko does not implement."""
    server = _sshd(tmp_path, ["KexAlgorithms sntrup761x25519-sha512@openssh.com"])
    yield server
    server.stop()


def _entry(server) -> tuple[HostEntry, KnownHosts]:
    entry = HostEntry(name="box", host=server.host, port=server.port, user=server.user,
                      key_file=str(server.client_key))
    return entry, KnownHosts(read_only=[server.known_hosts], own=server.root / "own")


def test_a_frozen_sshd_is_no_session_within_the_timeout(frozen_sshd):
    entry, known = _entry(frozen_sshd)
    with pytest.raises(NotConnected, match="did not complete the SSH handshake within 2 s"):
        connect(entry, known, timeout=2, keepalive=0)
    with pytest.raises(NotConnected, match="within 2 s"):
        fetch_host_key(entry, timeout=2)


def test_checklist_of_a_frozen_sshd_checks_nothing_past_reach(frozen_sshd):
    entry, known = _entry(frozen_sshd)
    result = run_job(probe(SshTarget(entry, known, timeout=2), timeout=2))
    reach = result.item("reach")
    assert reach.status == FAILED and "answered" in reach.detail and "SSH handshake" in reach.detail
    for item in result.items[1:]:
        assert item.status == SKIPPED and item.detail == "not checked: no connection", item
    assert not result


def test_checklist_of_a_foreign_kex_sshd_does_not_claim_the_key_matched(foreign_kex_sshd, capfd):
    entry, known = _entry(foreign_kex_sshd)
    result = run_job(probe(SshTarget(entry, known, timeout=5), timeout=5))
    assert result.item("reach").status == FAILED and "share no SSH algorithm" in result.item("reach").detail
    assert "KexAlgorithms" in result.item("reach").fix
    assert result.item("hostkey").status == SKIPPED and result.item("hostkey").detail == "not checked: no connection"
    assert result.item("auth").status == SKIPPED
    assert "Traceback" not in capfd.readouterr().err  # paramiko's thread logs its own traceback otherwise
