"""The wheel carries resources/ as studio/resources, and an installed copy finds them."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_ships_resources_and_installed_code_finds_them(tmp_path):
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "wheels"), str(REPO)], capture_output=True, text=True, timeout=300)
    if build.returncode != 0 and "hatchling" in build.stderr:
        build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                                "-w", str(tmp_path / "wheels"), str(REPO)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    wheel = next((tmp_path / "wheels").glob("studio_workbench-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("studio/resources/icons/studio.svg", "studio/resources/styles/studio.qss",
                     "studio/cli.py", "studio/commands/info.py"):
        assert expected in names
    assert not any(n.startswith("tests/") for n in names)

    target = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                              str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    code = ("import studio.core.assets as a; root = a.resources_root(); print(root); "
            "print(a.read_text('styles', 'studio.qss')[:2])")
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert str(target) in result.stdout.splitlines()[0], "the installed copy must use its own resources"
    assert result.stdout.splitlines()[1] == "/*"
