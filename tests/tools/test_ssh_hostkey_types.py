"""Host keys of another type, as OpenSSH treats them: a host known by its RSA key that now shows
only an ed25519 key has a CHANGED identity (refused, never offered for trust); one that still has
its RSA key is verified by it, whatever other key types it also offers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from studio.remote.connection import connect, fetch_host_key
from studio.remote.hosts import HostEntry
from studio.remote.known_hosts import HostKeyChanged, KnownHosts


def _rsa_key(folder: Path, name: str) -> Path:
    path = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(path)], check=True)
    return path


def _known_rsa_only(sshd, pub: Path, file: Path) -> KnownHosts:
    key_type, key_b64 = pub.read_text().split()[:2]
    file.write_text(f"[{sshd.host}]:{sshd.port} {key_type} {key_b64}\n")
    return KnownHosts(read_only=[file], own=file.parent / "own_known_hosts")


def _entry(sshd) -> HostEntry:
    return HostEntry(name="box", host=sshd.host, port=sshd.port, user=sshd.user, key_file=str(sshd.client_key))


def test_only_another_type_known_is_a_changed_key_and_cannot_be_trusted(sshd, tmp_path):
    unrelated = _rsa_key(tmp_path, "old_rsa")  # the key the host had (the server offers ed25519 only)
    known = _known_rsa_only(sshd, Path(f"{unrelated}.pub"), tmp_path / "known_hosts")
    with pytest.raises(HostKeyChanged) as caught:
        connect(_entry(sshd), known)
    assert "ssh-rsa" in str(caught.value) and "ssh-ed25519" in str(caught.value)
    assert not known.own.exists()


def test_studio_ssh_trust_refuses_a_key_of_another_type(sshd, studio_home, tmp_path):
    import os
    import sys

    from studio.remote.hosts import HostStore

    store = HostStore(studio_home / "config" / "hosts.toml")
    store.put(_entry(sshd))
    store.save()
    unrelated = _rsa_key(tmp_path, "old_rsa")
    _known_rsa_only(sshd, Path(f"{unrelated}.pub"), tmp_path / "known_hosts")
    script = Path(sys.executable).parent / "studio"
    done = subprocess.run([str(script), "ssh", "trust", "box", "--yes"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "STUDIO_HOME": str(studio_home),
                               "STUDIO_KNOWN_HOSTS": str(tmp_path / "known_hosts")})
    assert done.returncode == 2 and "CHANGED" in done.stderr, done.stdout + done.stderr
    assert not (studio_home / "config" / "known_hosts").exists()


def test_a_host_with_both_types_is_verified_by_the_known_one(tmp_path):
    from sshd_server import require_sshd, start_sshd

    require_sshd()
    folder = tmp_path / "sshd"
    folder.mkdir()
    rsa = _rsa_key(folder, "host_rsa")
    server = start_sshd(folder, [f"HostKey {rsa}"])
    try:
        known = _known_rsa_only(server, Path(f"{rsa}.pub"), tmp_path / "known_hosts")
        with connect(_entry(server), known) as conn:  # ed25519 would be preferred: the known RSA key is used
            assert conn.transport.get_remote_server_key().get_name() == "ssh-rsa"
        key_type, _ = fetch_host_key(_entry(server), known_hosts=known)
        assert key_type == "ssh-rsa"
    finally:
        server.stop()
