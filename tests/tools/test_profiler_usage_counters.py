"""Usage counters as counter tracks, with their source named: the real db export's HBM, LLC, NPU
memory, AI Core frequency, accelerator PMU and SoC tables against plain sqlite queries; the real
text export's per-accelerator PMU counters against a plain json computation; host usage tables."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import defaultdict

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.profiler.loader import open_profile

DB_RANKS = "cluster_pytorch/msinsight_db_2rank_level2/level2"
TEXT_RANK0 = "cluster_pytorch/msinsight_text_2rank_level2/level2/rank0_ascend_pt"


def load(path):
    return run_job(open_profile(path, use_cache=False))


def series(trace):
    return {(c.process, c.name): c for c in trace.counters}


def plain(db_path, sql):
    """Rows of ``sql`` grouped by their first column (the series name), as (ts, value) lists."""
    db = sqlite3.connect(f"file:{db_path}?immutable=1", uri=True)
    out = defaultdict(list)
    for name, ts, value in db.execute(sql):
        out[name].append((int(ts), float(value)))
    db.close()
    return out


@pytest.mark.parametrize("rank", [0, 1])
def test_db_usage_tables_are_counter_tracks_equal_to_plain_sqlite(real_profiles, rank):
    folder = real_profiles / DB_RANKS / f"rank{rank}_ascend_pt"
    db_path = folder / "ASCEND_PROFILER_OUTPUT" / f"ascend_pytorch_profiler_{rank}.db"
    trace = load(folder)
    got = series(trace)
    join = "JOIN STRING_IDS s ON s.id = {t}.{c}"
    expected = {
        "HBM": plain(db_path, "SELECT 'HBM ' || hbmId || ' ' || s.value || '/Bandwidth (B/s)', timestampNs, "
                              "bandwidth FROM HBM " + join.format(t="HBM", c="type")),
        "LLC": {**plain(db_path, "SELECT 'LLC ' || llcId || ' ' || s.value || '/Hit Rate (%)', timestampNs, hitRate "
                                 "FROM LLC " + join.format(t="LLC", c="mode")),
                **plain(db_path, "SELECT 'LLC ' || llcId || ' ' || s.value || '/Throughput (B/s)', timestampNs, "
                                 "throughput FROM LLC " + join.format(t="LLC", c="mode"))},
        "NPU MEM": {**plain(db_path, "SELECT s.value || '/HBM (B)', timestampNs, hbm FROM NPU_MEM "
                                     + join.format(t="NPU_MEM", c="type")),
                    **plain(db_path, "SELECT s.value || '/DDR (B)', timestampNs, ddr FROM NPU_MEM "
                                     + join.format(t="NPU_MEM", c="type"))},
        "AI Core Freq": plain(db_path, "SELECT 'AI Core Freq (MHz)', timestampNs, freq FROM AICORE_FREQ"),
        "Acc PMU": plain(db_path, "SELECT 'Accelerator ' || accId || '/readBwLevel (level)', timestampNs, "
                                  "readBwLevel FROM ACC_PMU"),
        "Stars Soc Info": plain(db_path, "SELECT 'Mata Bw Level (level)', timestampNs, mataBwLevel "
                                         "FROM SOC_BANDWIDTH_LEVEL"),
    }
    table = {"HBM": "HBM", "LLC": "LLC", "NPU MEM": "NPU_MEM", "AI Core Freq": "AICORE_FREQ", "Acc PMU": "ACC_PMU",
             "Stars Soc Info": "SOC_BANDWIDTH_LEVEL"}
    for process, by_name in expected.items():
        assert by_name, process
        for name, samples in by_name.items():
            counter = got[(process, name)]
            samples.sort(key=lambda s: s[0])
            assert (counter.times + trace.origin_ns).tolist() == [t for t, _ in samples], name
            assert np.allclose(counter.values, [v for _, v in samples]), name
            assert counter.source == f"{db_path.name}: {table[process]}"
    # every HBM stack x direction and every accelerator has its own track (8 and 28 on this card)
    assert len([k for k in got if k[0] == "HBM"]) == len(expected["HBM"]) == 8
    assert len([k for k in got if k[0] == "Acc PMU"]) == 4 * len(expected["Acc PMU"])
    assert f"{db_path.name}: HBM" in trace.facts["counters source"]


def test_text_acc_pmu_counters_are_split_per_accelerator(real_profiles):
    path = real_profiles / TEXT_RANK0 / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(path.read_text())
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    expected = defaultdict(list)
    for e in events:
        if e.get("ph") == "C" and names.get(e["pid"]) == "Acc PMU":
            expected[f"{e['name']} acc_id {e['args']['acc_id']}"].append((float(e["ts"]), e["args"]["value"]))
    trace = load(real_profiles / TEXT_RANK0)
    got = {c.name: c for c in trace.counters if c.process == "Acc PMU"}
    assert set(got) == set(expected) and len(got) == 4 * 28
    for name, samples in expected.items():
        samples.sort()
        assert got[name].values.tolist() == [float(v) for _, v in samples]
        assert got[name].source == "trace_view.json"
    assert "trace_view.json" in trace.facts["counters source"]


def test_host_usage_tables_become_host_counter_tracks(real_profiles, tmp_path):
    """msprof --host-sys writes CPU_USAGE / HOST_MEM_USAGE / HOST_DISK_USAGE / HOST_NETWORK_USAGE
    (msprof's table fields); no permissively licensed export holds them, so they are added to a copy
    of the real database, inside its session."""
    source = real_profiles / DB_RANKS / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    folder = tmp_path / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir()
    target = folder / source.name
    shutil.copyfile(source, target)
    db = sqlite3.connect(target)
    start, end = db.execute("SELECT startTimeNs, endTimeNs FROM SESSION_TIME_INFO").fetchone()
    times = [start + (end - start) * i // 4 for i in range(4)]
    db.execute("CREATE TABLE CPU_USAGE (timestampNs INTEGER, cpuId TEXT, usage NUMERIC)")
    db.executemany("INSERT INTO CPU_USAGE VALUES (?, ?, ?)",
                   [(t, cpu, 10.0 * i + int(cpu == "Avg")) for i, t in enumerate(times) for cpu in ("0", "1", "Avg")])
    for table in ("HOST_MEM_USAGE", "HOST_DISK_USAGE", "HOST_NETWORK_USAGE"):
        db.execute(f"CREATE TABLE {table} (timestampNs INTEGER, usage NUMERIC)")
        db.executemany(f"INSERT INTO {table} VALUES (?, ?)", [(t, 5.0 + i) for i, t in enumerate(times)])
    db.commit()
    db.close()
    trace = load(folder)
    got = series(trace)
    assert got[("CPU Usage", "CPU Avg (%)")].values.tolist() == [1.0, 11.0, 21.0, 31.0]
    assert got[("CPU Usage", "CPU 1 (%)")].values.tolist() == [0.0, 10.0, 20.0, 30.0]
    assert (got[("CPU Usage", "CPU 0 (%)")].times + trace.origin_ns).tolist() == times
    for process, table in (("Memory Usage", "HOST_MEM_USAGE"), ("Disk Usage", "HOST_DISK_USAGE"),
                           ("Network Usage", "HOST_NETWORK_USAGE")):
        counter = got[(process, f"{process} (%)")]
        assert counter.values.tolist() == [5.0, 6.0, 7.0, 8.0]
        assert counter.source == f"{source.name}: {table}"
    # host rows sort below the device's
    assert got[("CPU Usage", "CPU 0 (%)")].process_sort > got[("HBM", "HBM 0 read/Bandwidth (B/s)")].process_sort
