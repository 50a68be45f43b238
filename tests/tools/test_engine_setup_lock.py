"""Two first-time set-ups of Studio's engine on one host at once (the real loopback sshd): one makes
the venv while the other waits on the host's set-up lock, then finds it ready; a lock left by a
set-up that died is taken over once it is stale."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from test_engine_wheels import _fake_studio_wheel

from studio import __version__


def _ensure(sshd_host, root: Path, wheel: Path):
    from studio.core.jobs import run_job
    from studio.runs import engine_env
    from studio.runs.engine_hashes import sha256_of
    from studio.runs.engine_wheel import EngineWheel
    from studio.targets.ssh import SshTarget

    entry, known = sshd_host
    entry = type(entry)(**{**entry.__dict__, "extra": {**entry.extra, "engine_root": str(root)}})
    with SshTarget(entry, known) as target:
        return run_job(engine_env.ensure_engine(target, wheel=EngineWheel(wheel, sha256_of(wheel), __version__, "src")))


def test_two_first_set_ups_at_once_make_the_engine_once(sshd_host, tmp_path, monkeypatch):
    from studio.runs import engine_env

    monkeypatch.setattr(engine_env, "engine_pins", lambda: {})
    root = tmp_path / "engines"
    wheel = _fake_studio_wheel(tmp_path / "built", "studio_fake_ok")
    results: dict[int, object] = {}

    def one(index: int) -> None:
        try:
            results[index] = _ensure(sshd_host, root, wheel)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results[index] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    errors = [r for r in results.values() if isinstance(r, Exception)]
    assert not errors, errors
    made = [r for r in results.values() if "created the venv" in r.actions]
    assert len(made) == 1, [r.actions for r in results.values()]  # the other waited, then reused it
    assert _ensure(sshd_host, root, wheel).reused
    assert not (root / __version__ / ".setup-lock").exists()


def test_a_stale_set_up_lock_is_taken_over(sshd_host, tmp_path, monkeypatch):
    import os

    from studio.runs import engine_env, engine_lock

    monkeypatch.setattr(engine_env, "engine_pins", lambda: {})
    monkeypatch.setattr(engine_lock, "STALE_S", 3)
    root = tmp_path / "engines"
    lock = root / __version__ / ".setup-lock"
    lock.mkdir(parents=True)
    (lock / "owner").write_text("a set-up that was killed\n")
    old = time.time() - 10
    os.utime(lock, (old, old))
    start = time.monotonic()
    env = _ensure(sshd_host, root, _fake_studio_wheel(tmp_path / "built", "studio_fake_ok"))
    assert "created the venv" in env.actions and time.monotonic() - start < 120
    assert not lock.exists()
