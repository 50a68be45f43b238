"""Deployment safety against a real sshd: what changes between plan and apply must not cause harm.

Each test reproduces a defect found by probing the sync adversarially (a process on the host or
the user changing files after the scan) and checks that the write lands nowhere it should not.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from deploy_helpers import actions, apply, make_deployment, plan, read_tree, write_tree


def _swap_for_symlink(folder: Path, target: Path) -> None:
    """What a process on the host does after the scan: the folder becomes a symlink elsewhere."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(folder)
    folder.symlink_to(target)


@pytest.mark.parametrize("kind", ["tar batch", "sftp"])
def test_a_remote_folder_swapped_for_a_symlink_after_the_scan_is_not_written_through(sshd_host, tmp_path, kind):
    deployment = make_deployment(tmp_path)
    if kind == "tar batch":  # many small files travel in one tar stream
        files = {f"sub/f{i:02}.txt": b"x" * 100 for i in range(20)}
    else:  # a big one goes by SFTP
        files = {"sub/blob.bin": os.urandom(400 * 1024)}
    write_tree(deployment.local_root, {**files, "top.txt": b"top"})
    remote = tmp_path / "remote"
    (remote / "sub").mkdir(parents=True)
    (remote / "sub" / "old.txt").write_text("old")
    the_plan = plan(deployment, "upload", sshd_host)
    assert {p for p, a in actions(the_plan).items() if a == "upload"} == set(files) | {"top.txt"}
    outside = tmp_path / "outside"
    _swap_for_symlink(remote / "sub", outside)
    result = apply(deployment, the_plan, sshd_host)
    assert list(outside.iterdir()) == []  # nothing landed outside the deployment root
    assert (remote / "top.txt").read_bytes() == b"top"  # the rest of the plan still ran
    assert not result.ok
    refused = dict(result.refused)
    assert set(refused) == set(files) and all("symlink" in reason for reason in refused.values())
    # Nothing of ours is left behind in the root either (no staging folder, no temporary file).
    assert sorted(p.name for p in remote.iterdir()) == ["sub", "top.txt"]


