"""The real msprof database: read without writing beside it, other-clock events, loose folders,
damaged files."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import stat
import subprocess
import sys

import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.profiler.db_reader import OUTSIDE_TABLE
from studio.tools.profiler.loader import open_profile


def load(path):
    return run_job(open_profile(path, use_cache=False))


@pytest.fixture
def db_copy(ascend_fixtures, tmp_path):
    """A copy of msprof_0.db alone in a folder (the fixture folder may already hold -shm/-wal)."""
    folder = tmp_path / "share"
    folder.mkdir()
    target = folder / "msprof_0.db"
    shutil.copyfile(ascend_fixtures / "msprof" / "msprof_0.db", target)
    return target


def test_wal_database_opens_without_writing_beside_it(db_copy):
    header = db_copy.read_bytes()[:20]
    assert header[18] == header[19] == 2  # the fixture really is a WAL-mode database
    folder = db_copy.parent
    os.chmod(db_copy, stat.S_IRUSR | stat.S_IRGRP)
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)  # a read-only share (root ignores this: see below)
    try:
        trace = load(db_copy)
        assert trace.size > 0
        # the check that holds even as root: nothing appeared beside the user's file
        assert sorted(p.name for p in folder.iterdir()) == ["msprof_0.db"]
    finally:
        os.chmod(folder, stat.S_IRWXU)
        os.chmod(db_copy, stat.S_IRUSR | stat.S_IWUSR)


def test_plain_sqlite_read_only_open_does_write_beside_it(db_copy):
    """The reason for the above: SQLite's own mode=ro writes -shm/-wal next to a WAL database."""
    db = sqlite3.connect(f"file:{db_copy}?mode=ro", uri=True)
    db.execute("select count(*) from TASK").fetchone()
    db.close()
    assert (db_copy.parent / "msprof_0.db-shm").exists()


def test_rows_still_in_a_wal_file_are_read_from_a_private_copy(db_copy):
    """immutable=1 would ignore committed rows still in a -wal file: those are read from a copy."""
    from studio.tools.profiler.db_reader import count_events

    writer = sqlite3.connect(db_copy)  # a writer keeps its WAL (and its rows) until it closes
    writer.execute("pragma wal_autocheckpoint=0")
    row = writer.execute("select * from CANN_API limit 1").fetchone()
    writer.execute(f"insert into CANN_API values ({','.join('?' * len(row))})", row)
    writer.commit()
    try:
        assert (db_copy.parent / "msprof_0.db-wal").stat().st_size > 0
        truth = sum(writer.execute(f"select count(*) from {t}").fetchone()[0]
                    for t in ("TASK", "CANN_API", "MSTX_EVENTS"))
        files = {p.name: p.stat().st_mtime_ns for p in db_copy.parent.iterdir()}
        assert count_events(db_copy) == truth == 24 + 4 + 13 + 1
        assert {p.name: p.stat().st_mtime_ns for p in db_copy.parent.iterdir()} == files  # nothing touched
    finally:
        writer.close()


def test_other_clock_events_are_set_aside_and_said(db_copy):
    trace = load(db_copy)
    truth = sqlite3.connect(f"file:{db_copy}?immutable=1", uri=True)
    session_start, session_end = truth.execute("select startTimeNs, endTimeNs from SESSION_TIME_INFO").fetchone()
    mstx = truth.execute("select startNs from MSTX_EVENTS").fetchall()
    tasks = truth.execute("select count(*) from TASK").fetchone()[0] + truth.execute("select count(*) from CANN_API").fetchone()[0]
    truth.close()
    far = [s for (s,) in mstx if abs(s - session_start) > 10**15]
    assert len(far) == 13  # the fixture's msproftx ranges are ~55 million seconds away
    assert trace.size == tasks  # the timeline holds tasks and API calls only
    assert trace.span_ns <= session_end - session_start  # not 55,210,533 s
    assert len(trace.tables[OUTSIDE_TABLE].rows) == 13
    assert trace.warnings and "13 msproftx" in trace.warnings[0] and "another clock" in trace.warnings[0]
    assert trace.facts["collection length"] == f"{(session_end - session_start) / 1e9:.3f} s"


def test_cli_prints_the_warning(db_copy, studio_home):
    env = dict(os.environ, PYTHONPATH=str(os.getcwd()))
    proc = subprocess.run([sys.executable, "-m", "studio", "profile", "stats", str(db_copy)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "outside the collection window" in proc.stderr
    assert not (db_copy.parent / "msprof_0.db-shm").exists()


def test_loose_msprof_folder_opens_from_its_richest_source(ascend_fixtures, tmp_path):
    folder = tmp_path / "msprof"
    folder.mkdir()
    for name in ("msprof_0.db", "op_summary_legacy_header.csv", "trace_view_tiny.json"):
        shutil.copyfile(ascend_fixtures / "msprof" / name, folder / name)
    from studio.core import formats

    assert formats.detect(folder).format.panel == formats.PROFILER
    trace = load(folder)
    db = load(folder / "msprof_0.db")
    assert trace.size == db.size > 0  # the database (tasks + API calls) beats 0 trace slices and 21 CSV rows
    assert "msprof_0.db" in trace.facts["timeline source"]
    assert "trace_view_tiny.json (0 slices)" in trace.facts["not drawn"]
    assert "op_summary_legacy_header.csv (21 rows)" in trace.facts["not drawn"]
    assert "op_summary" in trace.tables and len(trace.tables["op_summary"].rows) == 21
    assert sorted(p.name for p in folder.iterdir()) == ["msprof_0.db", "op_summary_legacy_header.csv",
                                                         "trace_view_tiny.json"]


def test_damaged_databases_end_in_user_errors(ascend_fixtures, tmp_path):
    source = (ascend_fixtures / "msprof" / "msprof_0.db").read_bytes()
    zeroed = tmp_path / "msprof_zero.db"
    zeroed.write_bytes(bytes(len(source)))
    with pytest.raises(UserError, match="msprof SQLite database") as info:
        load(zeroed)
    assert "export it again" in str(info.value).lower()
    outcomes = {"ok": 0, "refused": 0}
    for seed in range(60):
        rng = random.Random(seed)
        data = bytearray(source)
        if seed % 2:
            for _ in range(rng.randint(1, 40)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        else:
            start = rng.randrange(100, len(data))
            data[start:start + 4096] = bytes(min(4096, len(data) - start))
        path = tmp_path / f"msprof_{seed}.db"
        path.write_bytes(bytes(data))
        try:
            load(path)
            outcomes["ok"] += 1
        except UserError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0 and sum(outcomes.values()) == 60
    assert not list(tmp_path.glob("*-shm")) and not list(tmp_path.glob("*-wal"))
