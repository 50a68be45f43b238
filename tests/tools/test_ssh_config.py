"""~/.ssh/config parsing: Host patterns, HostName, Port, User, IdentityFile, ProxyJump, Include."""

from __future__ import annotations

import subprocess
import sys

import pytest

from studio.core.errors import UserError
from studio.remote.ssh_config import SshConfig, entry_from_ssh_config


@pytest.fixture
def ssh_dir(tmp_path):
    folder = tmp_path / ".ssh"
    (folder / "conf.d").mkdir(parents=True)
    (folder / "config").write_text(
        "# lab machines\n"
        "Host atlas\n"
        "    HostName 10.1.2.3\n"
        "    Port 2202\n"
        "    User HwHiAiUser\n"
        "    IdentityFile ~/.ssh/id_atlas\n"
        "    ProxyJump bastion\n"
        "\n"
        "Host npu-*\n"
        "    User ops\n"
        "    Port 22022\n"
        "\n"
        "Include conf.d/*.conf\n"
        "\n"
        "Host *\n"
        "    ServerAliveInterval 30\n")
    (folder / "conf.d" / "edge.conf").write_text("Host edge box2\n  HostName edge.lab.local\n  User pi\n")
    return folder


def test_alias_fills_every_field(ssh_dir):
    entry = entry_from_ssh_config("atlas", path=ssh_dir / "config")
    assert (entry.name, entry.host, entry.port, entry.user) == ("atlas", "10.1.2.3", 2202, "HwHiAiUser")
    assert entry.auth == "key" and entry.key_file.endswith("/.ssh/id_atlas") and "~" not in entry.key_file
    assert entry.proxy_jump == "bastion"


def test_wildcard_host_and_include(ssh_dir):
    config = SshConfig.load(ssh_dir / "config")
    assert config.aliases() == ["atlas", "edge", "box2"]  # patterns are not offered as aliases
    npu = config.entry("npu-07", name="npu7")
    assert (npu.name, npu.host, npu.port, npu.user) == ("npu7", "npu-07", 22022, "ops")
    edge = config.entry("box2")
    assert (edge.host, edge.user, edge.port) == ("edge.lab.local", "pi", 22)


def test_unknown_alias_and_missing_file_say_what_to_do(ssh_dir, tmp_path):
    with pytest.raises(UserError, match="No Host 'nothere'") as info:
        entry_from_ssh_config("nothere", path=ssh_dir / "config")
    assert "atlas" in info.value.fix
    with pytest.raises(UserError, match="Cannot read"):
        SshConfig.load(tmp_path / "absent")


def test_include_loop_is_refused(tmp_path):
    (tmp_path / "config").write_text(f"Include {tmp_path / 'config'}\nHost a\n HostName b\n")
    with pytest.raises(UserError, match="Include nesting"):
        SshConfig.load(tmp_path / "config")


def test_match_exec_is_never_run_and_its_block_is_said_skipped(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "config").write_text(
        "Host lab\n  HostName 10.0.0.1\n"
        f'Match exec "touch {marker}"\n  User fromexec\n'
        f'Match host lab !exec "touch {marker}"\n  Port 2200\n'
        "Host *\n  User everyone\n")
    config = SshConfig.load(tmp_path / "config")
    entry = config.entry("lab")
    assert not marker.exists()  # paramiko would run it (twice: both lookup passes)
    assert (entry.user, entry.port) == ("everyone", 22)  # neither block applied, the rest did
    notes = config.notes("lab")
    assert len(notes) == 2 and notes[0].startswith(f"{tmp_path / 'config'}:3: `Match exec")
    assert all("never runs commands" in n and "not applied" in n for n in notes)
    assert not marker.exists()


