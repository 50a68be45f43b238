"""Wheels installed into Studio's engine on a host (the real loopback sshd and the host's pip) are
the bytes sent from here: a wheel changed on the host between upload and install is refused."""

from __future__ import annotations

import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from studio import __version__
from studio.core.errors import UserError


def _fake_studio_wheel(folder: Path, extra: str) -> Path:
    """A small valid wheel of the ``studio-workbench`` distribution holding one module ``extra``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"studio_workbench-{__version__}-py3-none-any.whl"
    info = f"studio_workbench-{__version__}.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{extra}.py", "VALUE = 1\n")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: studio-workbench\nVersion: {__version__}\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


def _add_module(wheel: Path, name: str) -> None:
    """What a process on the host does to an uploaded wheel: the same name, one module more."""
    with zipfile.ZipFile(wheel) as source:
        entries = [(item, source.read(item)) for item in source.infolist()]
    with zipfile.ZipFile(wheel, "w") as out:
        for item, data in entries:
            out.writestr(item, data)
        out.writestr(f"{name}.py", "import os  # not from here\n")


def _tamper_after_upload(monkeypatch, prefix: str, module: str) -> None:
    from studio.runs import engine_env

    original = engine_env.put_pinned

    def put(target, local, rel, folder, cancel=None):
        yield from original(target, local, rel, folder, cancel)
        path = f"{folder}/{rel}"
        if Path(path).name.startswith(prefix) and path.endswith(".whl"):
            _add_module(Path(path), module)  # the host is this machine: change the uploaded file in place
    monkeypatch.setattr(engine_env, "put_pinned", put)


def _ensure(sshd_host, root: Path, wheel: Path, monkeypatch, pins: dict, wheels_from: str):
    from studio.core.jobs import run_job
    from studio.runs import engine_env
    from studio.runs.engine_hashes import sha256_of
    from studio.runs.engine_wheel import EngineWheel
    from studio.targets.ssh import SshTarget

    monkeypatch.setattr(engine_env, "engine_pins", lambda: pins)
    entry, known = sshd_host
    entry = type(entry)(**{**entry.__dict__, "extra": {**entry.extra, "engine_root": str(root)}})
    with SshTarget(entry, known) as target:
        return run_job(engine_env.ensure_engine(target, wheel=EngineWheel(wheel, sha256_of(wheel), __version__, "src"),
                                                wheels_from=wheels_from))


def _installed(root: Path, module: str) -> bool:
    return any((root / __version__ / "venv" / "lib").glob(f"python3*/site-packages/{module}.py"))


def test_a_studio_wheel_changed_on_the_host_before_its_install_is_refused(sshd_host, tmp_path, monkeypatch):
    root = tmp_path / "engines"
    wheel = _fake_studio_wheel(tmp_path / "built", "studio_fake_ok")
    _tamper_after_upload(monkeypatch, "studio_workbench-", "studio_planted")
    with pytest.raises(UserError) as caught:
        _ensure(sshd_host, root, wheel, monkeypatch, {}, "index")
    assert not _installed(root, "studio_planted") and not _installed(root, "studio_fake_ok")
    assert "not the one Studio sent" in str(caught.value), caught.value
    monkeypatch.undo()
    env = _ensure(sshd_host, root, wheel, monkeypatch, {}, "index")  # untouched: installed
    assert _installed(root, "studio_fake_ok") and any("studio_workbench" in a for a in env.actions)
    folder = root / __version__
    modes = {name: (folder / name).stat().st_mode & 0o777 for name in ("venv", "studio-env.json", "wheels")}
    assert modes == {"venv": 0o700, "studio-env.json": 0o600, "wheels": 0o700}, {k: oct(v) for k, v in modes.items()}


@pytest.mark.slow
def test_an_uploaded_dependency_wheel_changed_on_the_host_is_refused(sshd_host, tmp_path, monkeypatch):
    root = tmp_path / "engines"
    wheel = _fake_studio_wheel(tmp_path / "built", "studio_fake_ok")
    _tamper_after_upload(monkeypatch, "platformdirs-", "platformdirs_planted")
    pins = {"platformdirs": metadata.version("platformdirs")}
    with pytest.raises(UserError) as caught:
        _ensure(sshd_host, root, wheel, monkeypatch, pins, "upload")
    assert not _installed(root, "platformdirs_planted")
    assert "not the one Studio sent" in str(caught.value), caught.value


def test_the_recorded_wheel_sha256_is_compared_on_reuse():
    from studio.runs.engine_env import parse_probe, plan

    found = parse_probe('env=/x\nmarker={"source": "s", "python": "3.12.3", "wheel_sha256": "aa"}\n'
                        'report={"python": "3.12.3", "studio-workbench": "0.1.0"}')
    assert plan(found, "s", {}, "aa") == (False, {}, False)   # the same bytes: nothing to do
    assert plan(found, "s", {}, "bb") == (False, {}, True)    # same sources, other bytes: installed again
