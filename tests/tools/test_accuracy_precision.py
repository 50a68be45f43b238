"""``studio accuracy precision``: the fewest ops to keep in FP32 so the model passes in FP16, found by
delta debugging, shown minimal, written for the converter and for ATC; the FP16 simulation keeps
a kept op's output FP32 only for FP32 readers, as a device does."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from studio.core.jobs import run_job
from studio.tools.accuracy.fp16_sim import simulate_fp16
from studio.tools.accuracy.precision import _ddmin, find_fp32_set
from studio.tools.demo.journeys import build_fp16_frontend, frames_with_silence


@pytest.fixture
def frontend(tmp_path):
    path = tmp_path / "fp16_frontend.onnx"
    onnx.save(build_fp16_frontend(), path)
    return path


def _log_mel(model, frames, keep=()):
    sim = simulate_fp16(model, set(keep))[0]
    with np.errstate(all="ignore"):
        return ort.InferenceSession(sim.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, {"frames": frames})[0]


def test_keeping_the_floor_add_alone_is_not_enough_on_a_device():
    """The Add keeps 1e-10 in FP32, but the FP16 Log reading it gets it rounded to 0: both must stay."""
    model, silent = build_fp16_frontend(), frames_with_silence()
    assert np.isneginf(_log_mel(model, silent)).any()
    assert np.isneginf(_log_mel(model, silent, {"log/add_floor"})).any()
    assert np.isfinite(_log_mel(model, silent, {"log/add_floor", "log/log"})).all()


def test_underflow_needs_the_floor_and_the_log(frontend, tmp_path):
    result = run_job(find_fp32_set(frontend, tmp_path / "set", inputs={"frames": frames_with_silence()}))
    assert result.keep == ["log/add_floor", "log/log"] and result.minimal
    assert result.outputs_after == {"log_mel": "passes"} and result.outputs_before["log_mel"] != "passes"
    assert (tmp_path / "set" / "keep_fp32.txt").read_text().split() == result.keep
    assert (tmp_path / "set" / "keep_dtype.cfg").read_text().split() == result.keep
    mixlist = json.loads((tmp_path / "set" / "modify_mixlist.json").read_text())
    assert mixlist == {"black-list": {"to-add": ["Add", "Log"]}}


def test_overflow_keeps_the_chain_up_to_the_log_and_each_op_is_needed(frontend, tmp_path):
    result = run_job(find_fp32_set(frontend, tmp_path / "set"))
    assert result.minimal and "power/real_sq" in result.keep and "log/log" in result.keep
    model = build_fp16_frontend()
    frames = np.random.default_rng(0).standard_normal((1, 64, 256)).astype(np.float32)
    assert np.isfinite(_log_mel(model, frames, result.keep)).all()
    for op in result.keep:  # minimality, checked again here
        assert not np.isfinite(_log_mel(model, frames, set(result.keep) - {op})).all(), op


def test_ddmin_finds_a_one_minimal_subset():
    needed = {"c", "f"}
    found = _ddmin(list("abcdefgh"), lambda keep: needed <= set(keep), None)
    assert set(found) == needed


def test_cli_writes_the_files_and_times_the_builds(frontend, tmp_path, studio_home):
    silent = tmp_path / "silent.npy"
    np.save(silent, frames_with_silence())
    done = subprocess.run([sys.executable, "-m", "studio", "accuracy", "precision", str(frontend), "-o",
                           str(tmp_path / "out"), "--input", f"frames={silent}", "--budget", "1", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    builds = {b["build"]: b for b in data["builds"]}
    assert builds["all FP16"]["accuracy"].startswith("fails") and builds["found set"]["accuracy"] == "passes"
    for label in ("all FP16", "found set"):
        latency = builds[label]["latency"]
        assert latency["method"].startswith("interleaved") and latency["ratio_low"] <= latency["ratio"] <= latency["ratio_high"]
    converted = onnx.load(builds["found set"]["model"])
    assert converted.graph.node  # a real converted model, written beside the set
