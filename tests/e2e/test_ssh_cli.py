"""`studio ssh ...` run as a user runs it (subprocess, STUDIO_HOME set) against a real sshd.

The sshd's key is in no known_hosts file Studio reads, so the flow is the real one: test refuses
with the fingerprint, trust records it in Studio's own file, then test and run work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def studio(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "studio"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "studio"]
    # HOME too: nothing may come from (or go to) the real ~/.ssh, e.g. an old key for a reused port.
    env = {**os.environ, "STUDIO_HOME": str(home), "HOME": str(home / "user_home")}
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=60, cwd=REPO,
                          input=stdin)


def test_add_test_trust_run_remove(sshd, studio_home, tmp_path):
    added = studio("ssh", "add", "box", "--host", sshd.host, "--port", str(sshd.port), "--user", sshd.user,
                   "--key", str(sshd.client_key), "--toolkit", "/opt/none", home=studio_home)
    assert added.returncode == 0, added.stderr
    listed = json.loads(studio("ssh", "list", "--json", home=studio_home).stdout)
    assert listed == [{"name": "box", "host": sshd.host, "port": sshd.port, "user": sshd.user, "auth": "key",
                       "key_file": str(sshd.client_key), "toolkit": "/opt/none"}]

    refused = studio("ssh", "test", "box", home=studio_home)
    fingerprint = subprocess.run(["ssh-keygen", "-lf", str(sshd.host_key_pub)], capture_output=True,
                                 text=True).stdout.split()[1]
    assert refused.returncode == 2 and fingerprint in refused.stderr and "studio ssh trust box" in refused.stderr

    unconfirmed = studio("ssh", "trust", "box", home=studio_home, stdin="")
    assert unconfirmed.returncode == 2 and fingerprint in unconfirmed.stdout and "--yes" in unconfirmed.stderr
    trusted = studio("ssh", "trust", "box", "--yes", home=studio_home)
    assert trusted.returncode == 0 and fingerprint in trusted.stdout

    checked = studio("ssh", "test", "box", "--json", "--folder", str(tmp_path), home=studio_home)
    assert checked.returncode == 0, checked.stderr
    items = {i["key"]: i for i in json.loads(checked.stdout)["items"]}
    assert items["auth"]["status"] == "ok" and items["toolkit"]["status"] == "missing"
    assert "/opt/none" in items["toolkit"]["detail"]

    ran = studio("ssh", "run", "box", "--cwd", str(tmp_path), "--", "sh", "-c", 'pwd; printf "%s\\n" "$1"; exit 9',
                 "sh", "it's $(x) ü", home=studio_home)
    assert ran.returncode == 9 and ran.stdout.splitlines() == [str(tmp_path), "it's $(x) ü"]

    assert studio("ssh", "remove", "box", home=studio_home).returncode == 0
    gone = studio("ssh", "run", "box", "--", "true", home=studio_home)
    assert gone.returncode == 2 and "studio ssh add box" in gone.stderr


def test_add_from_ssh_config(studio_home, tmp_path):
    config = tmp_path / "config"
    config.write_text("Host lab\n  HostName 10.9.8.7\n  Port 2201\n  User ascend\n  IdentityFile /keys/id_lab\n")
    result = studio("ssh", "add", "lab", "--from-ssh-config", "lab", "--ssh-config", str(config),
                    "--toolkit", "/usr/local/Ascend/ascend-toolkit/8.0", home=studio_home)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(studio("ssh", "list", "--json", home=studio_home).stdout)
    assert (row["host"], row["port"], row["user"], row["key_file"]) == ("10.9.8.7", 2201, "ascend", "/keys/id_lab")
    missing = studio("ssh", "add", "x", home=studio_home)
    assert missing.returncode == 2 and "--host" in missing.stderr


def test_add_from_ssh_config_never_runs_match_exec_and_says_so(studio_home, tmp_path):
    marker = tmp_path / "ran"
    config = tmp_path / "config"
    config.write_text(f'Match exec "touch {marker}"\n  User fromexec\nHost lab\n  HostName 10.9.8.7\n  Port 2201\n')
    result = studio("ssh", "add", "lab", "--from-ssh-config", "lab", "--ssh-config", str(config), home=studio_home)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    assert f"note: {config}:1: `Match exec" in result.stderr and "never runs commands" in result.stderr
    (row,) = json.loads(studio("ssh", "list", "--json", home=studio_home).stdout)
    assert (row["host"], row["port"], row.get("user", "")) == ("10.9.8.7", 2201, "")
    config.write_text("Host lab\n  Port notaport\n")
    bad = studio("ssh", "add", "lab", "--from-ssh-config", "lab", "--ssh-config", str(config), home=studio_home)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and f"{config}:2" in bad.stderr


def test_ssh_run_passes_bytes_through_unchanged(sshd, studio_home, tmp_path):
    assert studio("ssh", "add", "box", "--host", sshd.host, "--port", str(sshd.port), "--user", sshd.user,
                  "--key", str(sshd.client_key), home=studio_home).returncode == 0
    assert studio("ssh", "trust", "box", "--yes", home=studio_home).returncode == 0
    script = Path(sys.executable).parent / "studio"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "studio"]
    env = {**os.environ, "STUDIO_HOME": str(studio_home), "HOME": str(studio_home / "user_home")}

    def run(*args, stdin: bytes | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*command, "ssh", "run", "box", *args], capture_output=True, env=env, timeout=60,
                              input=stdin if stdin is not None else b"")

    raw = run("--", "printf", "a\\r\\nb\\000\\377")  # CR LF, a NUL, a byte that is not UTF-8, no final newline
    assert raw.returncode == 0 and raw.stdout == b"a\r\nb\x00\xff", raw.stderr
    dashes = run("--", "grep", "-c", "--", "-x", "/dev/null")  # a "--" inside the remote command
    assert dashes.stdout == b"0\n" and dashes.returncode == 1, dashes.stderr
    latin = run("--", "printf", "%s", b"caf\xe9")  # an argument that is not UTF-8 arrives as its bytes
    assert latin.returncode == 0 and latin.stdout == b"caf\xe9", latin.stderr
    piped = run("--", "sh", "-c", "wc -c; cat >/dev/null", stdin=b"x" * 100000)  # stdin is forwarded
    assert piped.returncode == 0 and piped.stdout.strip() == b"100000", piped.stderr
    options = run("--cwd", str(tmp_path), "--", "pwd")
    assert options.stdout == f"{tmp_path}\n".encode()


def test_a_port_that_hangs_up_is_an_error_line_not_a_traceback(studio_home):
    """A server that closes the connection before the SSH banner (a proxy, a dead sshd): paramiko's
    transport thread logs the failure with its traceback; only Studio's error line may reach the terminal."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def hang_up() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        port = str(listener.getsockname()[1])
        assert studio("ssh", "add", "box", "--host", "127.0.0.1", "--port", port, "--agent",
                      home=studio_home).returncode == 0
        for args in (("trust", "box", "--yes"), ("run", "box", "--", "true"), ("test", "box")):
            result = studio("ssh", *args, home=studio_home)
            assert result.returncode in (1, 2), (args, result.stderr)
            assert "Traceback" not in result.stdout + result.stderr, (args, result.stderr)
            assert "SSH" in result.stdout + result.stderr, (args, result.stderr)
    finally:
        listener.close()
