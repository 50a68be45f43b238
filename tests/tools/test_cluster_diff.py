"""studio profile compare BASE_DIR NEW_DIR on two folders of ranks: the step split per rank, the
matrix links and each op type's links side by side — checked against the raw tables of two real
runs of one 2-rank job (the db export's analysis.db against the text export's CSV and JSON), against
msprof-analyze's cluster_time_compare_summary where it runs (db exports only), and the step-time
significance against scipy's Welch test."""

from __future__ import annotations

import csv
import json
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from studio.core.jobs import run_job
from studio.core.serial import to_json
from studio.tools.profiler.cluster.diff import _step_change, welch_p
from studio.tools.profiler.cluster_compare import compare_clusters
from studio.tools.profiler.loader import open_profile

PEER = Path(sys.executable).parent / "msprof-analyze"
DB2, TEXT2 = "msinsight_db_2rank_level2", "msinsight_text_2rank_level2"
STEP_DB = {"computing_us": "computing", "communication_not_overlapped_us": "communication_not_overlapped",
           "overlapped_us": "overlapped", "free_us": "free"}
STEP_CSV = {"computing_us": "Computing", "communication_not_overlapped_us": "Communication(Not Overlapped)",
            "overlapped_us": "Overlapped", "free_us": "Free"}


@pytest.fixture(scope="module")
def result(real_profiles) -> dict:
    root = real_profiles / "cluster_pytorch"
    return to_json(run_job(compare_clusters(root / DB2 / "level2", root / TEXT2 / "level2", open_profile)))


