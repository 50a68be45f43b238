"""studio profile cluster --free: every idle gap of a rank's device labelled with its cause, checked
against msprof-analyze's free_analysis recipe on the real db export (every gap: --top_num large), on
the real text export (which the recipe cannot read) against the recipe's own labelling function fed
from the raw trace_view.json, and on synthetic clusters whose slow host is known by construction."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from studio.tools.profiler.cluster.free_gaps import open_free
from tests.tools import synthetic_cluster
from tests.tools.peer_recipes import run_recipes

TEXT2 = "msinsight_text_2rank_level2"


@pytest.fixture(scope="module")
def folders(real_profiles, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("free")
    out = {key: shutil.copytree(real_profiles / "cluster_pytorch" / name / "level2", root / key / "level2")
           for key, name in (("db2", "msinsight_db_2rank_level2"), ("text2", TEXT2),
                             ("qwen4", "msinsight_st_4rank_mindspeed_qwen3"))}
    out["synthetic"] = synthetic_cluster.build(root / "synthetic", launch_lag_rank=0)
    return out


@pytest.fixture(scope="module")
def peer(folders, tmp_path_factory) -> dict[str, Path]:
    """The recipe's free_analysis.csv for the db set and the synthetic (every gap, not its top 10)."""
    keys = ("db2", "synthetic")
    root = run_recipes({key: ["-m", "free_analysis", "-d", str(folders[key]), "--export_type", "text", "--top_num",
                              "1000000"] for key in keys}, tmp_path_factory)
    return {key: root / key / "cluster_analysis_output" / "FreeAnalysis" / "free_analysis.csv" for key in keys}


def _peer_label(reason: str) -> str:
    for prefix, label in (("Idle Pytorch layer", "python idle"), ("Abnormal CANN layer: long time", "CANN launch gap"),
                          ("Abnormal CANN layer: long node", "CANN long launch"),
                          ("Device task running", "device task"), ("Skip", "unexplained")):
        if reason.startswith(prefix):
            return label
    return reason


def _our_label(label: str) -> str:
    return "device task" if label in ("memcpy running", "device task running") else label


def _check_against_peer(report, csv_path: Path) -> int:
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    ours = {(g["rank"], g["start_ns"]): g for g in report.gaps}
    assert len(rows) == len(ours) > 0
    for row in rows:
        gap = ours[(int(row["Rank ID"]), int(Decimal(row["Start Time(us)"]) * 1000))]
        assert gap["end_ns"] == int(Decimal(row["End Time(us)"]) * 1000)
        assert gap["duration_us"] == pytest.approx(float(row["Duration(us)"]), abs=1e-3)
        assert _our_label(gap["label"]) == _peer_label(row["Reason"]), (row, gap)
        if row["Pytorch Idle Time(us)"]:
            # the recipe's PyTorch and CANN times pass through float64 (text columns, and NULLs from its left
            # joins, make pandas read them as floats): at epoch nanoseconds that is a 256 ns grid, so its
            # differences are off by up to that; Studio reads them as integers (the synthetic test checks exactness)
            assert gap["python_idle_us"] == pytest.approx(float(row["Pytorch Idle Time(us)"]), abs=0.26)
            assert gap["cann_idle_us"] == pytest.approx(float(row["Cann Idle Time(us)"]), abs=0.26)
        if row["Reason"].startswith("Device task running"):
            kinds = ", ".join(f"{v} {k} tasks" for k, v in gap["device_tasks"].items())
            assert row["Reason"].startswith(f"Device task running: {kinds}")
            if "max remaining free" in row["Reason"]:
                remaining = float(row["Reason"].rsplit(" ", 2)[-2])
                assert gap["remaining_free_us"] == pytest.approx(remaining, abs=1e-3)
    return len(rows)


def test_every_gap_equals_free_analysis_on_real_db_export(folders, peer):
    report = open_free(folders["db2"])
    assert _check_against_peer(report, peer["db2"]) == 180
    labels = {t["label"] for t in report.totals}
    assert {"python idle", "CANN launch gap", "memcpy running"} <= labels
    for rank in report.ranks:  # the totals per label add up to the rank's free time
        assert sum(t["total_us"] for t in report.totals if t["rank"] == rank["rank"]) == pytest.approx(rank["free_us"])


def _raw_trace(path: Path):
    """The recipe's two inputs built from the raw trace_view.json with pandas: the gaps (the Overlap
    Analysis lane's Free slices) and its link table (task, its CANN call by connection_id, its
    PyTorch op by the async_npu flow)."""
    import pandas as pd

    events = json.loads(path.read_text())
    pid = {e["args"]["name"]: e["pid"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}

    def ns(value) -> int:
        return int(Decimal(str(value)) * 1000)

    def slices(process: str) -> list[dict]:
        return [e for e in events if e.get("pid") == pid[process] and e.get("ph") == "X"]

    free = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in slices("Overlap Analysis") if e["name"] == "Free"]
    cann = {e["args"]["connection_id"]: e for e in slices("CANN") if "connection_id" in e.get("args", {})}
    python = {(e["tid"], e["ts"]): e for e in slices("Python")}
    starts = {e["id"]: (e["tid"], e["ts"]) for e in events if e.get("ph") == "s" and e.get("cat") == "async_npu"}
    op_of = {(e["tid"], e["ts"]): python.get(starts.get(e["id"])) for e in events
             if e.get("ph") == "f" and e.get("cat") == "async_npu"}
    rows = []
    for e in slices("Ascend Hardware"):
        c, p = cann.get(e["args"].get("connection_id")), op_of.get((e["tid"], e["ts"]))
        rows.append({"task_type": e["name"] if e["name"].isupper() else e["args"]["Task Type"],
                     "task_ts": ns(e["ts"]), "task_end": ns(e["ts"]) + ns(e["dur"]),
                     "cann_ts": ns(c["ts"]) if c else 0, "cann_end": ns(c["ts"]) + ns(c["dur"]) if c else 0,
                     "pytorch_ts": ns(p["ts"]) if p else None, "pytorch_end": ns(p["ts"]) + ns(p["dur"]) if p else 0})
    return free, pd.DataFrame(rows).sort_values("task_ts", kind="stable")


