"""The deployment root itself swapped for a symlink between plan and apply, on either side.

A process on the host (or here) replaces the whole root folder by a symlink to another folder
after the scan; every write is checked against the root's real path as the plan saw it, so
nothing lands in the link's target and the run says why.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from deploy_helpers import actions, apply, make_deployment, plan, write_tree


def _swap_root(root: Path, target: Path) -> None:
    """The root becomes a symlink to ``target`` (which holds a copy of what the root held)."""
    shutil.copytree(root, target, symlinks=True)
    shutil.rmtree(root)
    root.symlink_to(target)


def _files(kind: str) -> dict[str, bytes]:
    if kind == "tar batch":  # many small files travel in one tar stream
        return {f"sub/f{i:02}.txt": b"x" * 100 for i in range(12)} | {f"t{i:02}.txt": b"t" * 50 for i in range(8)}
    return {"blob.bin": os.urandom(400 * 1024), "sub/blob2.bin": os.urandom(300 * 1024)}  # SFTP


@pytest.mark.parametrize("kind", ["tar batch", "sftp"])
def test_a_remote_root_swapped_for_a_symlink_after_the_plan_is_not_written_through(sshd_host, tmp_path, kind):
    deployment = make_deployment(tmp_path)
    files = _files(kind)
    write_tree(deployment.local_root, files)
    remote = tmp_path / "remote"
    write_tree(remote, {"sub/old.txt": b"old"})
    the_plan = plan(deployment, "upload", sshd_host)
    assert {p for p, a in actions(the_plan).items() if a == "upload"} == set(files)
    elsewhere = tmp_path / "elsewhere"
    _swap_root(remote, elsewhere)
    result = apply(deployment, the_plan, sshd_host)
    landed = sorted(str(p.relative_to(elsewhere)) for p in elsewhere.rglob("*") if p.is_file())
    assert landed == ["sub/old.txt"], landed  # nothing of ours in the link's target, not even a staging folder
    assert not result.ok and result.uploaded == 0
    refused = dict(result.refused)
    assert set(refused) == set(files), result.summary()
    assert all("root" in reason for reason in refused.values()), refused


@pytest.mark.parametrize("kind", ["tar batch", "sftp"])
def test_a_local_root_swapped_for_a_symlink_before_a_download_is_not_written_through(sshd_host, tmp_path, kind):
    deployment = make_deployment(tmp_path)
    files = _files(kind)
    write_tree(tmp_path / "remote", files)
    write_tree(deployment.local_root, {"keep.txt": b"mine"})
    the_plan = plan(deployment, "download", sshd_host)
    assert {p for p, a in actions(the_plan).items() if a == "download"} == set(files)
    elsewhere = tmp_path / "elsewhere"
    _swap_root(deployment.local_root, elsewhere)
    result = apply(deployment, the_plan, sshd_host)
    landed = sorted(str(p.relative_to(elsewhere)) for p in elsewhere.rglob("*"))
    assert landed == ["keep.txt"], landed
    assert not result.ok and result.downloaded == 0
    assert {p for p, _ in result.failed + result.refused} == set(files), result.summary()


def test_a_remote_root_swapped_before_a_delete_deletes_nothing_there(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    remote = tmp_path / "remote"
    write_tree(remote, {"gone.txt": b"x", "also.txt": b"y"})
    the_plan = plan(deployment, "upload", sshd_host, delete=True)
    assert set(actions(the_plan).values()) == {"delete-remote"}
    elsewhere = tmp_path / "elsewhere"
    _swap_root(remote, elsewhere)
    result = apply(deployment, the_plan, sshd_host)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["also.txt", "gone.txt"]
    assert not result.ok and result.deleted_remote == 0
