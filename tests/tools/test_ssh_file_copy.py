"""One file copied to a host (a model, the engine's wheel) over a link that is cut half-way: the
error says the connection was lost, and the next copy of the same file sends only the rest."""

from __future__ import annotations

import os
import threading
import time

import pytest
from deploy_helpers import count_reads

from studio.core.errors import RemoteError
from studio.core.jobs import run_job


def _target(server):
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts
    from studio.targets.ssh import SshTarget

    entry = HostEntry(name="box", host=server.host, port=server.port, user=server.user,
                      key_file=str(server.client_key))
    return SshTarget(entry, KnownHosts(read_only=[server.known_hosts]))


def _cut_when(server, folder, at: int) -> threading.Thread:
    """Kill every session of ``server`` once a temporary copy in ``folder`` holds ``at`` bytes."""
    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for part in folder.glob(".*studio-part-*"):
                try:
                    if part.stat().st_size >= at:
                        server.kill_sessions()
                        return
                except FileNotFoundError:
                    pass
            time.sleep(0.002)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("local_change", [False, True])
def test_a_cut_copy_is_a_lost_connection_and_the_next_one_sends_the_rest(private_sshd, tmp_path, monkeypatch,
                                                                         local_change):
    import studio.targets.ssh as ssh

    model = tmp_path / "model.onnx"
    data = os.urandom(96_000_000)
    model.write_bytes(data)
    remote = tmp_path / "work"
    remote.mkdir()
    watcher = _cut_when(private_sshd, remote, 40_000_000)
    with _target(private_sshd) as target, pytest.raises(RemoteError) as info:
        run_job(target.put(model, f"{remote}/model.onnx"))
    watcher.join()
    assert "was lost while uploading model.onnx" in str(info.value) and "run it again" in str(info.value)
    [part] = list(remote.iterdir())
    kept = part.stat().st_size
    if local_change:  # another file under the same name: nothing of the old copy is reused
        data = os.urandom(96_000_000)
        model.write_bytes(data)

    sent = count_reads(monkeypatch, ssh, "sftp_write_atomic", 1)  # the bytes that go to the host
    with _target(private_sshd) as target:
        run_job(target.put(model, f"{remote}/model.onnx"))
    assert (remote / "model.onnx").read_bytes() == data
    assert sum(sent) == (len(data) if local_change else len(data) - kept)
    if not local_change:
        assert [p.name for p in remote.iterdir()] == ["model.onnx"]  # the resumed copy was renamed into place


def test_a_copy_the_host_refuses_is_a_user_error_naming_the_file(sshd_host, tmp_path):
    from studio.core.errors import UserError
    from studio.targets.ssh import SshTarget

    entry, known = sshd_host
    model = tmp_path / "model.onnx"
    model.write_bytes(b"onnx")
    with SshTarget(entry, known) as target, pytest.raises(UserError) as info:
        run_job(target.put(model, f"{tmp_path}/no such folder/model.onnx"))
    assert "Uploading model.onnx" in info.value.what and "failed" in info.value.what