def test_text_export_equals_recipe_logic_on_raw_trace(folders):
    """The recipe cannot read a text export; its own labelling function, fed with the gaps and links
    built from the raw trace_view.json here, gives the labels Studio gives, gap by gap; and each rank's
    free time equals step_trace_time.csv's Free."""
    fa = pytest.importorskip("msprof_analyze.cluster_analyse.recipes.free_analysis.free_analysis")
    recipe = object.__new__(fa.FreeAnalysis)  # only its labelling method is used: no output folder is made
    report = open_free(folders["text2"])
    for rank in (0, 1):
        out = folders["text2"] / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT"
        free, links = _raw_trace(out / "trace_view.json")
        ours = sorted((g for g in report.gaps if g["rank"] == rank), key=lambda g: g["start_ns"])
        # msprof's Free slices are stamped to 10 ns in trace_view.json; the merged busy time to 1 ns
        assert len(ours) == len(free) == 90
        for gap, (start, end) in zip(ours, free):
            assert abs(gap["start_ns"] - start) <= 20 and abs(gap["end_ns"] - end) <= 20
            theirs = recipe.analyze_free_reason(rank, gap["start_ns"], gap["end_ns"], links)
            assert _our_label(gap["label"]) == _peer_label(theirs.reason), (gap, theirs.reason)
            if theirs.pytorch_idle_time is not None:
                assert gap["python_idle_us"] * 1000 == pytest.approx(theirs.pytorch_idle_time, abs=1)
        with open(out / "step_trace_time.csv", newline="") as handle:
            step_free = float(next(csv.DictReader(handle))["Free"])
        mine = next(r["free_us"] for r in report.ranks if r["rank"] == rank)
        assert mine == pytest.approx(step_free, abs=0.5)


def test_synthetic_slow_host_labelled(folders, peer):
    """Rank 1's Python stalls before its 16th kernel, rank 0's CANN launches fall behind from its
    10th: each rank's longest gap says so, with the stall's length; the recipe agrees gap by gap."""
    report = open_free(folders["synthetic"])
    longest = {r: max((g for g in report.gaps if g["rank"] == r), key=lambda g: g["duration_us"]) for r in (0, 1, 2)}
    assert longest[1]["label"] == "python idle"
    assert longest[1]["python_idle_us"] * 1000 == synthetic_cluster.HOST_STALL_NS + synthetic_cluster.OP_NS + 2_000
    assert longest[0]["label"] == "CANN launch gap"
    assert f"{synthetic_cluster.LAUNCH_LAG_NS / 1000:,.3f} µs more than before" in longest[0]["reason"]
    # rank 2's slow kernels keep its device busy: no gap of a millisecond
    assert longest[2]["duration_us"] < 1000 > longest[2]["duration_us"]
    assert longest[0]["duration_us"] > 1000 and longest[1]["duration_us"] > 1000
    _check_against_peer(report, peer["synthetic"])


def test_ranks_without_timeline_warned_and_cli(folders):
    report = open_free(folders["qwen4"])
    assert report.gaps == [] and "rank(s) 0, 1, 2, 3: no device timeline" in report.warnings[0]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "studio", "profile", "cluster", str(folders["synthetic"]), "--free",
                           "--json"], capture_output=True, text=True, env=env, timeout=120, check=True)
    data = json.loads(done.stdout)
    assert set(data) >= {"gaps", "totals", "ranks", "rank_folders"}
    assert {g["label"] for g in data["gaps"]} >= {"python idle", "CANN launch gap"}
    text = subprocess.run([sys.executable, "-m", "studio", "profile", "cluster", str(folders["text2"]), "--free",
                           "--top", "2"], capture_output=True, text=True, env=env, timeout=120, check=True).stdout
    assert "memcpy running" in text and text.count(" longest (at:") == 2
    both = subprocess.run([sys.executable, "-m", "studio", "profile", "cluster", str(folders["text2"]), "--free",
                           "--comm"], capture_output=True, text=True, env=env, timeout=120)
    assert both.returncode != 0 and "two reports" in both.stderr


def test_on_hosts_takes_one_report_at_a_time():
    """--free and --comm run on hosts (tests/e2e/test_cluster_on_hosts.py); both at once are two reports."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "studio", "profile", "cluster", "--on", "node1:/data/prof", "--free",
                           "--comm"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and "two reports" in done.stderr