def _raw_steps(root: Path) -> dict:
    """(side, rank) -> the step split read straight from analysis.db (db run) and the CSV (text run)."""
    out = {}
    for rank in (0, 1):
        db = sqlite3.connect(f"file:{root / DB2 / 'level2' / f'rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db'}"
                             "?immutable=1", uri=True)
        row = dict(zip([c[0] for c in db.execute("SELECT * FROM StepTraceTime").description],
                       db.execute("SELECT * FROM StepTraceTime").fetchone()))
        db.close()
        out[("base", rank)] = {k: float(row[c]) for k, c in STEP_DB.items()}
        with open(root / TEXT2 / "level2" / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv") as f:
            row = next(csv.DictReader(f))
        out[("new", rank)] = {k: float(row[c]) for k, c in STEP_CSV.items()}
    return out


def _raw_links(root: Path) -> dict:
    """(side, src, dst) -> (MB, ms) of the all-reduce totals between the two ranks, from the raw files."""
    out = {}
    for rank in (0, 1):
        path = root / DB2 / "level2" / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db"
        db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        for src, dst, size, time in db.execute("SELECT src_rank, dst_rank, transit_size, transit_time FROM "
                                               "CommAnalyzerMatrix WHERE hccl_op_name = 'allreduce-total' AND "
                                               "src_rank != dst_rank"):
            out[("base", int(src), int(dst))] = (size, time)
        db.close()
        raw = json.loads((root / TEXT2 / "level2" / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/"
                          "communication_matrix.json").read_text())
        for op, links in raw["step50"]["collective"].items():
            if op.startswith("allreduce-total@"):
                for pair, link in links.items():
                    src, dst = map(int, pair.split("-"))
                    if src != dst:
                        out[("new", src, dst)] = (link["Transit Size(MB)"], link["Transit Time(ms)"])
    return out


def test_step_split_and_links_equal_the_raw_tables(result, real_profiles):
    cluster = result["cluster"]
    raw = _raw_steps(real_profiles / "cluster_pytorch")
    assert cluster["pairing"] == "paired by rank and step number" and len(cluster["steps"]) == 2
    for row in cluster["steps"]:
        assert row["base_step"] == row["new_step"] == 50
        base, new = raw[("base", row["rank"])], raw[("new", row["rank"])]
        for key in STEP_DB:
            assert row[f"{key}_base"] == pytest.approx(base[key]) and row[f"{key}_new"] == pytest.approx(new[key])
            assert row[f"{key}_diff"] == pytest.approx(new[key] - base[key])
        step = lambda side: side["computing_us"] + side["communication_not_overlapped_us"] + side["free_us"]  # noqa: E731
        assert row["step_us_diff"] == pytest.approx(step(new) - step(base))
    links = _raw_links(real_profiles / "cluster_pytorch")
    for rows in (cluster["links"], cluster["op_links"]):
        assert {(r["src"], r["dst"]) for r in rows} == {(0, 1), (1, 0)}
        for r in rows:
            (bs, bt), (ns, nt) = links[("base", r["src"], r["dst"])], links[("new", r["src"], r["dst"])]
            assert r["base_gbps"] == pytest.approx(bs / bt) and r["new_gbps"] == pytest.approx(ns / nt)
            assert r["gbps_change"] == pytest.approx((ns / nt - bs / bt) / (bs / bt))
    assert all(r["op_type"] == "allreduce" for r in cluster["op_links"])
    # one step per side: the change is given, not judged
    assert all(c["p_value"] is None and "not judged" in c["verdict"] for c in cluster["step_change"])


def test_computing_and_communication_equal_cluster_time_compare_summary(real_profiles, tmp_path):
    """msprof-analyze's recipe needs the db export on both sides (its cluster_time_summary first): run on
    two copies of the db run, its computation and communication columns equal Studio's, side by side.
    (Its free leaves out the memory copies not overlapped, so it is not Studio's step-split free.)"""
    if not PEER.exists():
        pytest.skip(f"msprof-analyze not installed next to {sys.executable}")
    src = real_profiles / "cluster_pytorch" / DB2 / "level2"
    base, new = shutil.copytree(src, tmp_path / "base"), shutil.copytree(src, tmp_path / "new")
    runs = [subprocess.Popen([str(PEER), "cluster", "-m", "cluster_time_summary", "-d", str(d), "--export_type", "db"],
                             cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for d in (base, new)]
    assert all(r.wait(timeout=180) == 0 for r in runs)
    subprocess.run([str(PEER), "cluster", "-m", "cluster_time_compare_summary", "-d", str(new), "--bp", str(base),
                    "--export_type", "db"], cwd=tmp_path, capture_output=True, timeout=180, check=True)
    db = sqlite3.connect(f"file:{new / 'cluster_analysis_output/cluster_analysis.db'}?immutable=1", uri=True)
    db.row_factory = sqlite3.Row
    theirs = {r["rank"]: dict(r) for r in db.execute("SELECT * FROM ClusterTimeCompareSummary")}
    db.close()
    ours = to_json(run_job(compare_clusters(base, new, open_profile)))["cluster"]["steps"]
    assert sorted(theirs) == sorted(r["rank"] for r in ours) == [0, 1]
    for row in ours:
        peer = theirs[row["rank"]]
        for key, col in (("computing_us", "computation"), ("communication_not_overlapped_us",
                                                           "communicationNotOverlapComputation"),
                         ("overlapped_us", "communicationOverlapComputation"), ("communication_us", "communication")):
            assert row[f"{key}_new"] == pytest.approx(peer[col], abs=1e-3)
            assert row[f"{key}_base"] == pytest.approx(peer[f"{col}Base"], abs=1e-3)
            assert row[f"{key}_diff"] == pytest.approx(peer[f"{col}Diff"], abs=1e-3)


def test_step_change_judged_with_repeats_as_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    base = [{"rank": 0, "step": i, "computing_us": rng.gauss(100, 3), "communication_not_overlapped_us": 50.0,
             "free_us": 10.0} for i in range(6)]
    slower = [{**r, "computing_us": r["computing_us"] + 12} for r in base]
    same = [{**r, "computing_us": base[-1 - i]["computing_us"] + 0.5} for i, r in enumerate(base)]  # same spread
    (hit,), (miss,) = _step_change(base, slower), _step_change(base, same)
    steps = [r["computing_us"] + 60 for r in base]
    expected = stats.ttest_ind(steps, [s + 12 for s in steps], equal_var=False).pvalue
    assert hit["p_value"] == pytest.approx(expected) and hit["verdict"].startswith("significant change")
    assert miss["p_value"] == pytest.approx(stats.ttest_ind(steps, [s + 0.5 for s in steps], equal_var=False).pvalue)
    assert miss["p_value"] > 0.05 and miss["verdict"].startswith("no significant change")
    # the formula used without scipy gives scipy's p-values
    for _ in range(20):
        a = [rng.gauss(10, 2) for _ in range(rng.randint(2, 9))]
        b = [rng.gauss(11, 3) for _ in range(rng.randint(2, 9))]
        p = stats.ttest_ind(a, b, equal_var=False).pvalue
        import studio.tools.profiler.cluster.diff as diff
        saved = sys.modules.get("scipy")
        sys.modules["scipy"] = None  # import fails: the fallback runs
        try:
            assert diff.welch_p(a, b) == pytest.approx(p, rel=1e-6, abs=1e-12)
        finally:
            sys.modules["scipy"] = saved
        assert welch_p(a, b) == pytest.approx(p)


def test_cli_text_shows_the_split_and_links(real_profiles):
    import os

    root = real_profiles / "cluster_pytorch"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    text = subprocess.run([sys.executable, "-m", "studio", "profile", "compare", str(root / DB2 / "level2"),
                           str(root / TEXT2 / "level2")], capture_output=True, text=True, env=env, timeout=300,
                          check=True).stdout
    assert "step split per rank (ms, base -> new; steps paired by rank and step number" in text
    assert "rank 0: step 124.220 -> 129.863 (+5.643)" in text
    assert "allreduce 0->1 HCCS (unnamed group): 14.820 -> 14.954 GB/s (+0.9%)" in text
