"""studio bench: ONNX Runtime here, and msame / ais_bench / msit (stand-ins) through a local target."""

from __future__ import annotations

import json

import numpy as np
import pytest
from bench_helpers import matmul_model
from standins import fake_om, recorded, use_standins

from studio.runs.where import local_target
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.ops.bench_om import bench_on_target
from studio.tools.bench.ort_bench import bench_model
from studio.tools.bench.result import compare_rows
from studio.core.serial import to_json


def test_ort_bench_stats_match_numpy(tmp_path):
    model = matmul_model(tmp_path / "m.onnx", batch=4)
    r = run_job(bench_model(model, loop=30, warmup=3))
    lat = np.array(r.latencies_ms)
    assert lat.size == 30 and r.loops == 30 and r.warmup == 3 and r.batch == 4
    d = to_json(r)
    assert d["mean_ms"] == pytest.approx(lat.mean()) and d["p50_ms"] == pytest.approx(np.percentile(lat, 50))
    assert d["p99_ms"] == pytest.approx(np.percentile(lat, 99))
    assert (d["min_ms"], d["max_ms"]) == (lat.min(), lat.max())
    assert d["throughput"] == pytest.approx(30 * 4 / (lat.sum() / 1000))


def test_ort_bench_dynamic_dim_needs_a_size(tmp_path):
    model = matmul_model(tmp_path / "dyn.onnx", batch="N")
    with pytest.raises(UserError) as err:
        run_job(bench_model(model, loop=2, warmup=0))
    text = str(err.value)
    assert "'x'" in text and "axis 0" in text and "--input-shape x=N,64" in text
    r = run_job(bench_model(model, loop=2, warmup=0, shapes={"x": (3, 64)}))
    assert r.batch == 3 and "x: [3, 64]" in r.notes[-1]


def test_ort_bench_refuses_om(tmp_path):
    with pytest.raises(UserError, match="only on an Ascend NPU"):
        run_job(bench_model(fake_om(tmp_path / "m.om")))


def test_msame_standin_through_local_target(tmp_path, monkeypatch):
    use_standins(monkeypatch, tmp_path, STANDIN_LATENCY_MS="7.2", STANDIN_SEED="3")
    model = fake_om(tmp_path / "face mask.om")  # a space in the path: every word is quoted
    lines = []
    r = run_job(bench_on_target(local_target(), str(model), "msame", loop=12),
                on_progress=lambda p: lines.append(p.message))
    times = recorded(tmp_path)[-1]["times"]
    warm = np.array(times[1:])
    assert r.compute.mean == pytest.approx(warm.mean(), abs=1e-6)  # msame prints 6 decimals
    assert r.compute.median == pytest.approx(np.percentile(warm, 50))
    assert r.compute.p99 == pytest.approx(np.percentile(warm, 99))
    assert r.loops == 12 and r.tool == "msame" and "'" in r.command
    assert any(line.startswith("Inference time:") for line in lines)


@pytest.mark.parametrize("tool", ["ais_bench", "msit"])
def test_ais_bench_standin_through_local_target(tmp_path, monkeypatch, tool):
    use_standins(monkeypatch, tmp_path, STANDIN_SEED="5")
    model = fake_om(tmp_path / "m.om")
    r = run_job(bench_on_target(local_target(), str(model), tool, loop=40, warmup=2, output=str(tmp_path / "out")))
    rec = recorded(tmp_path)[-1]
    times, h2d = np.array(rec["times"]), np.array(rec["h2d"])
    assert "--warmup_count" in rec["argv"] or "--warmup-count" in rec["argv"]
    assert r.compute.mean == pytest.approx(times.mean()) and r.compute.median == pytest.approx(np.median(times))
    assert r.compute.p99 == pytest.approx(np.percentile(times, 99))
    assert r.h2d.mean == pytest.approx(h2d.mean()) and r.throughput == pytest.approx(1000 / times.mean())
    assert r.tool == "ais_bench" and (r.loops, r.warmup) == (40, 2)
    assert list((tmp_path / "out").glob("*_summary.json"))


def test_bad_om_and_missing_tool(tmp_path, monkeypatch):
    use_standins(monkeypatch, tmp_path)
    bad = tmp_path / "bad.om"
    bad.write_bytes(b"not a model")
    with pytest.raises(UserError) as err:
        run_job(bench_on_target(local_target(), str(bad), "msame", loop=2))
    assert "exit code 1" in str(err.value) and "load model from file failed" in str(err.value)
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: bash reports 127
    target = local_target()
    with pytest.raises(UserError) as err:
        run_job(bench_on_target(_Shell(target), str(bad), "msame", loop=2))
    assert "msame was not found on local" in str(err.value) and "tools/msame" in str(err.value)


