"""A subfolder exchanged for a symlink in a loop while a plan is applied, on either side.

A process (on the host, or here) swaps ``sub`` — a real folder when the plan was made — with a
symlink to a folder outside the root, back and forth, atomically (``renameat2`` with
``RENAME_EXCHANGE``), for the whole apply. Every write, rename and delete acts on a folder that
was opened (here: a directory handle) or entered (on the host: ``cd -P``, checked with
``pwd -P``) and then by name in it, so nothing lands in, or is deleted from, the outside folder
whatever the timing. Each direction is run many times (the race is won at random moments): the
count of files written or deleted outside must stay 0.
"""

from __future__ import annotations

import ctypes
import os
import shutil
from pathlib import Path

import pytest
from deploy_helpers import write_tree

from studio.core.jobs import run_job
from studio.tools.deploy.deployments import Deployment

RUNS = 20
AT_FDCWD = -100
RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)


def _exchange(a: Path, b: Path) -> None:
    if _libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


SWAP_LOOP = """
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(p) for p in sys.argv[1:3])
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
n = 0
while not stop:
    libc.renameat2(-100, a, -100, b, 2)
    n += 1
    if n == 100:
        print("swapping", flush=True)
print(n, flush=True)
"""


class Swapper:
    """Exchanges ``root/sub`` (a folder) with ``root/.sublink`` (a symlink to ``outside``) in a loop,
    in a process of its own (a thread here would slow the transfer down by holding the GIL)."""

    def __init__(self, root: Path, outside: Path):
        self.sub, self.link = root / "sub", root / ".sublink"
        self.link.symlink_to(outside)
        self.swaps = 0

    def __enter__(self) -> Swapper:
        import subprocess
        import sys

        self.proc = subprocess.Popen([sys.executable, "-c", SWAP_LOOP, str(self.sub), str(self.link)],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "swapping"
        return self

    def __exit__(self, *exc) -> None:
        import signal

        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=10)
        self.swaps = int(out.strip() or 0)
        if self.sub.is_symlink():  # leave the folder in its place
            _exchange(self.sub, self.link)
        self.link.unlink()


@pytest.fixture
def connector(sshd_host):
    """A connection per run, shared by its plan and its apply (each connects otherwise: slower loops)."""
    from studio.remote.connection import connect

    entry, known = sshd_host

    def make():
        conn = connect(entry, known)
        conn.pooled = True  # release() leaves it open until the run ends
        return conn
    return make


OUTSIDE = {f"sub/o{i:02}.bin": b"outside %d\n" % i for i in range(10)}


def _small(prefix: str = "sub/f", count: int = 12) -> dict[str, bytes]:
    return {f"{prefix}{i:02}.txt": b"x" * (100 + i) for i in range(count)}


def _many() -> dict[str, bytes]:
    return _small(count=40)  # deletes are quick: more of them give the swap more moments to fall between


def _big() -> dict[str, bytes]:
    return {f"sub/b{i}.bin": os.urandom(300 * 1024 + i) for i in range(3)}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _one_run(tmp_path: Path, run: int, connector, direction: str, files: dict[str, bytes], delete: bool) -> int:
    """One plan, then its apply under the swapper; the number of files written or deleted outside."""
    from studio.tools.deploy.sync import apply_job, plan_job

    base = tmp_path / f"r{run}"
    local, remote, outside = base / "local", base / "remote", base / "outside"
    source, dest = (local, remote) if direction == "upload" else (remote, local)
    for root in (local, remote):
        (root / "sub").mkdir(parents=True)
    if delete:  # files only the written side has: the plan deletes them there
        write_tree(dest, files)
    else:
        write_tree(source, files)
    outside.mkdir()
    # The outside folder holds files under the very names the run writes or deletes.
    write_tree(outside, {name.split("/", 1)[1]: b"theirs\n" for name in files})
    before = _snapshot(outside)
    deployment = Deployment(name=f"swap{run}", host="testhost", local=str(local), remote=str(remote))
    conn = connector()
    the_plan = run_job(plan_job(deployment, direction, lambda: conn, delete=delete))
    wanted = "delete-remote" if delete and direction == "upload" else "delete-local" if delete else direction
    assert {i.path for i in the_plan.items if i.effective_action(the_plan.delete) == wanted} == set(files)
    with Swapper(dest, outside) as swapper:
        try:
            run_job(apply_job(deployment, the_plan, lambda: conn))
        finally:
            conn.close()
    assert swapper.swaps > 0
    after = _snapshot(outside)
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    shutil.rmtree(base)
    return len(changed)


CASES = {
    "upload (tar batch)": ("upload", _small, False),
    "upload (sftp)": ("upload", _big, False),
    "upload --delete": ("upload", _many, True),
    "download (tar batch)": ("download", _small, False),
    "download (big files)": ("download", _big, False),
    "download --delete": ("download", _many, True),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_a_folder_swapped_in_a_loop_during_apply_is_never_written_or_deleted_through(tmp_path, connector, case,
                                                                                      monkeypatch):
    monkeypatch.setenv("STUDIO_HOME", str(tmp_path / "home"))
    direction, files, delete = CASES[case]
    outside = [_one_run(tmp_path, run, connector, direction, files(), delete) for run in range(RUNS)]
    assert sum(outside) == 0, f"{sum(outside)} files written or deleted outside the root in {RUNS} runs: {outside}"
