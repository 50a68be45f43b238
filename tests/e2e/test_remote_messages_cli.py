"""What the CLI says when a host cannot be used, against real sshds: no traceback, and the message
names the real cause — a host that gives no SSH session, a jump host that refuses to forward, jump
hosts that lead back, a remote folder the login may not enter, a NUL in a command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _studio(*args: str, home: Path, cwd: Path = REPO, known_hosts: Path | None = None) -> subprocess.Popen:
    script = Path(sys.executable).parent / "studio"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "studio"]
    env = {**os.environ, "STUDIO_HOME": str(home), "HOME": str(home / "user_home")}
    if known_hosts:
        env["STUDIO_KNOWN_HOSTS"] = str(known_hosts)
    return subprocess.Popen([*command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=cwd, stdin=subprocess.DEVNULL)


def _done(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in out + err, err
    return proc.returncode, out, err


def _sshd(root: Path, extra=()):
    from sshd_server import sshd_missing_reason, start_sshd

    if sshd_missing_reason():
        pytest.skip(sshd_missing_reason())
    return start_sshd(root, list(extra))


def _hosts(home: Path, **hosts) -> None:
    from studio.remote.hosts import HostEntry, HostStore

    store = HostStore(home / "config" / "hosts.toml")
    for name, (server, jump) in hosts.items():
        store.put(HostEntry(name=name, host=server.host, port=server.port, user=server.user,
                            key_file=str(server.client_key), proxy_jump=jump))
    store.save()


def _known(*servers) -> Path:
    path = servers[0].root / "all_known_hosts"
    path.write_text("".join(s.known_hosts.read_text() for s in servers))
    return path


def test_hosts_that_give_no_ssh_session_are_said_so_and_nothing_else_claimed(studio_home, tmp_path):
    foreign = _sshd(tmp_path / "foreign", ["KexAlgorithms sntrup761x25519-sha512@openssh.com"])
    frozen = _sshd(tmp_path / "frozen")
    os.kill(frozen.proc.pid, signal.SIGSTOP)  # TCP still connects (backlog); no banner ever comes
    try:
        _hosts(studio_home, foreign=(foreign, None), frozen=(frozen, None))
        for name in ("foreign", "frozen"):
            assert _done(_studio("deploy", "add", f"d{name}", "--host", name, "--local", str(tmp_path),
                                 "--remote", "/tmp/studio-never-used", home=studio_home))[0] == 0
        known = _known(foreign, frozen)
        runs = {(name, cmd): _studio(*cmd.split(), name if cmd == "ssh test" else f"d{name}", home=studio_home,
                                     known_hosts=known)
                for name in ("foreign", "frozen") for cmd in ("ssh test", "deploy status")}
        results = {key: _done(proc) for key, proc in runs.items()}
    finally:
        os.kill(frozen.proc.pid, signal.SIGCONT)
        frozen.stop()
        foreign.stop()
    for name, cause in (("foreign", "share no SSH algorithm"), ("frozen", "did not complete the SSH handshake")):
        code, out, _ = results[(name, "ssh test")]
        assert code == 1 and cause in out
        lines = {line.split("]")[1].split()[0]: line for line in out.splitlines() if line.strip().startswith("[")}
        assert "FAILED" in lines["Reachable"] and "not checked: no connection" in lines["Host"]
        assert "matches known_hosts" not in out
        code, _, err = results[(name, "deploy status")]
        assert code == 2 and cause in err


@pytest.mark.parametrize("setting", ["AllowTcpForwarding no", "DisableForwarding yes"])
def test_a_jump_host_that_forbids_forwarding_is_named(studio_home, tmp_path, setting):
    bastion = _sshd(tmp_path / "bastion", [setting])
    inner = _sshd(tmp_path / "inner")
    try:
        _hosts(studio_home, bastion=(bastion, None), inner=(inner, "bastion"))
        code, out, _ = _done(_studio("ssh", "test", "inner", home=studio_home, known_hosts=_known(bastion, inner)))
    finally:
        bastion.stop()
        inner.stop()
    assert code == 1 and "bastion" in out and "refused to forward" in out and "AllowTcpForwarding" in out
    assert "host name and port" not in out


def test_jump_hosts_that_lead_back_are_refused(studio_home):
    from studio.remote.hosts import HostEntry, HostStore

    store = HostStore(studio_home / "config" / "hosts.toml")
    store.put(HostEntry(name="a", host="10.255.0.1", proxy_jump="b"))
    store.put(HostEntry(name="b", host="10.255.0.2", proxy_jump="a"))
    store.save()
    for args in (("ssh", "test", "a"), ("ssh", "trust", "a", "--yes"), ("ssh", "run", "a", "--", "true")):
        code, out, err = _done(_studio(*args, home=studio_home))
        assert code in (1, 2) and "a -> b -> a" in out + err


@pytest.fixture
def locked_folder():
    """A folder nobody but root may enter, in a place every user can reach (/tmp, not pytest's 0700 root)."""
    top = Path(tempfile.mkdtemp(prefix="studio-locked-"))
    top.chmod(0o755)
    (top / "locked").mkdir()
    (top / "locked").chmod(0)
    yield top / "locked"
    (top / "locked").chmod(0o700)
    import shutil

    shutil.rmtree(top)


def _unprivileged_sshd(root: Path):
    """A real sshd whose sessions run as an unprivileged user (root enters any folder, so as root the
    sessions drop to uid 65534 with setpriv: commands and the SFTP server alike)."""
    if os.geteuid() != 0:
        return _sshd(root)
    import shutil

    setpriv = shutil.which("setpriv")
    sftp_server = next((p for p in ("/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server",
                                    "/usr/libexec/sftp-server") if os.path.exists(p)), None)
    if not setpriv or not sftp_server:
        pytest.skip("running as root without setpriv or an sftp-server to drop privileges with")
    root.mkdir(parents=True, exist_ok=True)
    drop = root / "as_nobody.sh"
    drop.write_text("#!/bin/sh\ncd /\n"
                    f'case "$SSH_ORIGINAL_COMMAND" in internal-sftp) set -- {sftp_server} ;;\n'
                    '  *) set -- /bin/sh -c "$SSH_ORIGINAL_COMMAND" ;; esac\n'
                    f'exec {setpriv} --reuid=65534 --regid=65534 --clear-groups -- "$@"\n')
    drop.chmod(0o755)
    return _sshd(root, [f"ForceCommand {drop}"])


def test_deploy_status_says_a_remote_folder_cannot_be_entered_not_that_it_is_missing(
        studio_home, tmp_path, locked_folder):
    server = _unprivileged_sshd(tmp_path / "sshd")
    try:
        _hosts(studio_home, box=(server, None))
        remote = locked_folder / "proj"
        assert _done(_studio("deploy", "add", "proj", "--host", "box", "--local", str(tmp_path),
                             "--remote", str(remote), home=studio_home))[0] == 0
        code, out, err = _done(_studio("deploy", "status", "proj", home=studio_home, known_hosts=server.known_hosts))
    finally:
        server.stop()
    assert code == 2 and "does not exist yet" not in out
    assert f"No permission to enter the remote folder {locked_folder}" in err and "box:" in err


def test_a_nul_in_a_remote_command_is_refused_not_reported_as_a_lost_connection(studio_home, tmp_path):
    from studio.remote.known_hosts import KnownHosts
    from studio.targets import SshTarget, collect

    server = _sshd(tmp_path / "sshd")
    try:
        _hosts(studio_home, box=(server, None))
        (tmp_path / "ws").mkdir()
        (tmp_path / "ws" / "studio.toml").write_text('[[run]]\nname = "x"\ntarget = "box"\n'
                                                      'command = "printf a\\u0000b"\n')
        code, _, err = _done(_studio("run", "x", home=studio_home, cwd=tmp_path / "ws",
                                     known_hosts=server.known_hosts))
        assert code == 2 and "NUL" in err and "studio.toml, line 4" in err and "lost" not in err

        from studio.core.errors import UserError
        from studio.remote.hosts import HostStore

        target = SshTarget(HostStore(studio_home / "config" / "hosts.toml").get("box"),
                           KnownHosts(read_only=[server.known_hosts]))
        with target:
            with pytest.raises(UserError, match="argument 2 holds a NUL"):
                collect(target.run(["printf", "a\0b"]))
            assert collect(target.run(["printf", "ab"]))[0] == 0  # the connection is still there
    finally:
        server.stop()
