"""A host that stops answering mid-transfer (its sshd stopped, not killed) must not hang a job.

Each test starts its own sshd, moves a file big enough to be mid-way when the host is frozen
with SIGSTOP, and checks the job ends within seconds: by Cancel (the connection is closed, so
blocked reads return) or, with nobody there to cancel, by the keepalive watchdog.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from deploy_helpers import make_deployment, write_tree

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, run_job


def _connector(server, **keepalive):
    from studio.remote.connection import connect
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts

    entry = HostEntry(name="frozen", host=server.host, port=server.port, user=server.user,
                      key_file=str(server.client_key))
    known = KnownHosts(read_only=[server.known_hosts], own=server.root / "own_known_hosts")
    return lambda: connect(entry, known, **keepalive)


def _freeze_when_moving(monkeypatch, freeze, then=None) -> list:
    from studio.targets.transfer.common import Progressor

    original, done = Progressor.add, []

    def add(self, nbytes, path=None, finished=False, size=None):
        original(self, nbytes, path, finished, size)
        if nbytes and not done and self.done_bytes > 2 * 1024 * 1024:
            done.append(time.monotonic())
            freeze()
            if then is not None:
                then()
    monkeypatch.setattr(Progressor, "add", add)
    return done


@pytest.mark.parametrize("direction", ["upload", "download"])
def test_cancel_gets_out_of_a_transfer_to_a_frozen_host(frozen_host, tmp_path, monkeypatch, direction):
    from studio.tools.deploy.sync import run_job as sync_job

    server, freeze = frozen_host
    deployment = make_deployment(tmp_path)
    big = {"big.bin": os.urandom(64 * 1024 * 1024)}
    write_tree(deployment.local_root if direction == "upload" else tmp_path / "remote", big)
    token = CancelToken()
    frozen = _freeze_when_moving(monkeypatch, freeze,
                                 then=lambda: threading.Timer(0.5, token.cancel).start())
    started = time.monotonic()
    with pytest.raises(Cancelled):
        run_job(sync_job(deployment, direction, _connector(server), cancel=token), token)
    assert frozen, "the host was never frozen mid-transfer"
    # Cancelled 0.5 s after the freeze: out within seconds, not the minutes a frozen TCP connection
    # takes (the limit is loose for a loaded machine; the time itself is no figure of this test).
    assert time.monotonic() - frozen[0] < 20
    assert time.monotonic() - started < 60


def test_a_silent_host_is_given_up_by_the_keepalive_watchdog(frozen_host, tmp_path, monkeypatch):
    from studio.tools.deploy.sync import run_job as sync_job

    server, freeze = frozen_host
    deployment = make_deployment(tmp_path)
    write_tree(deployment.local_root, {"big.bin": os.urandom(64 * 1024 * 1024)})
    frozen = _freeze_when_moving(monkeypatch, freeze)
    with pytest.raises(UserError) as caught:
        run_job(sync_job(deployment, "upload", _connector(server, keepalive=0.5, dead_after=2)))
    assert frozen and time.monotonic() - frozen[0] < 30  # dead after 2 s of silence, not never
    assert "was lost: the host stopped answering" in caught.value.what
    assert "Run the same command again" in caught.value.fix
    assert not (Path(deployment.remote) / "big.bin").exists()  # nothing half-written in place