def test_user_files_named_like_temporary_files_are_synced_not_deleted(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    mine = {".notes.txt.studio-part-abc": b"local note", ".studio-staging-mine/file.txt": b"staged by the user",
            "plain.txt": b"plain"}
    write_tree(deployment.local_root, mine)
    remote = tmp_path / "remote"
    theirs = {".data.bin.studio-part-1234": b"remote data", ".studio-staging-zz/x.txt": b"remote staging"}
    write_tree(remote, theirs)
    the_plan = plan(deployment, "upload", sshd_host)
    assert {p for p, a in actions(the_plan).items() if a == "upload"} == set(mine)
    assert apply(deployment, the_plan, sshd_host).ok
    assert read_tree(remote) == {**mine, **theirs}  # theirs untouched (no --delete), mine uploaded
    assert read_tree(deployment.local_root) == mine
    again = plan(deployment, "upload", sshd_host)
    assert not [a for a in actions(again).values() if a == "upload"]  # now really nothing to do


def test_temporary_names_are_unguessable_and_fit(tmp_path):
    from studio.targets.files import new_token, temp_name, token_of

    token = new_token()
    assert len(token) == 32 and token != new_token()
    long = "模" * 84  # 252 bytes: a legal name whose old temporary name (+ ".studio-part-XXXX") did not fit
    temp = temp_name(f"a/{long}", token)
    assert temp.startswith("a/.") and len(temp.rpartition("/")[2].encode()) <= 255
    assert token_of(temp.rpartition("/")[2]) == token
    assert temp_name(f"a/{long}", token) != temp_name(f"a/{long}x", token)  # two long names never share one


def _touch(path: Path, data: bytes, mtime: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


@pytest.mark.parametrize("kind", ["tar batch", "sftp"])
@pytest.mark.parametrize("mode", ["upload", "download"])
def test_a_file_created_or_edited_where_it_is_written_after_the_plan_is_not_overwritten(sshd_host, tmp_path, kind,
                                                                                        mode):
    deployment = make_deployment(tmp_path)
    remote = tmp_path / "remote"
    source, written = (deployment.local_root, remote) if mode == "upload" else (remote, deployment.local_root)
    size = 100 if kind == "tar batch" else 400 * 1024
    files = {f"f{i:02}.txt": bytes([65 + i]) * size for i in range(12 if kind == "tar batch" else 2)}
    write_tree(source, files)
    _touch(written / "f01.txt", b"old", 1_600_000_000)  # planned to be overwritten (unchanged since)
    the_plan = plan(deployment, mode, sshd_host)
    assert actions(the_plan)["f00.txt"] == mode
    if actions(the_plan)["f01.txt"] != mode:  # never synced, both present: the plan calls it a conflict
        the_plan.resolve("local" if mode == "upload" else "remote")
    # After the plan: someone creates f00 where the plan writes and edits f01 there.
    _touch(written / "f00.txt", b"created after the plan", 1_700_000_100)
    _touch(written / "f01.txt", b"edited after the plan", 1_700_000_200)
    result = apply(deployment, the_plan, sshd_host)
    assert (written / "f00.txt").read_bytes() == b"created after the plan"
    assert (written / "f01.txt").read_bytes() == b"edited after the plan"
    assert {"f00.txt", "f01.txt"} <= set(result.conflicts) and not result.ok
    for name in set(files) - {"f00.txt", "f01.txt"}:
        assert (written / name).read_bytes() == files[name]  # the rest of the plan ran
    assert sorted(p.name for p in written.iterdir()) == sorted(files)  # no temporary left


def test_a_remote_file_edited_after_a_delete_plan_is_kept(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    remote = tmp_path / "remote"
    write_tree(remote, {"gone.txt": b"delete me", "edited.txt": b"delete me too"})
    the_plan = plan(deployment, "upload", sshd_host, delete=True)
    assert actions(the_plan) == {"gone.txt": "delete-remote", "edited.txt": "delete-remote"}
    _touch(remote / "edited.txt", b"new work on the host", 1_700_000_300)
    result = apply(deployment, the_plan, sshd_host)
    assert not (remote / "gone.txt").exists()
    assert (remote / "edited.txt").read_bytes() == b"new work on the host"
    assert result.conflicts == ["edited.txt"]


def test_a_local_file_edited_after_a_delete_plan_is_kept(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    write_tree(deployment.local_root, {"gone.txt": b"x", "edited.txt": b"y"})
    the_plan = plan(deployment, "download", sshd_host, delete=True)
    assert actions(the_plan) == {"gone.txt": "delete-local", "edited.txt": "delete-local"}
    _touch(deployment.local_root / "edited.txt", b"more work", 1_700_000_300)
    result = apply(deployment, the_plan, sshd_host)
    assert not (deployment.local_root / "gone.txt").exists()
    assert (deployment.local_root / "edited.txt").read_bytes() == b"more work"
    assert result.conflicts == ["edited.txt"]


def test_a_file_that_grows_during_its_own_upload_is_not_a_conflict_afterwards(sshd_host, tmp_path, monkeypatch):
    from studio.targets.transfer.common import Progressor

    deployment = make_deployment(tmp_path)
    path = deployment.local_root / "growing.log"
    write_tree(deployment.local_root, {"growing.log": os.urandom(2 * 1024 * 1024)})
    original = Progressor.add
    grown = []

    def add(self, nbytes, rel=None, finished=False, size=None):
        original(self, nbytes, rel, finished, size)
        if nbytes and not grown:  # the writer appends while we are still reading the file
            grown.append(True)
            with open(path, "ab") as handle:
                handle.write(b"more log lines\n" * 1000)
    monkeypatch.setattr(Progressor, "add", add)
    assert apply(deployment, plan(deployment, "upload", sshd_host), sshd_host).ok
    monkeypatch.setattr(Progressor, "add", original)
    os.utime(path, (1_800_000_000, 1_800_000_000))  # the growth shows as a local change
    after = plan(deployment, "sync", sshd_host)
    assert actions(after) == {"growing.log": "upload"}  # changed here only, not "changed on both sides"
    assert apply(deployment, after, sshd_host).ok
    assert (tmp_path / "remote" / "growing.log").read_bytes() == path.read_bytes()


def test_a_remote_symlink_is_refused_once_and_a_cut_upload_says_why(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    remote = tmp_path / "remote"
    write_tree(remote, {"real.txt": b"r"})
    (remote / "out-link").symlink_to("/etc/hostname")
    write_tree(deployment.local_root, {"out-link": b"a local file of that name"})
    the_plan = plan(deployment, "upload", sshd_host)
    result = apply(deployment, the_plan, sshd_host)
    assert [path for path, _ in result.refused] == ["out-link"]  # once, not twice
    assert os.path.islink(remote / "out-link")

    from studio.targets.transfer.common import connection_lost

    class Conn:
        dead = False
        entry = type("E", (), {"address": "me@box:22", "name": "box"})()
    assert connection_lost(Conn(), EOFError()).what.endswith("was lost: the host closed the connection")
    assert connection_lost(Conn(), OSError()).what.endswith("was lost: OSError")


@pytest.mark.parametrize("kind", ["tar batch", "sftp"])
def test_names_up_to_255_bytes_transfer_both_ways(sshd_host, tmp_path, kind):
    deployment = make_deployment(tmp_path)
    size = 50 if kind == "tar batch" else 300 * 1024
    files = {f"n{i:02}.txt": b"s" * size for i in range(19 if kind == "tar batch" else 1)}
    for length in (234, 240, 255):
        files["d/" + "L" * (length - 4) + ".txt"] = os.urandom(size)
    files["d/" + "模" * 85] = b"255 bytes of UTF-8" * (size // 18 + 1)
    write_tree(deployment.local_root, files)
    result = apply(deployment, plan(deployment, "upload", sshd_host), sshd_host)
    assert result.ok, (result.failed, result.refused)
    assert read_tree(tmp_path / "remote") == files
    other = make_deployment(tmp_path / "back", name="back")
    other.remote = str(tmp_path / "remote")
    assert apply(other, plan(other, "download", sshd_host), sshd_host).ok
    assert read_tree(other.local_root) == files
