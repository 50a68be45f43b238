"""A full disk on the host, against the real sshd: said as such (host, folder, mount point, what is
free), never reported as a lost connection or as success, and nothing half-written stays.

The "host" disk is a small tmpfs mounted for the test (root only: skipped elsewhere).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from deploy_helpers import make_deployment, plan, read_tree, write_tree

from studio.core.errors import UserError
from studio.core.jobs import run_job


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB file system (tmpfs) at ``tmp_path / "disk"``; unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=755", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _apply(deployment, the_plan, sshd_host):
    from deploy_helpers import apply

    return apply(deployment, the_plan, sshd_host)


def _says_full(error: UserError, mount: Path) -> None:
    from studio.targets.files import DiskFull

    assert isinstance(error, DiskFull), error
    assert "is full" in error.what and str(mount) in error.what and "MB free" in error.what, error.what
    assert "was lost" not in error.what and "Free space" in error.fix


def test_a_big_upload_to_a_full_disk_is_refused_not_truncated(sshd_host, tmp_path, small_disk):
    deployment = make_deployment(tmp_path)
    deployment.remote = str(small_disk / "project")
    write_tree(deployment.local_root, {"weights.bin": os.urandom(6_000_000), "note.txt": b"n"})
    with pytest.raises(UserError) as info:
        _apply(deployment, plan(deployment, "upload", sshd_host), sshd_host)
    _says_full(info.value, small_disk)
    assert "weights.bin" not in read_tree(small_disk)  # no truncated copy in place
    assert not [p for p in read_tree(small_disk) if "studio-part" in p]  # nor its temporary file
    again = plan(deployment, "upload", sshd_host)
    assert "weights.bin" in {i.path for i in again.items}  # not recorded as synced


def test_a_tar_batch_to_a_full_disk_says_so_and_removes_its_staging_folder(sshd_host, tmp_path, small_disk):
    deployment = make_deployment(tmp_path)
    deployment.remote = str(small_disk / "project")
    write_tree(deployment.local_root, {f"d/f{i:03}.bin": os.urandom(100_000) for i in range(60)})  # 6 MB, small files
    with pytest.raises(UserError) as info:
        _apply(deployment, plan(deployment, "upload", sshd_host), sshd_host)
    _says_full(info.value, small_disk)
    assert read_tree(small_disk) == {}  # the staging folder and its files are gone
    assert not any(p.name.startswith(".studio-staging") for p in small_disk.rglob("*"))


def test_a_file_copy_to_a_full_disk_says_so(sshd_host, tmp_path, small_disk):
    from studio.targets.ssh import SshTarget

    entry, known = sshd_host
    model = tmp_path / "model.onnx"
    model.write_bytes(os.urandom(6_000_000))
    with SshTarget(entry, known) as target, pytest.raises(UserError) as info:
        run_job(target.put(model, f"{small_disk}/model.onnx"))
    _says_full(info.value, small_disk)
    assert list(small_disk.iterdir()) == []


def test_a_failed_first_engine_set_up_removes_its_partial_venv(sshd_host, tmp_path, small_disk):
    from dataclasses import replace

    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_wheel import EngineWheel
    from studio.targets.ssh import SshTarget

    entry, known = sshd_host
    entry = replace(entry, extra={"engine_root": str(small_disk / "engines")})
    wheel = EngineWheel(tmp_path / "studio_workbench-0.0.0-py3-none-any.whl", "0" * 64, "0.0.0", "test")
    with SshTarget(entry, known) as target, pytest.raises(UserError) as info:
        run_job(ensure_engine(target, wheel=wheel))  # python3 -m venv runs out of space
    assert "is full" in info.value.what and str(small_disk) in info.value.what, info.value.what
    assert "partial venv was removed" in info.value.what
    assert not list(small_disk.rglob("venv"))
