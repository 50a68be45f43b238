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
