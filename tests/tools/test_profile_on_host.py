"""The host flows as engines: msprof under cancel on the real sshd, a download cut mid-way, collect."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
from cancel_helpers import cancel_at_step
from standins import make_standin_toolkit

from studio.core.errors import Cancelled, RemoteError
from studio.core.jobs import CancelToken, run_job
from studio.runs.config import RunConfig
from studio.runs.where import local_target
from studio.targets.ssh import SshTarget
from studio.targets.transfer.fetch import download_folder
from studio.ops.msprof_host import collect_on_host, profile_on_host


def _pids(pattern: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return out.split()


def test_cancel_mid_run_kills_msprof_and_the_app_on_the_host(sshd_host, tmp_path, ascend_fixtures):
    entry, known = sshd_host
    entry.toolkit = str(make_standin_toolkit(tmp_path / "cann", ascend_fixtures))
    entry.extra["deploy_root"] = str(tmp_path / "root")
    marker = "sleep 41.7"
    token = CancelToken()
    seen = []

    def progress(step):
        seen.append(step.message)
        if step.message == "app started":
            threading.Timer(0.3, token.cancel).start()

    with SshTarget(entry, known) as target:
        config = RunConfig("slow", f"echo app started; {marker}; echo app done", target="testhost")
        with pytest.raises(Cancelled):
            run_job(profile_on_host(target, config, tmp_path / "out", cancel=token), token, progress)
    assert "app started" in seen and "app done" not in seen
    for _ in range(60):
        if not _pids(marker) and not _pids("msprof --application"):
            break
        time.sleep(0.05)
    assert _pids(marker) == [] and _pids("msprof --application=echo app started") == []
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


class _CutAfter:
    """A local target whose connection "dies" after ``n`` downloads (as a killed sshd would)."""

    def __init__(self, n: int):
        self.inner = local_target()
        self.n = n
        self.where = "box"

    def get(self, path, local, cancel=None):
        if self.n == 0:
            raise RemoteError("Connection to box was lost during the download")
        self.n -= 1
        yield from self.inner.get(path, local, cancel)


def test_a_cut_download_leaves_nothing_and_the_next_run_completes(tmp_path):
    remote = tmp_path / "host" / "PROF_000001_20231123181533123_ABCDEFGHIJKLMNOP"
    files = []
    for i in range(5):
        path = remote / "device_0" / "data" / f"part.{i}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes([i]) * (1000 + i))
        files.append(f"device_0/data/part.{i}")
    out = tmp_path / "local"
    with pytest.raises(RemoteError):
        run_job(download_folder(_CutAfter(2), str(remote), files, out))
    assert list(out.iterdir()) == []  # no partial folder, no temporary folder
    folder, size = run_job(download_folder(_CutAfter(99), str(remote), files, out))
    assert folder == out / remote.name and size == sum(1000 + i for i in range(5))
    assert all((folder / f).read_bytes() == (remote / f).read_bytes() for f in files)


def test_collect_brings_back_the_newest_pytorch_folder(tmp_path, ascend_fixtures):
    work = tmp_path / "work"
    (work / "prof").mkdir(parents=True)
    source = ascend_fixtures / "pytorch_npu"
    script = (f"mkdir -p prof/old_ascend_pt/ASCEND_PROFILER_OUTPUT && sleep 1.1 && "
              f"mkdir -p prof/new_ascend_pt/ASCEND_PROFILER_OUTPUT && "
              f"cp {source}/*.csv prof/new_ascend_pt/ASCEND_PROFILER_OUTPUT/ && echo trained")
    config = RunConfig("train", script, workdir=str(work))
    result = run_job(collect_on_host(local_target(), config, "prof", tmp_path / "out"))
    assert result.folder == tmp_path / "out" / "new_ascend_pt" and result.files == 4
    assert (result.folder / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv").read_bytes() == \
        (source / "op_statistic.csv").read_bytes()


def test_fetch_over_ssh_cancelled_leaves_nothing_then_completes(sshd_host, tmp_path):
    import os

    from studio.targets.transfer.fetch import fetch_folder

    entry, known = sshd_host
    remote = tmp_path / "host" / "PROF_000001_20231123181533123_ABCDEFGHIJKLMNOP"
    for i in range(12):  # small files (one tar batch) and a big one (a `cat` stream)
        path = remote / "device_0" / "data" / f"part.{i}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(2000 + i))
    (remote / "device_0" / "data" / "big.slice_0").write_bytes(os.urandom(20 << 20))
    out = tmp_path / "local"
    token = CancelToken()
    with SshTarget(entry, known) as target:
        progress, _ = cancel_at_step(token, 2)
        with pytest.raises(Cancelled):
            run_job(fetch_folder(target.connection, str(remote), out / remote.name, token), token, progress)
        assert not out.exists() or list(out.iterdir()) == []
        final, files, size = run_job(fetch_folder(target.connection, str(remote), out / remote.name))
    assert files == 13 and size == sum(p.stat().st_size for p in remote.rglob("*") if p.is_file())
    assert all((final / p.relative_to(remote)).read_bytes() == p.read_bytes() for p in remote.rglob("*") if p.is_file())
