"""~/.ssh/config parsing: Host patterns, HostName, Port, User, IdentityFile, ProxyJump, Include."""

from __future__ import annotations

import pytest

from studio.errors import UserError
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