@pytest.mark.parametrize("line", [
    "Match ALL host exec {cmd} final",      # paramiko: ALL=host, exec={cmd}, final
    "Match host lab EXEC {cmd}",            # paramiko lower-cases nothing: EXEC is not exec to it, but
    "Match host lab !Exec {cmd}",           # no line with the word may reach any parser
    "Match all host exec=x exec {cmd}",
])
def test_match_line_holding_exec_anywhere_in_any_case_is_skipped(tmp_path, line):
    marker = tmp_path / "ran"
    cmd = f'"touch {marker}"'
    text = f"Host lab\n  HostName 10.0.0.1\n{line.format(cmd=cmd)}\n  User fromexec\n"
    (tmp_path / "config").write_text(text)
    if line.startswith("Match ALL"):
        # The independent reading: paramiko on its own runs the command for this line.
        script = "import paramiko, sys; paramiko.SSHConfig.from_text(sys.argv[1]).lookup('lab')"
        subprocess.run([sys.executable, "-c", script, text], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=60, check=True)
        assert marker.exists()
        marker.unlink()
    config = SshConfig.load(tmp_path / "config")
    entry = config.entry("lab")
    notes = config.notes("lab")
    assert not marker.exists()
    assert entry.user == ""
    assert len(notes) == 1 and "never runs commands" in notes[0] and ":3:" in notes[0]


def test_match_host_and_originalhost_name_aliases_and_apply(tmp_path):
    (tmp_path / "config").write_text(
        "Match originalhost lab2,lab3\n  HostName 10.0.0.2\n  User u2\n"
        "Match host 10.0.0.2\n  Port 2202\n"
        "Match all\n  IdentityFile /keys/id_all\n")
    config = SshConfig.load(tmp_path / "config")
    assert config.aliases() == ["lab2", "lab3", "10.0.0.2"]
    entry = config.entry("lab3")
    assert (entry.host, entry.user, entry.port, entry.key_file) == ("10.0.0.2", "u2", 2202, "/keys/id_all")
    assert config.notes("lab3") == []
    with pytest.raises(UserError, match="No Host 'other'"):
        config.entry("other")  # Match all applies to every host but names none


def test_match_criteria_studio_does_not_evaluate_are_skipped_not_applied(tmp_path):
    (tmp_path / "config").write_text("Host lab\n  HostName 10.0.0.1\n"
                                     "Match localnetwork 10.0.0.0/8\n  User onlan\n"
                                     "Match host elsewhere tagged x\n  User tagged\n")
    config = SshConfig.load(tmp_path / "config")
    assert config.entry("lab").user == ""
    (note,) = config.notes("lab")  # the `host elsewhere` block could not have applied: no note
    assert ":3: `Match localnetwork 10.0.0.0/8`" in note and "does not evaluate Match localnetwork" in note


def test_a_port_that_is_no_number_names_its_file_and_line(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "lab.conf").write_text("Host lab\n  HostName 10.0.0.1\n  Port notaport\n")
    (tmp_path / "config").write_text("Include conf.d/*.conf\nHost zero\n  Port 0\n")
    config = SshConfig.load(tmp_path / "config")
    with pytest.raises(UserError) as caught:
        config.entry("lab")
    assert "'notaport'" in caught.value.what and caught.value.where == f"{tmp_path / 'conf.d' / 'lab.conf'}:3"
    with pytest.raises(UserError) as caught:
        config.entry("zero")
    assert caught.value.where == f"{tmp_path / 'config'}:3"


def test_a_line_paramiko_cannot_parse_is_named(tmp_path):
    (tmp_path / "config").write_text("Host lab\n  HostName 10.0.0.1\n\nHost\n")
    with pytest.raises(UserError) as caught:
        SshConfig.load(tmp_path / "config").entry("lab")
    assert caught.value.where == f"{tmp_path / 'config'}:4"


def test_a_fifo_is_refused_not_read(tmp_path):
    import os
    import threading
    import time

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = threading.Event()

    def unblock() -> None:  # a reader blocked on the FIFO gets its end of file after 3 s
        deadline = time.monotonic() + 3
        while not done.wait(0.05):
            if time.monotonic() > deadline:
                try:
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:  # no reader (yet): nothing blocks
                    pass
    threading.Thread(target=unblock, daemon=True).start()
    try:
        with pytest.raises(UserError, match="not a regular file"):
            SshConfig.load(fifo)
    finally:
        done.set()
