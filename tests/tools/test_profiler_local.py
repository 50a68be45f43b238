"""Local profiling with ONNX Runtime on a generated model, and the annotation API."""

from __future__ import annotations

import csv
import json

import numpy as np
import onnx
import pytest
from profiler_helpers import conv_exp_matmul

import studio.core.profile
from studio.core import formats
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.profiler import stats
from studio.tools.profiler.loader import open_profile
from studio.tools.profiler.local_run import profile_model


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    """Conv -> Exp -> MatMul (nothing ORT fuses away), generated (deterministic)."""
    return conv_exp_matmul(tmp_path_factory.mktemp("model") / "small.onnx", channels=4, size=8, name="small")


def test_local_run_writes_a_folder_the_profiler_reads(small_model, tmp_path):
    out = tmp_path / "prof"
    x = tmp_path / "x.npy"
    np.save(x, np.ones((1, 3, 8, 8), np.float32))
    result = run_job(profile_model(small_model, out, iterations=5, warmup=2, inputs={"x": x}))
    assert len(result.latencies_ms) == 5
    lat = result.latency()
    assert lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"] and result.throughput > 0
    assert formats.detect(out).format.id == "studio_profile"
    with (out / "op_statistic.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {r["OP Type"] for r in rows} >= {"Exp", "MatMul"}
    assert all(int(r["Count"]) == 5 for r in rows)  # measured iterations only, not the warm-ups
    trace = run_job(open_profile(out, use_cache=False))
    names = set(trace.names)
    assert {"exp0", "matmul0", "iteration 1", "iteration 5", "warm-up 1", "create session"} <= names
    assert {c.name for c in trace.counters} >= {"CPU (%)", "Memory (RSS MiB)"}
    assert trace.model_path and trace.model_path.endswith("small.onnx")
    assert "latency mean / p50 / p90 / p99" in trace.facts
    exp = next(s for s in stats.by_name(trace) if s.name == "exp0")
    assert exp.count == 7  # warm-ups are on the timeline too
    raw = run_job(open_profile(out / "onnxruntime_profile.json", use_cache=False))  # ORT's own file
    assert {"exp0", "matmul0", "model_run"} <= set(raw.names)
    assert raw.tracks[0].process.startswith("ONNX Runtime (pid")  # ORT names no processes
    summary = json.loads((out / "studio_profile.json").read_text())
    assert summary["iterations"] == 5 and summary["latency_ms"]["p99"] == pytest.approx(lat["p99"])


def test_bad_inputs_are_user_errors(small_model, tmp_path):
    with pytest.raises(UserError, match="no input named"):
        run_job(profile_model(small_model, tmp_path / "o", 1, 0, inputs={"nope": tmp_path / "x.npy"}))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    with pytest.raises(UserError, match="cannot load"):
        run_job(profile_model(bad, tmp_path / "o2", 1, 0))


def test_annotation_api(tmp_path):
    studio.core.profile.mark("ignored outside a recording")
    with studio.core.profile.recording() as rec:
        with studio.core.profile.range("preprocess"):
            studio.core.profile.mark("halfway")
    assert [e[0] for e in rec.events] == ["halfway", "preprocess"]
    trace = run_job(open_profile(rec.write_chrome(tmp_path / "a.json"), use_cache=False))
    assert trace.slice_name(0) == "preprocess" and trace.instant_time.size == 1
    assert trace.tracks[0].process == "Annotations (studio.profile)"


def test_demo_adds_a_unet_profile_once(tmp_path):
    from studio.tools.demo.models import build_unet
    from studio.tools.profiler.demo import add_to_demo

    (tmp_path / "models").mkdir()
    onnx.save(build_unet(), tmp_path / "models" / "unet.onnx")
    shown = run_job(add_to_demo(tmp_path))
    assert shown == [tmp_path / "profiles" / "unet_cpu"]
    assert formats.detect(shown[0]).format.panel == formats.PROFILER
    stamp = (shown[0] / "trace_view.json").stat().st_mtime_ns
    assert run_job(add_to_demo(tmp_path)) == shown  # second start: reused, not run again
    assert (shown[0] / "trace_view.json").stat().st_mtime_ns == stamp
