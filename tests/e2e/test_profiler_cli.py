"""`studio profile stats|compare|run` as a user runs them."""

from __future__ import annotations

import json

from test_cli import run_studio as studio


def test_stats_json_on_the_pytorch_trace(ascend_fixtures, studio_home):
    result = studio("profile", "stats", str(ascend_fixtures / "pytorch_npu" / "trace_view.json"),
                    "--json", "--top", "5", home=studio_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["events"] == 4384 and data["span_us"] > 0 and len(data["by_name"]) == 5
    first = data["by_name"][0]
    assert set(first) == {"name", "count", "total_us", "avg_us", "min_us", "max_us", "share", "self_us"}
    totals = [r["total_us"] for r in data["by_name"]]
    assert totals == sorted(totals, reverse=True)


def test_stats_writes_the_cache_only_when_asked_and_reads_it(ascend_fixtures, studio_home, tmp_path):
    """A fresh parse is not stored by default; --store-cache stores it; the next run reads it and
    prints the same figures."""
    import shutil

    from studio.tools.profiler import cache

    trace = tmp_path / "trace_view.json"
    shutil.copy(ascend_fixtures / "pytorch_npu" / "trace_view.json", trace)
    entry = cache.cache_root() / cache.source_key(trace)  # under the test's STUDIO_HOME, as the command's
    first = studio("profile", "stats", str(trace), "--json", home=studio_home)
    assert first.returncode == 0, first.stderr
    assert not entry.exists()
    stored = studio("profile", "stats", str(trace), "--json", "--store-cache", home=studio_home)
    assert (entry / "meta.json").is_file()
    again = studio("profile", "stats", str(trace), "--json", home=studio_home)
    assert json.loads(first.stdout) == json.loads(stored.stdout) == json.loads(again.stdout)


def test_run_then_compare(tmp_path, studio_home):
    from studio.tools.demo.models import build_classifier
    import onnx

    model = tmp_path / "classifier.onnx"
    onnx.save(build_classifier(), model)
    for name in ("a", "b"):
        result = studio("profile", "run", str(model), "-o", str(tmp_path / name), "--iterations", "3",
                        "--warmup", "1", home=studio_home)
        assert result.returncode == 0, result.stderr
        assert "p99" in result.stdout and "throughput" in result.stdout
    result = studio("profile", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", home=studio_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["ops"] and {"delta_us", "speedup", "delta_pct"} <= set(data["ops"][0])
    text = studio("profile", "stats", str(tmp_path / "a"), home=studio_home)
    ops, _, ranges = text.stdout.partition("run ranges (not in the op statistics):")
    assert "iteration 1" not in ops and "model_run" not in ops  # the run's own ranges are not ops
    assert "model_run ×4" in ranges and "iteration" in ranges


def test_errors_exit_2(tmp_path, studio_home):
    bad = tmp_path / "t.json"
    bad.write_text('[{"ph": "X", "name": "a", "ts": 1')
    result = studio("profile", "stats", str(bad), home=studio_home)
    assert result.returncode == 2 and "error:" in result.stderr and "Traceback" not in result.stderr


def test_dynamic_dims_need_a_size_and_the_size_is_printed(tmp_path, studio_home):
    from profiler_helpers import dynamic_detector

    model = dynamic_detector(tmp_path / "det.onnx")
    result = studio("profile", "run", str(model), "-o", str(tmp_path / "p"), home=studio_home)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "input 'x'" in result.stderr and "axis 2 (H)" in result.stderr
    assert "--input-shape x=?,3,?,?" in result.stderr and "--input x=FILE.npy" in result.stderr
    assert not (tmp_path / "p").exists()
    result = studio("profile", "run", str(model), "-o", str(tmp_path / "p"), "--input-shape", "x=1,3,64,80",
                    "--iterations", "2", "--warmup", "1", home=studio_home)
    assert result.returncode == 0, result.stderr
    assert "input x: 1×3×64×80 float32" in result.stdout
    result = studio("profile", "run", str(model), "-o", str(tmp_path / "q"), "--input-shape", "x=1,3,64,80",
                    "--iterations", "1", "--warmup", "0", "--json", home=studio_home)
    assert json.loads(result.stdout)["inputs"]["x"]["shape"] == [1, 3, 64, 80]


def test_missing_files_and_unloadable_models_are_clear_errors(tmp_path, studio_home):
    result = studio("profile", "stats", str(tmp_path / "nope.json"), home=studio_home)
    assert result.returncode == 2 and "File not found" in result.stderr and "Traceback" not in result.stderr
    result = studio("profile", "compare", str(tmp_path / "a"), str(tmp_path / "b"), home=studio_home)
    assert result.returncode == 2 and "File not found" in result.stderr
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    result = studio("profile", "run", str(empty), "-o", str(tmp_path / "out"), home=studio_home)
    assert result.returncode == 2 and "holds no ONNX graph" in result.stderr
    assert "[ONNXRuntimeError]" not in result.stderr and "EndProfiling" not in result.stderr
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("**/ort_*.json"))
    zeroed = tmp_path / "msprof_0.db"
    zeroed.write_bytes(bytes(4096))
    result = studio("profile", "stats", str(zeroed), home=studio_home)
    assert result.returncode == 2 and "msprof SQLite database" in result.stderr and "Traceback" not in result.stderr


def test_compare_prints_per_iteration_and_latency(tmp_path, studio_home):
    from studio.tools.demo.models import build_classifier
    import onnx

    model = tmp_path / "classifier.onnx"
    onnx.save(build_classifier(), model)
    for name, its in (("a", "6"), ("b", "3")):
        result = studio("profile", "run", str(model), "-o", str(tmp_path / name), "--iterations", its,
                        "--warmup", "1", home=studio_home)
        assert result.returncode == 0, result.stderr
    result = studio("profile", "compare", str(tmp_path / "a"), str(tmp_path / "b"), home=studio_home)
    assert result.returncode == 0, result.stderr
    assert "iterations: 6 -> 3" in result.stdout and "latency per iteration (mean)" in result.stdout
    data = json.loads(studio("profile", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json",
                             home=studio_home).stdout)
    assert data["base_iterations"] == 6 and data["new_iterations"] == 3 and data["latency_change_pct"] is not None