class _Shell:
    """Runs through /bin/sh, as a remote target does, so a missing program exits 127."""

    name = "local"

    def __init__(self, target):
        self.target = target

    def toolkit_setup(self):
        return "true"

    def run(self, argv, cwd=None, env_setup=None, cancel=None):
        return self.target.run(["/bin/sh", "-c", " ".join(argv) + " 2>&1"], cwd=cwd, cancel=cancel)


def test_compare_rows_speedup():
    from studio.tools.bench.result import BenchResult, LatencyStats

    base = BenchResult("onnxruntime", "m.onnx", compute=LatencyStats(10.0, 9.0, 20.0, 8.0, 30.0), throughput=100.0)
    new = BenchResult("msame", "m.om", compute=LatencyStats(2.0, 1.8, 4.0, 1.5, 6.0), throughput=500.0)
    rows = {r["figure"]: r for r in compare_rows(base, new)}
    assert rows["mean_ms"]["speedup"] == 5.0 and rows["throughput"]["speedup"] == 5.0
    assert json.dumps(rows)  # plain data


def test_cli_bench_compares_two_onnx_models_interleaved(tmp_path, capsys):
    from studio.cli import main

    model = matmul_model(tmp_path / "m.onnx", batch=2)
    assert main(["bench", str(model), "--compare-with", str(model), "--budget", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    change = data["change"]
    assert data["base"] == data["new"] == str(model) and change["rounds"] >= 3
    assert change["verdict"] == "no significant change" and change["ratio_low"] <= 1 <= change["ratio_high"]
    assert "interleaved" in change["method"] and change["stopped"]
    assert main(["bench", str(model), "--compare-with", str(model), "-o", str(tmp_path / "o")]) == 2
    assert "-o writes one benchmark" in capsys.readouterr().err


def test_cli_bench_json_keys(tmp_path, capsys):
    from studio.cli import main

    model = matmul_model(tmp_path / "dyn.onnx", batch="N")
    assert main(["bench", str(model), "--loop", "5", "--warmup", "1", "--input-shape", "x=2,64", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"mean_ms", "p50_ms", "p99_ms", "min_ms", "max_ms", "throughput"} <= set(data)
    assert main(["bench", str(model), "--loop", "5"]) == 2
    err = capsys.readouterr().err
    assert "axis 0" in err and "--input-shape" in err


def test_bench_folder_opens_in_the_profiler_and_compares(tmp_path, monkeypatch):
    from studio.tools.bench.profile_folder import write_bench_folder
    from studio.tools.profiler.compare import compare
    from studio.tools.profiler.loader import open_profile

    model = matmul_model(tmp_path / "m.onnx", batch=2)
    here = run_job(bench_model(model, loop=15, warmup=2))
    use_standins(monkeypatch, tmp_path, STANDIN_LATENCY_MS="0.5")
    npu = run_job(bench_on_target(local_target(), str(fake_om(tmp_path / "m.om")), "msame", loop=16))
    base = run_job(open_profile(write_bench_folder(here, tmp_path / "ort"), use_cache=False))
    new = run_job(open_profile(write_bench_folder(npu, tmp_path / "npu"), use_cache=False))
    assert base.size == 15 and new.size == 15  # msame's first (cold) loop is not a timed one
    assert base.facts["benchmark"] == "onnxruntime on local (device CPUExecutionProvider)"
    assert "latency mean / p50 / p99" in new.facts
    result = compare(base, new)
    (row,) = result.ops
    assert row.name == "inference" and row.base_count == 15
    assert row.base_avg_us == pytest.approx(np.mean(here.latencies_ms) * 1000, rel=1e-3)
    assert row.new_avg_us == pytest.approx(np.mean(npu.latencies_ms) * 1000, rel=1e-3)
    # per timed loop, not per whole folder: the loops are the iterations
    assert result.base_iterations == 15 and result.iterations_how == "timed loops"
    assert row.base_per_iter_us == pytest.approx(np.mean(here.latencies_ms) * 1000, rel=1e-3)
    assert result.new_latency_ms == pytest.approx(np.mean(npu.latencies_ms), rel=1e-3)
    # the change is judged on the timed loops of both, with its interval (independent: the medians)
    assert result.samples_how == "the benchmark's timed loops" and result.change.base_n == 15
    assert result.change.ratio == pytest.approx(np.median(npu.latencies_ms) / np.median(here.latencies_ms))
    assert result.change.low <= result.change.ratio <= result.change.high
    from studio.tools.bench.with_reference import BenchPair

    pair = BenchPair(npu, here)
    assert to_json(pair)["change"]["ratio"] == pytest.approx(result.change.ratio)
    assert "latency: " in pair.report() and "CI" in pair.report()
    with pytest.raises(UserError, match="not empty"):
        write_bench_folder(here, tmp_path / "ort")
