"""`studio deploy` as a user runs it: a subprocess against the real sshd, hosts.toml in STUDIO_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _studio(*args: str, home: Path, known_hosts: Path | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "studio"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "studio"]
    env = {**os.environ, "STUDIO_HOME": str(home)}
    if known_hosts:
        env["STUDIO_KNOWN_HOSTS"] = str(known_hosts)
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=60, cwd=REPO)


def _add_host(home: Path, sshd) -> None:
    from studio.remote.hosts import HostEntry, HostStore

    store = HostStore(home / "config" / "hosts.toml")
    store.put(HostEntry(name="box", host=sshd.host, port=sshd.port, user=sshd.user, key_file=str(sshd.client_key)))
    store.save()


def test_deploy_cli_add_status_upload_and_conflict(sshd, studio_home, tmp_path):
    _add_host(studio_home, sshd)
    local, remote = tmp_path / "proj", tmp_path / "srv" / "proj"
    (local / "src").mkdir(parents=True)
    (local / "src" / "main py $(x).py").write_text("print(1)\n")
    (local / "model.om").write_bytes(b"OM")
    result = _studio("deploy", "add", "proj", "--host", "nobox", "--local", str(local), "--remote", str(remote),
                     home=studio_home)
    assert result.returncode == 2 and "studio ssh add nobox" in result.stderr
    result = _studio("deploy", "add", "proj", "--host", "box", "--local", str(local), "--remote", str(remote),
                     "--exclude", "*.om", home=studio_home)
    assert result.returncode == 0, result.stderr
    assert "box:" in _studio("deploy", "list", home=studio_home).stdout

    dry = _studio("deploy", "upload", "proj", "--dry-run", "--known-hosts", str(sshd.known_hosts), home=studio_home)
    assert dry.returncode == 0, dry.stderr
    assert "upload" in dry.stdout and "main py $(x).py" in dry.stdout and "model.om" not in dry.stdout
    assert not remote.exists()  # a dry run changes nothing

    up = _studio("deploy", "upload", "proj", "--json", home=studio_home, known_hosts=sshd.known_hosts)
    assert up.returncode == 0, up.stderr
    assert json.loads(up.stdout)["result"]["uploaded"] == 1
    assert (remote / "src" / "main py $(x).py").read_text() == "print(1)\n" and not (remote / "model.om").exists()

    status = _studio("deploy", "status", "proj", "--json", home=studio_home, known_hosts=sshd.known_hosts)
    data = json.loads(status.stdout)
    assert data["unchanged"] == 1 and data["conflicts"] == 0 and data["to_upload"] == 0

    # Both sides edited: the CLI lists the conflict, touches nothing, and says how to settle it.
    target = remote / "src" / "main py $(x).py"
    target.write_text("print('remote')\n")
    os.utime(target, (1_600_000_000, 1_600_000_000))
    (local / "src" / "main py $(x).py").write_text("print('local!')\n")
    sync = _studio("deploy", "sync", "proj", home=studio_home, known_hosts=sshd.known_hosts)
    assert sync.returncode == 1 and "CONFLICT" in sync.stdout and "--prefer" in sync.stderr
    assert target.read_text() == "print('remote')\n"
    diff = _studio("deploy", "compare", "proj", "src", "--diff", home=studio_home, known_hosts=sshd.known_hosts)
    assert "-print('local!')" in diff.stdout and "+print('remote')" in diff.stdout
    sync = _studio("deploy", "sync", "proj", "--prefer", "remote", home=studio_home, known_hosts=sshd.known_hosts)
    assert sync.returncode == 0, sync.stderr
    assert (local / "src" / "main py $(x).py").read_text() == "print('remote')\n"


def test_deploy_cli_refuses_escaping_paths_and_unknown_host_keys(sshd, studio_home, tmp_path):
    _add_host(studio_home, sshd)
    (tmp_path / "p").mkdir()
    assert _studio("deploy", "add", "p", "--host", "box", "--local", str(tmp_path / "p"), "--remote",
                   str(tmp_path / "r"), home=studio_home).returncode == 0
    escape = _studio("deploy", "compare", "p", "../../etc/passwd", home=studio_home, known_hosts=sshd.known_hosts)
    assert escape.returncode == 2 and "'..' would leave the deployment root" in escape.stderr
    unknown = _studio("deploy", "status", "p", home=studio_home)  # no known_hosts given: key unknown
    assert unknown.returncode == 2 and "studio ssh trust box" in unknown.stderr and "Traceback" not in unknown.stderr


def test_long_plans_are_cut_but_deletions_and_conflicts_never():
    import io

    from studio.commands.deploy import print_plan
    from studio.tools.deploy.plan import make_plan
    from studio.targets.transfer.scan import FileInfo, Scan
    from studio.tools.deploy.state import Synced

    a, b = FileInfo(1, 1), FileInfo(2, 2)
    local = Scan("/l", files={f"n{i:02}": a for i in range(30)} | {"both": b})
    remote = Scan("/r", files={"gone": a, "both": a})
    plan = make_plan("upload", local, remote, {"gone": Synced(a, a), "both": Synced(a, a)}, delete=True)
    out = io.StringIO()
    print_plan(plan, out)
    text = out.getvalue()
    assert "... and 11 more to upload" in text and "DELETE remote" in text and "gone" in text
    lines = text.splitlines()
    assert sum(line.startswith("  upload ") for line in lines) == 20 and "31 to upload, 1 to delete on remote" in text
    out = io.StringIO()
    print_plan(plan, out, verbose=True)
    assert sum(line.startswith("  upload ") for line in out.getvalue().splitlines()) == 31


def test_root_guard_refuses_home_root_and_their_parents_however_written(sshd, studio_home, tmp_path):
    _add_host(studio_home, sshd)
    (tmp_path / "p").mkdir()
    for remote in ("/", "/.", "/tmp/..", ".", "./", "~", "~/", "~/.", "~/..", "~/a/../..", "..", "//", "/home"):
        added = _studio("deploy", "add", "p", "--host", "box", "--local", str(tmp_path / "p"), "--remote", remote,
                        home=studio_home)
        assert added.returncode == 2, (remote, added.stdout, added.stderr)
        assert "would sync" in added.stderr and "Traceback" not in added.stderr
    # Written so that only the host can tell (an absolute path that is the remote home): refused
    # when connecting, before anything is listed or changed.
    (tmp_path / "to-home").symlink_to(Path.home())
    for remote in (str(Path.home()) + "/x/..", str(tmp_path / "to-home")):
        assert _studio("deploy", "add", "h", "--host", "box", "--local", str(tmp_path / "p"), "--remote", remote,
                       home=studio_home).returncode == 0
        status = _studio("deploy", "upload", "h", "--delete", "--dry-run", home=studio_home,
                         known_hosts=sshd.known_hosts)
        assert status.returncode == 2 and "home folder" in status.stderr and "Traceback" not in status.stderr


def test_an_apply_that_deletes_asks_first_and_shows_the_count(sshd, studio_home, tmp_path):
    _add_host(studio_home, sshd)
    local, remote = tmp_path / "proj", tmp_path / "srv"
    local.mkdir()
    (local / "keep.txt").write_text("k")
    remote.mkdir()
    for i in range(3):
        (remote / f"extra{i}.txt").write_text("x")
    assert _studio("deploy", "add", "proj", "--host", "box", "--local", str(local), "--remote", str(remote),
                   home=studio_home).returncode == 0
    # No terminal to ask on and no --yes: the deletions are listed, counted, and nothing changes.
    asked = _studio("deploy", "upload", "proj", "--delete", home=studio_home, known_hosts=sshd.known_hosts)
    assert asked.returncode == 2, asked.stderr
    assert "3 files would be deleted" in asked.stderr and "--yes" in asked.stderr
    assert sorted(p.name for p in remote.iterdir()) == ["extra0.txt", "extra1.txt", "extra2.txt"]
    done = _studio("deploy", "upload", "proj", "--delete", "--yes", home=studio_home, known_hosts=sshd.known_hosts)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in remote.iterdir()) == ["keep.txt"]
