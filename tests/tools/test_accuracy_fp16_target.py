"""``studio accuracy reduce|precision --target fp16``: the target is the model converted to a real
FP16 ONNX by Studio's converter and run with ONNX Runtime, judged on its per-op dump. On the demo
audio front-end (loud frames overflow in the power spectrum, silent frames underflow before the
log): the repro is small, fails alone on the target and passes in FP32; the FP32 set makes the
converted model pass and removing any one op of it fails."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from studio.core.jobs import run_job
from studio.ops.fp16_target import Fp16OnnxRunner
from studio.tools.accuracy.fp16_onnx import inner_failures
from studio.tools.accuracy.precision import find_fp32_set
from studio.tools.accuracy.reduce import reduce_fp16
from studio.tools.convert.convert import convert_model
from studio.tools.convert.options import ConvertOptions
from studio.tools.convert.passes import PASS_NAMES
from studio.tools.demo.journeys import build_fp16_frontend, frames_with_silence

LOUD = None  # the default seeded random frames: loud enough to overflow the power spectrum


@pytest.fixture
def frontend(tmp_path):
    path = tmp_path / "fp16_frontend.onnx"
    onnx.save(build_fp16_frontend(), path)
    return path


def _converted_dump(model_path, out, feeds, keep=()):
    """Convert with Studio's converter (FP16, ``keep`` in FP32) and run it, every op output exposed."""
    shapes = ";".join(f"{k}:{','.join(map(str, v.shape))}" for k, v in feeds.items())
    run_job(convert_model(ConvertOptions(model=model_path, output=out, output_type="FP16", input_shape=shapes,
                                         keep_fp32_ops=list(keep), fusions={p: False for p in PASS_NAMES})))
    model = onnx.load(out)
    names = [o for n in model.graph.node for o in n.output]
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names if n not in {o.name for o in model.graph.output})
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    wanted = [o.name for o in session.get_outputs()]
    with np.errstate(all="ignore"):
        return dict(zip(wanted, session.run(wanted, feeds)))


def _fp32(model_path, feeds):
    return ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


@pytest.mark.parametrize("inputs, ops, cut", [
    (LOUD, ["power/real_sq"], ["dft/real"]),  # overflow: the square of a large DFT bin
    ({"frames": frames_with_silence()}, ["log/add_floor", "log/log"], ["mel/matmul"]),  # underflow: 1e-10 -> 0
])
def test_the_repro_is_small_fails_alone_on_the_converted_fp16_model_and_passes_in_fp32(frontend, tmp_path,
                                                                                        inputs, ops, cut):
    result = run_job(reduce_fp16(frontend, tmp_path / "repro", inputs=inputs, runner=Fp16OnnxRunner()))
    assert (result.ops, result.inputs, result.target) == (ops, cut, "fp16")
    assert result.target_runs <= 6
    repro = tmp_path / "repro" / "model.onnx"
    feeds = dict(np.load(tmp_path / "repro" / "inputs.npz"))
    golden = np.load(tmp_path / "repro" / "golden_outputs.npz")[result.output]
    np.testing.assert_allclose(_fp32(repro, feeds), golden, rtol=1e-5, atol=1e-6)  # passes in FP32
    dumped = _converted_dump(repro, tmp_path / "repro_fp16.onnx", feeds)
    fp16 = dumped[f"{result.output}/fp16"]  # the op's own FP16 output (the graph output is its cast back)
    assert fp16.dtype == np.float16 and (~np.isfinite(fp16) & np.isfinite(golden)).any()
    commands = (tmp_path / "repro" / "commands.sh").read_text()
    assert "studio convert model.onnx -o model_fp16.onnx --output-type FP16" in commands
    assert "studio dump model_fp16.onnx -o fp16" in commands


@pytest.mark.parametrize("inputs", [LOUD, {"frames": frames_with_silence()}], ids=["overflow", "underflow"])
def test_the_fp32_set_makes_the_converted_model_pass_and_is_minimal(frontend, tmp_path, inputs):
    result = run_job(find_fp32_set(frontend, tmp_path / "set", inputs=inputs, runner=Fp16OnnxRunner()))
    assert result.minimal and result.keep and result.target == "fp16"
    assert result.target_runs == result.checks + 1  # the first run, then one per check
    feeds = {"frames": inputs["frames"] if inputs else
             np.random.default_rng(0).standard_normal((1, 64, 256)).astype(np.float32)}
    fp32 = onnx.load(frontend)
    fp32.graph.output.extend(onnx.ValueInfoProto(name=o) for n in fp32.graph.node for o in n.output
                             if o != "log_mel")
    session = ort.InferenceSession(fp32.SerializeToString(), providers=["CPUExecutionProvider"])
    golden = {**feeds, **dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))}

    def fails(keep) -> bool:
        dumped = _converted_dump(frontend, tmp_path / "check.onnx", feeds, keep)
        dumped["log_mel"] = dumped.get("log_mel/fp16", dumped["log_mel"])
        return bool(inner_failures(golden, dumped)) or not np.isfinite(dumped["log_mel"]).all()

    assert fails([])  # all FP16 fails
    assert not fails(result.keep)  # the set passes
    for op in result.keep:  # and each of its ops is needed
        assert fails([k for k in result.keep if k != op]), op


def test_cli_target_fp16_reports_target_runs(frontend, tmp_path, studio_home):
    done = subprocess.run([sys.executable, "-m", "studio", "accuracy", "precision", str(frontend), "-o",
                           str(tmp_path / "set"), "--target", "fp16", "--no-latency", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["target"] == "fp16" and data["target_runs"] > data["checks"] > 0 and data["minimal"]
    assert data["verified_on_default_build"] is True  # no fusion touches the set: it holds on the shipped build
    assert all(o["verdict"] == "passes" for o in data["default_build_check"]["outputs"].values())
    assert (tmp_path / "set" / "keep_fp32.txt").read_text().split() == data["keep_fp32"]


def test_the_builds_of_a_model_with_a_dynamic_batch_take_the_inputs_shape(tmp_path, studio_home):
    """The converter needs every dim sized: the builds are converted at the shape of the input used."""
    model = build_fp16_frontend()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    path = tmp_path / "dynamic.onnx"
    onnx.save(model, path)
    np.save(tmp_path / "loud.npy", np.random.default_rng(0).standard_normal((1, 64, 256)).astype(np.float32))
    done = subprocess.run([sys.executable, "-m", "studio", "accuracy", "precision", str(path), "-o",
                           str(tmp_path / "set"), "--target", "fp16", "--budget", "0.3", "--json",
                           "--input", f"frames={tmp_path / 'loud.npy'}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    builds = {b["build"]: b for b in json.loads(done.stdout)["builds"]}
    assert builds["found set"]["accuracy"] == "passes" and builds["all FP16"]["accuracy"].startswith("fails")
    assert builds["found set"]["latency"]["new_ms"] > 0
