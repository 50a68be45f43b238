"""A file edited after the plan but keeping its size and whole-second mtime is not overwritten.

The write-time check compares size, nanosecond mtime and ctime where the side has them, and the
content's SHA-256 (against the last sync's) when only whole seconds can be compared. Each case
syncs once, changes the writing side's source, plans, then edits the target file "invisibly":
same size, and an mtime in the same second (``same second``) or restored exactly (``restored``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from deploy_helpers import actions, apply, make_deployment, plan, read_tree, write_tree

EDITS = ["same second", "restored"]


def _files(kind: str) -> dict[str, bytes]:
    if kind == "tar batch":
        return {f"f{i:02}.txt": bytes([65 + i]) * 100 for i in range(10)}
    return {"big.bin": b"B" * (400 * 1024)}


def _invisible_edit(path: Path, how: str) -> bytes:
    """New content of the same size, with the mtime kept in the same second (or restored exactly)."""
    st = os.stat(path)
    data = bytes(b ^ 0x20 for b in path.read_bytes())
    path.write_bytes(data)
    ns = st.st_mtime_ns if how == "restored" else st.st_mtime_ns // 10**9 * 10**9 + 500_000_000
    os.utime(path, ns=(ns, ns))
    assert os.stat(path).st_size == st.st_size and int(os.stat(path).st_mtime) == int(st.st_mtime)
    return data


def _many_folders(root: Path) -> None:
    """Enough folders that the remote listing is made by `find` (with nanoseconds), not SFTP."""
    for i in range(30):
        (root / "dirs" / f"d{i:02}").mkdir(parents=True, exist_ok=True)


def _synced_once(sshd_host, tmp_path, kind: str, mode: str, listing: str = "sftp"):
    """A deployment of :func:`_files` synced once by ``mode`` ("upload": the files start here,
    "download": on the host): (deployment, files, the host's folder). With ``listing="find"`` the
    host's folder holds enough folders to be listed by `find`."""
    deployment = make_deployment(tmp_path)
    files = _files(kind)
    remote = tmp_path / "remote"
    write_tree(deployment.local_root if mode == "upload" else remote, files)
    if listing == "find":
        _many_folders(remote)
    assert apply(deployment, plan(deployment, mode, sshd_host), sshd_host).ok
    return deployment, files, remote


@pytest.mark.parametrize("listing", ["sftp", "find"])
@pytest.mark.parametrize("kind", ["tar batch", "sftp"])
@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("mode", ["upload", "download"])
def test_a_transfer_keeps_an_edit_where_it_writes_that_kept_size_and_mtime(sshd_host, tmp_path, kind, edit, listing,
                                                                           mode):
    deployment, files, remote = _synced_once(sshd_host, tmp_path, kind, mode, listing)
    source, written = (deployment.local_root, remote) if mode == "upload" else (remote, deployment.local_root)
    write_tree(source, {p: d[::-1] + b"!" for p, d in files.items()}, mtime=1_700_000_500)
    the_plan = plan(deployment, mode, sshd_host)
    assert {p for p, a in actions(the_plan).items() if a == mode} == set(files)
    victim = sorted(files)[0]
    edited = _invisible_edit(written / victim, edit)
    result = apply(deployment, the_plan, sshd_host)
    assert (written / victim).read_bytes() == edited  # the later edit is kept
    assert victim in result.conflicts and not result.ok
    for path in set(files) - {victim}:
        assert (written / path).read_bytes() == files[path][::-1] + b"!"  # the rest of the plan ran


@pytest.mark.parametrize("edit", EDITS)
def test_deletes_keep_an_edit_that_kept_size_and_mtime(sshd_host, tmp_path, edit):
    deployment = make_deployment(tmp_path)
    remote = tmp_path / "remote"
    write_tree(deployment.local_root, {"a.txt": b"a" * 50, "b.txt": b"b" * 50})
    assert apply(deployment, plan(deployment, "upload", sshd_host), sshd_host).ok
    (deployment.local_root / "a.txt").unlink()  # deleted here: the upload with --delete removes it there
    up = plan(deployment, "upload", sshd_host, delete=True)
    assert actions(up).get("a.txt") == "delete-remote"
    theirs = _invisible_edit(remote / "a.txt", edit)
    result = apply(deployment, up, sshd_host)
    assert (remote / "a.txt").read_bytes() == theirs and "a.txt" in result.conflicts
    os.remove(remote / "b.txt")  # deleted there: the download with --delete removes it here
    down = plan(deployment, "download", sshd_host, delete=True)
    assert actions(down).get("b.txt") == "delete-local"
    mine = _invisible_edit(deployment.local_root / "b.txt", edit)
    result = apply(deployment, down, sshd_host)
    assert (deployment.local_root / "b.txt").read_bytes() == mine and "b.txt" in result.conflicts
    assert read_tree(deployment.local_root)["b.txt"] == mine


@pytest.mark.parametrize("kind", ["tar batch", "sftp"])
@pytest.mark.parametrize("edit", EDITS)
def test_sync_preferring_local_keeps_a_host_edit_made_after_the_plan(sshd_host, tmp_path, kind, edit):
    """A conflict resolved "keep local" overwrites the host's version the plan saw, never a later one."""
    deployment, files, remote = _synced_once(sshd_host, tmp_path, kind, "upload")
    # both sides change every file: conflicts, resolved in favour of this computer
    write_tree(deployment.local_root, {p: d[::-1] + b"L" for p, d in files.items()}, mtime=1_700_000_500)
    write_tree(remote, {p: d[::-1] + b"R" for p, d in files.items()}, mtime=1_700_000_600)
    the_plan = plan(deployment, "sync", sshd_host)
    assert {p for p, a in actions(the_plan).items() if a == "conflict"} == set(files)
    the_plan.resolve("local")
    assert {p for p, a in actions(the_plan).items() if a == "upload"} == set(files)
    victim = sorted(files)[0]
    theirs = _invisible_edit(remote / victim, edit)
    result = apply(deployment, the_plan, sshd_host)
    assert (remote / victim).read_bytes() == theirs  # the host's later edit is kept
    assert victim in result.conflicts and not result.ok
    for path in set(files) - {victim}:
        assert (remote / path).read_bytes() == files[path][::-1] + b"L"
