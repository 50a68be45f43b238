"""Connections against a real sshd: host keys verified before authentication, key auth, commands."""

from __future__ import annotations

import pytest

from studio.core.errors import UserError
from studio.remote.connection import connect, fetch_host_key
from studio.remote.hosts import HostEntry, HostStore
from studio.remote.known_hosts import HostKeyChanged, KnownHosts, UnknownHostKey, fingerprint


def test_key_auth_runs_a_quoted_command(sshd_host):
    entry, known = sshd_host
    with connect(entry, known) as conn:
        status, out, err = conn.run(["printf", "%s|", "a b", "$(id)", "it's"])
        assert status == 0, err
        assert out == b"a b|$(id)|it's|"  # every argument arrived as one word, nothing expanded
        status, _, err = conn.run("echo oops >&2; exit 3")
        assert status == 3 and err == b"oops\n"


def test_unknown_host_is_refused_with_fingerprint_and_trust_records_it(sshd, sshd_host, tmp_path):
    entry, _ = sshd_host
    known = KnownHosts(read_only=[], own=tmp_path / "known_hosts")
    with pytest.raises(UnknownHostKey) as info:
        connect(entry, known)
    key_type, blob = fetch_host_key(entry)
    assert info.value.fingerprint == fingerprint(key_type, blob)
    assert "studio ssh trust testhost" in info.value.fix
    known.trust(entry.host, entry.port, key_type, blob)
    with connect(entry, known) as conn:
        assert conn.run(["true"])[0] == 0


def test_changed_host_key_names_the_line(sshd_host, tmp_path):
    entry, _ = sshd_host
    other = tmp_path / "known_hosts"
    other.write_text("# comment\n"
                     f"[{entry.host}]:{entry.port} ssh-ed25519 "
                     "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    with pytest.raises(HostKeyChanged) as info:
        connect(entry, KnownHosts(read_only=[other], own=tmp_path / "own"))
    assert info.value.line == 2 and f"{other}:2" in info.value.format()


def test_hashed_known_hosts_line_is_understood(sshd, sshd_host, tmp_path):
    import subprocess

    entry, _ = sshd_host
    hashed = tmp_path / "hashed"
    hashed.write_text(sshd.known_hosts.read_text())
    subprocess.run(["ssh-keygen", "-H", "-f", str(hashed)], check=True, capture_output=True)
    assert hashed.read_text().startswith("|1|")
    with connect(entry, KnownHosts(read_only=[hashed], own=tmp_path / "own")) as conn:
        assert conn.alive


def test_wrong_key_and_closed_port_say_what_to_do(sshd, sshd_host, tmp_path):
    import subprocess

    entry, known = sshd_host
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    entry.key_file = str(stranger)
    with pytest.raises(UserError, match="refused the key authentication"):
        connect(entry, known)
    closed = HostEntry(name="closed", host="127.0.0.1", port=1, user="x")
    with pytest.raises(UserError, match="Cannot connect"):
        connect(closed, known, timeout=2)


def test_sftp_client_per_thread(sshd_host, tmp_path):
    import threading

    entry, known = sshd_host
    with connect(entry, known) as conn:
        clients = []
        thread = threading.Thread(target=lambda: clients.append(conn.sftp()))
        thread.start()
        thread.join()
        assert conn.sftp() is conn.sftp() and conn.sftp() is not clients[0]
        (tmp_path / "x.txt").write_text("hello")
        assert conn.sftp().stat(str(tmp_path / "x.txt")).st_size == 5


def test_host_store_round_trip_keeps_no_secret(tmp_path):
    store = HostStore(tmp_path / "hosts.toml")
    store.put(HostEntry(name="atlas", host="10.0.0.5", user="HwHiAiUser", auth="password"))
    store.put(HostEntry(name="edge", host="edge.local", port=2222, key_file="~/.ssh/id_ed25519",
                        toolkit="/usr/local/Ascend/ascend-toolkit/latest"))
    store.save()
    again = HostStore(tmp_path / "hosts.toml")
    assert again.get("edge").port == 2222 and again.get("atlas").auth == "password"
    assert "password =" not in (tmp_path / "hosts.toml").read_text()
    with pytest.raises(UserError, match="studio ssh add nope"):
        again.get("nope")
    with pytest.raises(UserError, match="out of range"):
        HostEntry(name="bad", host="h", port=70000)


def test_connections_prefer_aes_gcm(sshd_host):
    entry, known = sshd_host
    with connect(entry, known) as conn:
        assert conn.transport.remote_cipher == "aes128-gcm@openssh.com"
        assert conn.run(["true"])[0] == 0
