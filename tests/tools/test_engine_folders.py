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
                                  "world-writable folder above the root", "group-writable folder above the root"])
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
    elif case == "group-writable folder above the root":
        os.chmod(tmp_path / "shared", 0o775)  # any member of the group may rename "engines" away (StrictModes)
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


REPO = Path(__file__).resolve().parents[2]


def _ready_engine(root: Path, wheel) -> Path:
    """A ready engine folder as the bootstrap leaves it (marker and a venv python that answers the
    probe), without pip: the python runs this checkout's Studio."""
    import json
    import sys

    folder = root / __version__
    python = folder / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} \"$@\"\n")
    python.chmod(0o700)
    for sub in ("runs", "home", "wheels"):
        (folder / sub).mkdir()
    version = "%d.%d.%d" % sys.version_info[:3]
    (folder / "studio-env.json").write_text(json.dumps({"wheel_sha256": wheel.sha256, "source": wheel.source,
                                                        "python": version}))
    for path in (root, folder, *folder.rglob("*")):
        if path.is_dir():
            path.chmod(0o700)
    return folder


def _planted_tree(tmp_path: Path, marker: Path, owner: int | None) -> Path:
    """What the group member prepares: an engine root of their own whose python reports success."""
    planted = tmp_path / "theirs" / "engines"
    python = planted / __version__ / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    (planted / __version__ / "runs").mkdir()
    python.write_text(f"#!/bin/sh\necho hijacked >> {marker}\necho '{{}}'\nexit 0\n")
    python.chmod(0o755)
    if owner is not None:
        for path in (planted, *planted.rglob("*")):
            os.lchown(path, owner, owner)
    return planted


@pytest.mark.parametrize("swap", ["root replaced by a symlink", "root exchanged for another user's folder"])
def test_an_engine_folder_swapped_right_after_the_probe_runs_nothing_planted(sshd_host, tmp_path, monkeypatch, swap):
    from studio.core.jobs import run_job
    from studio.runs import engine_env
    from studio.runs.engine_run import run_engine_command
    from studio.runs.engine_wheel import EngineWheel
    from studio.targets.ssh import SshTarget

    if swap.endswith("another user's folder") and os.geteuid() != 0:
        pytest.skip("needs root to make a folder of another user")
    monkeypatch.setattr(engine_env, "engine_pins", lambda: {})
    wheel_file = tmp_path / "studio_workbench-0-py3-none-any.whl"
    wheel_file.write_bytes(b"not needed: the engine is ready")
    wheel = EngineWheel(wheel_file, "ab" * 32, __version__, "src")
    root = tmp_path / "mine" / "engines"
    marker = tmp_path / "ran-as-you"
    planted = _planted_tree(tmp_path, marker, 65534 if swap.endswith("another user's folder") else None)
    original = SshTarget.run_script
    swaps = []

    def run_script(self, script, timeout=60):
        answer = original(self, script, timeout)
        if 'echo "env=$ENV"' in script:  # the probe just checked the folders: swap them now
            aside = root.with_name(f"engines.mine-{len(swaps)}")
            root.rename(aside)
            if swap.startswith("root replaced by a symlink"):
                root.symlink_to(planted)
            else:
                planted.rename(root)
            swaps.append(aside)
        return answer

    monkeypatch.setattr(SshTarget, "run_script", run_script)
    refusals = []
    for attempt in range(3):
        _ready_engine(root, wheel)
        with _target(sshd_host, root) as target:
            env = run_job(engine_env.ensure_engine(target, wheel=wheel))
            assert env.reused and swaps, env.actions
            try:
                run_job(run_engine_command(target, env, ["--version"], {}, None))
            except UserError as exc:
                refusals.append(str(exc))
        assert not marker.exists(), f"attempt {attempt + 1}: the planted python ran as you"
        # put the other user's tree back for the next attempt
        if root.is_symlink():
            root.unlink()
        else:
            root.rename(planted)
        swaps[-1].rename(tmp_path / f"done-{attempt}")
    assert len(refusals) == 3
    assert all("no longer the folder Studio checked" in r or "another user" in r for r in refusals), refusals
