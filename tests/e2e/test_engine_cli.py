"""``studio engine list|clean``: old engine versions and cut or old run folders on a host (the real
loopback sshd), and old wheel builds here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from standins import write_host
from test_cli import run_studio

from studio import __version__


def _run_folder(folder: Path, owner: str, age_s: float = 0) -> Path:
    (folder / "in").mkdir(parents=True)
    (folder / "in" / "m.onnx").write_bytes(b"x" * 2048)
    (folder / ".owner").write_text(owner + "\n")
    if age_s:
        then = time.time() - age_s
        os.utime(folder, (then, then))
    return folder


def test_engine_list_and_clean_on_a_host(sshd, studio_home, tmp_path):
    from studio.runs.engine_folders import instance_id

    root = tmp_path / "engines"
    old = root / "0.0.1"
    (old / "venv" / "bin").mkdir(parents=True)
    (old / "venv" / "bin" / "python").write_bytes(b"y" * 4096)
    runs = root / __version__ / "runs"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    cut = _run_folder(runs / "20200101-000000-aaaaaa", f"{instance_id()} {gone.pid}")
    stale_other = _run_folder(runs / "20200101-000001-bbbbbb", "another-installation 1", age_s=3 * 86400)
    fresh_other = _run_folder(runs / "20200101-000002-cccccc", "another-installation 1")
    write_host(studio_home, sshd, engine_root=str(root))

    listed = run_studio("engine", "list", "--host", "box", "--json", home=studio_home)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert data["root"] == str(root)
    assert [(v["name"], v["current"]) for v in data["versions"]] == [(__version__, True), ("0.0.1", False)]
    states = {Path(r["path"]).name: r["state"] for r in data["versions"][0]["runs"]}
    assert states == {cut.name: "cut", stale_other.name: "in use or another installation's",
                      fresh_other.name: "in use or another installation's"}
    text = run_studio("engine", "list", "--host", "box", home=studio_home)
    assert "0.0.1" in text.stdout and "(this Studio)" in text.stdout and "cut" in text.stdout

    dry = run_studio("engine", "clean", "--host", "box", "--dry-run", "--json", home=studio_home)
    assert sorted(json.loads(dry.stdout)["would_remove"]) == sorted(map(str, [old, cut, stale_other]))
    assert old.exists() and cut.exists()
    cleaned = run_studio("engine", "clean", "--host", "box", home=studio_home)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "removed 3 folder(s)" in cleaned.stdout
    assert not old.exists() and not cut.exists() and not stale_other.exists()
    assert fresh_other.exists() and runs.is_dir()


def test_engine_list_and_clean_here(studio_home):
    from studio.core.paths import cache_dir
    from studio.runs.engine_wheel import source_hash, source_root

    cache = cache_dir() / "engine-wheels"
    current = cache / source_hash(source_root())[:20]
    old = cache / "0123456789abcdef0123"
    for folder in (current, old):
        folder.mkdir(parents=True)
        (folder / "studio_workbench-0.1.0-py3-none-any.whl").write_bytes(b"w" * 4096)
    listed = json.loads(run_studio("engine", "list", "--json", home=studio_home).stdout)
    assert listed["where"] == "this computer"
    assert [(v["name"], v["current"]) for v in listed["versions"]] == [(current.name, True), (old.name, False)]
    cleaned = run_studio("engine", "clean", "--json", home=studio_home)
    assert json.loads(cleaned.stdout)["removed"] == [str(old)]
    assert current.is_dir() and not old.exists()
