"""The HostContext's connection pool against the real sshd: reuse a live login, replace a dead one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from studio.core.jobs import run_job
from studio.remote.known_hosts import UnknownHostKey
from studio.remote.context import HostContext
from studio.remote.hosts import HostStore
from studio.targets import SshTarget, collect, target_for


def _context(sshd_host, tmp_path: Path) -> HostContext:
    entry, known = sshd_host
    store = HostStore(tmp_path / "hosts.toml")
    store.put(entry)
    return HostContext(store=store, known_hosts=known)


def test_jobs_on_one_host_share_one_login_and_a_dead_one_is_replaced(sshd, sshd_host, tmp_path):
    context = _context(sshd_host, tmp_path)
    try:
        first = target_for(context, "testhost")
        status, lines = collect(first.run(["sh", "-c", "echo $PPID"]))
        assert status == 0
        second = target_for(context, "testhost")  # another job, another target object
        assert collect(second.run(["true"]))[0] == 0
        assert second.connection is first.connection and context.connects == 1
        first.close()  # a target on the shared context leaves the pooled login open
        assert context.pooled()[0].alive

        sshd.kill_sessions()  # the host drops the link
        deadline = time.monotonic() + 5
        while context.pooled()[0].alive and time.monotonic() < deadline:
            time.sleep(0.05)
        third = target_for(context, "testhost")
        assert collect(third.run(["echo", "again"]))[1][0].text == "again"
        assert context.connects == 2 and len(context.pooled()) == 1
    finally:
        context.close()
    assert context.pooled() == []


def test_an_edited_entry_does_not_reuse_the_old_login(sshd_host, tmp_path):
    from dataclasses import replace

    context = _context(sshd_host, tmp_path)
    try:
        entry = context.entry("testhost")
        conn = context.connection(entry)
        assert context.connection(replace(entry, toolkit="/elsewhere")) is conn  # toolkit: same login
        moved = replace(entry, host="localhost")  # another address: a new login (its key is not known)
        with pytest.raises(UnknownHostKey):
            context.connection(moved)
        assert context.connection(entry) is conn
    finally:
        context.close()


def test_put_get_through_the_pool_are_atomic_and_exact(sshd_host, tmp_path):
    context = _context(sshd_host, tmp_path)
    data = bytes(range(256)) * 5000
    source = tmp_path / "in.bin"
    source.write_bytes(data)
    real = tmp_path / "real-root"
    real.mkdir()
    (tmp_path / "root-link").symlink_to(real)
    try:
        entry = context.entry("testhost")
        entry.extra["deploy_root"] = str(tmp_path / "root-link")
        target = SshTarget(entry, context)
        work = target.workdir("pool test")
        assert work == str(real / "pool test")  # created, and symlink-free
        run_job(target.put(source, f"{work}/copy.bin"))
        run_job(target.get(f"{work}/copy.bin", tmp_path / "back" / "copy.bin"))
        assert (tmp_path / "back" / "copy.bin").read_bytes() == data
        assert sorted(p.name for p in Path(work).iterdir()) == ["copy.bin"]  # no temporary left
        assert sorted(p.name for p in (tmp_path / "back").iterdir()) == ["copy.bin"]
    finally:
        context.close()
