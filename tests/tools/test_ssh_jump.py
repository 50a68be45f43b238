"""Jump hosts against real sshds: the documented ``user@host:port`` form, OpenSSH's ``a,b`` chains,
``ssh trust`` through the jump route, and ProxyCommand refused instead of silently dropped."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from studio.core.errors import UserError
from studio.remote.context import HostContext
from studio.remote.hosts import HostEntry, HostStore
from studio.remote.known_hosts import KnownHosts
from studio.targets import SshTarget, collect


@pytest.fixture
def inner(tmp_path):
    """A second sshd standing for a host reachable only through the jump host."""
    from sshd_server import running_sshd

    with running_sshd(tmp_path / "inner") as server:
        yield server


def _unreachable_directly(monkeypatch, port: int) -> None:
    """This computer cannot reach ``port`` itself (as behind a bastion); the jump host's sshd can."""
    real = socket.create_connection

    def create_connection(address, *args, **kwargs):
        if address[1] == port:
            raise ConnectionRefusedError(111, "Connection refused")
        return real(address, *args, **kwargs)
    monkeypatch.setattr(socket, "create_connection", create_connection)


def _context(sshd, inner, tmp_path, proxy_jump: str, extra: list[HostEntry] = ()) -> HostContext:
    store = HostStore(tmp_path / "hosts.toml")
    store.put(HostEntry(name="bastion", host=sshd.host, port=sshd.port, user=sshd.user, key_file=str(sshd.client_key)))
    for entry in extra:
        store.put(entry)
    store.put(HostEntry(name="inner", host=inner.host, port=inner.port, user=inner.user,
                        key_file=str(inner.client_key), proxy_jump=proxy_jump))
    known = KnownHosts(read_only=[sshd.known_hosts, inner.known_hosts], own=tmp_path / "own")
    return HostContext(store=store, known_hosts=known)


@pytest.mark.parametrize("form", ["name", "user@host:port", "chain a,b"])
def test_jump_forms_reach_a_host_this_computer_cannot(sshd, inner, tmp_path, monkeypatch, form):
    _unreachable_directly(monkeypatch, inner.port)
    spec = {"name": "bastion", "user@host:port": f"{sshd.user}@{sshd.host}:{sshd.port}",
            "chain a,b": "bastion,bastion2"}[form]
    second = HostEntry(name="bastion2", host=sshd.host, port=sshd.port, user=sshd.user, key_file=str(sshd.client_key))
    context = _context(sshd, inner, tmp_path, spec, [second])
    if form == "user@host:port":  # a hop written as an address logs in with the default key in ~/.ssh
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        (tmp_path / "home" / ".ssh").mkdir(parents=True)
        (tmp_path / "home" / ".ssh" / "id_ed25519").write_bytes(Path(sshd.client_key).read_bytes())
        monkeypatch.setattr("studio.remote.connection.DEFAULT_KEYS", ("id_ed25519",))
    try:
        target = SshTarget(context.entry("inner"), context)
        status, lines = collect(target.run(["sh", "-c", "echo $SSH_CONNECTION"]))
        assert status == 0 and lines[0].text.split()[-1] == str(inner.port)
        hops = 0
        conn = target.connection
        while conn._jump is not None:
            conn, hops = conn._jump, hops + 1
        assert hops == (2 if form == "chain a,b" else 1)
    finally:
        context.close()


def test_trust_fetches_the_key_through_the_jump_route(sshd, inner, tmp_path, monkeypatch):
    _unreachable_directly(monkeypatch, inner.port)
    context = _context(sshd, inner, tmp_path, "bastion")
    key_type, blob = context.host_key("inner")
    import base64

    assert base64.b64encode(blob).decode() == inner.host_key_pub.read_text().split()[1]


def test_proxy_command_is_refused_not_dropped(tmp_path):
    from studio.remote.ssh_config import SshConfig

    config = tmp_path / "config"
    config.write_text("Host behind\n  HostName 10.0.0.5\n  ProxyCommand ssh -W %h:%p gate\n")
    with pytest.raises(UserError) as caught:
        SshConfig.load(config).entry("behind")
    assert "ProxyCommand" in caught.value.what and "ProxyJump" in caught.value.fix


@pytest.mark.parametrize("setting", ["AllowTcpForwarding no", "DisableForwarding yes"])
def test_a_jump_host_that_forbids_forwarding_is_named_as_the_refuser(inner, tmp_path, setting):
    from sshd_server import start_sshd

    from studio.remote.connection import NotConnected

    strict = start_sshd(tmp_path / "strict", [setting])
    try:
        context = _context(strict, inner, tmp_path, "bastion")
        with pytest.raises(NotConnected) as caught:
            context.connect("inner")
        error = caught.value
        assert "bastion" in error.what and "refused to forward" in error.what
        assert "AllowTcpForwarding" in error.fix and "host name and port" not in error.fix
    finally:
        strict.stop()


def test_jump_hosts_that_lead_back_are_refused_before_connecting(tmp_path):
    store = HostStore(tmp_path / "hosts.toml")
    store.put(HostEntry(name="a", host="10.0.0.1", proxy_jump="b"))
    store.put(HostEntry(name="b", host="10.0.0.2", proxy_jump="a"))
    store.put(HostEntry(name="c", host="10.0.0.3", proxy_jump="b,c"))
    context = HostContext(store=store, known_hosts=KnownHosts(read_only=[], own=tmp_path / "own"), timeout=1)
    for name, route in (("a", "a -> b -> a"), ("c", "c -> c")):
        with pytest.raises(UserError) as caught:
            context.connect(name)
        assert route in caught.value.what and "proxy_jump" in caught.value.fix
        with pytest.raises(UserError, match="lead back"):
            context.host_key(name)


def test_a_jump_hosts_unknown_key_is_not_offered_as_the_targets(sshd, inner, tmp_path, monkeypatch):
    from studio.core.jobs import run_job
    from studio.targets.probe import FAILED, SKIPPED, probe

    _unreachable_directly(monkeypatch, inner.port)
    context = _context(sshd, inner, tmp_path, "bastion")
    context.known_hosts = KnownHosts(read_only=[inner.known_hosts], own=tmp_path / "own2")  # bastion unknown
    result = run_job(probe(SshTarget(context.entry("inner"), context), timeout=5))
    assert result.unknown_key is None  # trusting it would record bastion's key for inner's address
    reach = result.item("reach")
    assert reach.status == FAILED and reach.detail.startswith("Jump host bastion: The host key of")
    assert "studio ssh trust bastion" in reach.fix
    assert result.item("hostkey").status == SKIPPED and result.item("hostkey").detail == "not checked: no connection"
