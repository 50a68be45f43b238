"""Run folders of Studio's engine on a host (the real loopback sshd): private, and a cut run's
folder is removed by the next run — never one still in use."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parents[2]


def _engine(tmp_path: Path):
    """An engine folder whose python runs this checkout's Studio (the bootstrap is tested elsewhere)."""
    from studio.runs.engine_env import EngineEnv

    folder = tmp_path / "engine" / "0.1.0"
    (folder / "runs").mkdir(parents=True)
    python = folder / "python"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    return EngineEnv("testhost", str(folder), str(python), "3")


def _run(sshd_host, env, tmp_path, keep_work=False):
    from studio.core.jobs import run_job
    from studio.runs.engine_run import run_engine_command
    from studio.targets.ssh import SshTarget
    from studio.tools.demo.models import build_classifier

    model = tmp_path / "cls.onnx"
    onnx.save(build_classifier(), str(model))
    entry, known = sshd_host
    with SshTarget(entry, known) as target:
        return run_job(run_engine_command(target, env, ["dump", "in/cls.onnx", "-o", "out/d", "--seed", "1"],
                                          {"in/cls.onnx": model}, tmp_path / "back", keep_work=keep_work))


def _modes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mode & 0o777 for p in [folder, *folder.rglob("*")]}


def test_a_run_folder_and_what_is_in_it_are_private(sshd_host, tmp_path):
    env = _engine(tmp_path)
    run = _run(sshd_host, env, tmp_path, keep_work=True)
    assert run.exit_code == 0 and any(p.suffix == ".npy" for p in (tmp_path / "back").rglob("*"))
    modes = _modes(Path(run.work))
    folders = {p: m for p, m in modes.items() if Path(run.work, p).is_dir()}
    files = {p: m for p, m in modes.items() if not Path(run.work, p).is_dir()}
    assert set(folders.values()) == {0o700}, folders
    assert "in/cls.onnx" in files and any(p.startswith("out/d/") for p in files)
    assert set(files.values()) == {0o600}, files


def test_the_next_run_removes_a_cut_runs_folder_only(sshd_host, tmp_path):
    from studio.runs.engine_folders import instance_id

    env = _engine(tmp_path)
    runs = Path(env.folder) / "runs"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a Studio process that was cut off: its pid is no longer running

    def left(name: str, owner: str) -> Path:
        folder = runs / name
        (folder / "in").mkdir(parents=True)
        (folder / "in" / "model.onnx").write_bytes(b"x" * 1000)
        (folder / ".owner").write_text(owner + "\n")
        return folder

    cut = left("20200101-000000-aaaaaa", f"{instance_id()} {gone.pid}")
    cut_here = left("20200101-000001-bbbbbb", f"{instance_id()} {os.getpid()}")  # this process, not in use
    other_machine = left("20200101-000002-cccccc", f"another-installation {gone.pid}")
    still_running = left("20200101-000003-dddddd", f"{instance_id()} {os.getppid()}")  # a live process
    no_owner = runs / "20200101-000004-eeeeee"
    no_owner.mkdir()
    assert _run(sshd_host, env, tmp_path).exit_code == 0
    deadline = time.monotonic() + 15
    while (cut.exists() or cut_here.exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not cut.exists() and not cut_here.exists()
    assert other_machine.exists() and still_running.exists() and no_owner.exists()
