"""The demo's journey models: an audio front-end that drifts in FP16 (overflow with the checks'
random input, underflow with the silent frames shipped beside it) and a Mish classifier for the
advisor's closed loop — each shown with the tool the journey uses, against numpy."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from studio.core.jobs import run_job
from studio.tools.demo.journeys import (
    FLOOR,
    JOURNEY_INPUTS,
    JOURNEY_MODELS,
    build_fp16_frontend,
    frames_with_silence,
)


def _run(model, frames):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"frames": frames})[0]


def test_frontend_is_a_log_mel_power_in_fp32():
    frames = np.random.default_rng(0).standard_normal((1, 64, 256)).astype(np.float32)
    out = _run(build_fp16_frontend(), frames)
    # numpy: the same front-end in float64
    window = np.hanning(256)
    spectrum = np.fft.rfft(frames[0].astype(np.float64) * 10.0 * window, axis=-1)
    power = np.abs(spectrum) ** 2
    from studio.tools.demo.journeys import _mel_filters

    expected = np.log(power @ _mel_filters().astype(np.float64) + FLOOR)
    np.testing.assert_allclose(out[0], expected, rtol=1e-4, atol=1e-3)
    assert power.max() > 65504, "loud frames overflow FP16's range"


def test_fp16_check_finds_the_power_overflowing_first(tmp_path):
    from studio.tools.accuracy.fp16_check import fp16_check_job

    model = tmp_path / "fp16_frontend.onnx"
    model.write_bytes(build_fp16_frontend().SerializeToString())
    result = run_job(fp16_check_job(model, tmp_path / "g", tmp_path / "t"))
    text = str(result)
    assert "overflow" in text.lower() and "power/real_sq" in text


def test_silent_frames_underflow_the_log_floor_in_fp16():
    from studio.tools.accuracy.fp16_sim import simulate_fp16

    model = build_fp16_frontend()
    silent = frames_with_silence()
    fp32 = _run(model, silent)
    fp16 = _run(simulate_fp16(model)[0], silent)
    assert np.isfinite(fp32).all() and fp32[0, -1].min() == pytest.approx(np.log(FLOOR), rel=1e-5)
    assert np.float16(FLOOR) == 0  # the floor itself is lost
    assert np.isneginf(fp16[0, 48:]).all() and np.isfinite(fp16[0, :48]).all()


def test_the_mish_model_is_what_the_advisor_fixes(tmp_path):
    from studio.tools.advisor.engine import advise

    model = tmp_path / "mish_cnn.onnx"
    model.write_bytes(JOURNEY_MODELS["mish_cnn"].build().SerializeToString())
    report = run_job(advise(model=model))
    rules = {f.id for f in report.findings}
    assert "decomposed-mish" in rules


def test_the_demo_workspace_holds_them(tmp_path):
    from studio.tools.demo.workspace import create_demo_workspace

    demo = run_job(create_demo_workspace(tmp_path / "demo"))
    names = {p.name for p in demo.files}
    assert {"fp16_frontend.onnx", "mish_cnn.onnx"} <= names
    assert {f"{n}.npy" for n in JOURNEY_INPUTS} <= names
    np.testing.assert_array_equal(np.load(tmp_path / "demo" / "inputs" / "frames_with_silence.npy"),
                                  frames_with_silence())


def test_fp16_check_calls_the_silent_frames_an_underflow(tmp_path):
    import subprocess
    import sys

    model = tmp_path / "fp16_frontend.onnx"
    model.write_bytes(build_fp16_frontend().SerializeToString())
    np.save(tmp_path / "silent.npy", frames_with_silence())
    done = subprocess.run([sys.executable, "-m", "studio", "fp16-check", str(model), "--input",
                           f"frames={tmp_path / 'silent.npy'}"], capture_output=True, text=True, timeout=300)
    assert "FP16 underflow at op log/add_floor" in done.stdout, done.stdout + done.stderr
    assert "--keep-fp32 log/add_floor,log/log" in done.stdout
