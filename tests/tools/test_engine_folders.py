"""Studio's engine folders on a host (the real loopback sshd): nobody else's program runs as you.

An engine root another user can write (or owns) lets them put ``<version>/venv/bin/python``
there before Studio's first run; the probe refuses such folders before running anything in them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from studio import __version__
from studio.core.errors import UserError


def _target(sshd_host, root: Path):
    from studio.targets.ssh import SshTarget

    entry, known = sshd_host
    entry = type(entry)(**{**entry.__dict__, "extra": {**entry.extra, "engine_root": str(root)}})
    return SshTarget(entry, known)


def _plant_python(root: Path, marker: Path) -> None:
    """What the other user does: a venv python of their own, waiting to be run."""
    python = root / __version__ / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text(f"#!/bin/sh\necho hijacked > {marker}\nexit 1\n")
    python.chmod(0o755)


def _ensure(target, tmp_path, monkeypatch):
    from studio.core.jobs import run_job
    from studio.runs import engine_env
    from studio.runs.engine_wheel import EngineWheel

    monkeypatch.setattr(engine_env, "engine_pins", lambda: {})  # nothing to install: fail fast, offline
    wheel = tmp_path / "studio_workbench-0-py3-none-any.whl"
    wheel.write_bytes(b"not a wheel")
    return run_job(engine_env.ensure_engine(target, wheel=EngineWheel(wheel, "0" * 64, __version__, "src")))


@pytest.mark.parametrize("case", ["world-writable root", "root of another user", "group-writable version folder",
                                  "world-writable folder above the root"])
def test_an_engine_folder_someone_else_can_write_is_refused_before_anything_runs(sshd_host, tmp_path, monkeypatch,
                                                                                  case):
    root = tmp_path / "shared" / "engines"
    marker = tmp_path / "ran-as-you"
    _plant_python(root, marker)
    os.chmod(root / __version__, 0o755)
    if case == "world-writable root":
        os.chmod(root, 0o777)
    elif case == "root of another user":
        os.chown(root, 65534, 65534) if os.geteuid() == 0 else pytest.skip("needs root to give a folder away")
    elif case == "group-writable version folder":
        os.chmod(root / __version__, 0o775)
    else:
        os.chmod(tmp_path / "shared", 0o777)  # anyone may rename "engines" away and put theirs there
    with _target(sshd_host, root) as target, pytest.raises(UserError) as caught:
        _ensure(target, tmp_path, monkeypatch)
    assert not marker.exists(), "the other user's python ran"
    text = str(caught.value)
    assert ("other users" in text or "another user" in text) and "engine_root" in text, text
    assert (root / __version__ / "venv" / "bin" / "python").read_text().startswith("#!/bin/sh")  # left as found


def test_a_sticky_world_writable_folder_above_the_root_is_fine_and_new_folders_are_private(sshd_host, tmp_path,
                                                                                            monkeypatch):
    shared = tmp_path / "tmp-like"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp: nobody can rename another's folder away
    root = shared / "engines"
    with _target(sshd_host, root) as target, pytest.raises(UserError) as caught:
        _ensure(target, tmp_path, monkeypatch)  # gets as far as installing the (broken) wheel
    assert "wheel" in str(caught.value).lower() or "install" in str(caught.value).lower(), caught.value
    for folder in (root, root / __version__, root / __version__ / "wheels"):
        assert folder.stat().st_mode & 0o777 == 0o700, (folder, oct(folder.stat().st_mode))
