"""One FP16 diagnosis across convert, fp16-check, compare, reduce and precision — checked against
numpy computations of what FP16 does, not against Studio's own numbers.

The traps: an attention mask (finfo.min saturates in FP16: harmless before Softmax), logits of
1e-13 (all zero in FP16: a total loss, not "cosine 1"), an epsilon before a log (an underflow, not
an overflow, and never "harmless" once an output is NaN).
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from fp16_verdict_models import (FLOAT_MIN, audio_frontend, masked_attention, ort_outputs, padding_mask,
                                 tiny_logits)

from studio.cli import main

pytestmark = pytest.mark.slow


def studio(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def studio_json(capsys, *args) -> tuple[int, dict]:
    code, out, err = studio(capsys, *args, "--json")
    assert out.strip(), err
    return code, json.loads(out)


def cosine(a, b) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ----------------------------------------------------------------------- independent references
def attention_numpy(model_path, x: np.ndarray, mask: np.ndarray, dtype) -> np.ndarray:
    """The masked attention block computed in numpy in ``dtype``; in float16 the mask constant is
    stored clamped to -65504, as converters store it."""
    weights = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(model_path).graph.initializer}
    low = np.float16(-65504) if dtype == np.float16 else np.float32(FLOAT_MIN)
    xs = x.astype(dtype)
    q, k, v = (xs @ weights[n].astype(dtype) for n in ("wq", "wk", "wv"))
    scores = (q @ k.transpose(0, 2, 1)) / dtype(4)
    scores = scores + ((dtype(1) - mask.astype(dtype)) * low)[:, None, :]
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs = probs / probs.sum(axis=-1, keepdims=True)
    return (probs @ v).astype(np.float32)


@pytest.fixture
def attention(tmp_path):
    path = masked_attention(tmp_path / "attention.onnx")
    x = np.random.default_rng(0).standard_normal((1, 8, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "mask.npy", padding_mask())
    return path, x, padding_mask()


# ----------------------------------------------------------------------------- attention masks
def test_a_padding_mask_passes_in_fp16_on_every_tool(capsys, attention, tmp_path):
    path, x, mask = attention
    fp32, fp16 = attention_numpy(path, x, mask, np.float32), attention_numpy(path, x, mask, np.float16)
    assert np.isfinite(fp16).all() and cosine(fp32, fp16) > 0.9999  # FP16 is fine here: the truth
    inputs = ["--input", f"x={tmp_path / 'x.npy'}", "--input", f"attention_mask={tmp_path / 'mask.npy'}"]

    code, report = studio_json(capsys, "convert", path, "-o", tmp_path / "a16.onnx", "--output-type", "FP16",
                               "--validate", *inputs)
    assert code == 0 and report["validation"]["passed"], report["validation"]
    assert report["validation"]["diagnosis"]["verdict"] == "pass"
    assert [c["initializer"] for c in report["fp16"]["clamped"]] == ["mask_min"]  # clamped, not kept FP32
    assert report["fp16"]["kept_fp32"] == []
    (converted,) = ort_outputs(tmp_path / "a16.onnx", {"x": x, "attention_mask": mask})
    assert cosine(fp32, converted) > 0.9999

    code, check = studio_json(capsys, "fp16-check", path, "-o", tmp_path / "fc", "--check", *inputs)
    assert code == 0, check["diagnosis"]
    assert check["diagnosis"]["verdict"] == "pass" and check["diagnosis"]["cause"] == "none"
    masked = {r["name"] for r in check["rows"] if r["mask"]}
    assert {"mask/mul", "attn/add_mask"} <= masked and "attn/softmax" not in masked
    out = next(r for r in check["rows"] if r["name"] == "attn/context")
    assert out["target_nonfinite"] == 0 and out["cosine"] > 0.9999  # no NaN from 0 * -inf
    assert any("attention-mask" in note for note in check["diagnosis"]["notes"])


def test_mask_paths_are_only_those_that_end_in_softmax(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    from studio.core.fp16_graph import mask_tensors

    model = onnx.load(masked_attention(tmp_path / "a.onnx"))
    assert {"mask_min", "extended", "extended_3d", "masked_scores"} <= mask_tensors(model)
    assert "probs" not in mask_tensors(model) and "scores" not in mask_tensors(model)
    # The same constant feeding a model output directly is a value, not a mask.
    model.graph.output.append(helper.make_tensor_value_info("extended", TensorProto.FLOAT, [1, 8]))
    assert mask_tensors(model) == set()
    # A large negative constant into Exp (not a normaliser) is not a mask either.
    graph = helper.make_graph([helper.make_node("Add", ["x", "big"], ["y"]), helper.make_node("Exp", ["y"], ["z"])],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])],
                              [numpy_helper.from_array(np.array(-1e9, np.float32), "big")])
    assert mask_tensors(helper.make_model(graph)) == set()


# ------------------------------------------------------------------------------- tiny outputs
def test_metrics_call_an_all_zero_target_of_a_tiny_reference_a_total_loss():
    from studio.tools.accuracy.metrics import Thresholds, compare_arrays

    golden = np.random.default_rng(1).standard_normal(1000).astype(np.float32) * 5e-14
    m = compare_arrays(golden, np.zeros_like(golden))
    assert np.isnan(m.cosine) and "zero in target" in m.reason
    assert m.rel_euclidean == pytest.approx(1.0)
    assert "cosine" in Thresholds().violations(m)
    same = compare_arrays(golden, golden * np.float32(1.001))  # tiny but equal up to 0.1 %: a pass
    assert same.cosine == pytest.approx(1.0) and same.rel_euclidean == pytest.approx(1e-3, rel=1e-2)


def test_tiny_logits_fail_as_an_underflow_and_the_fix_given_passes(capsys, tmp_path):
    path = tiny_logits(tmp_path / "tiny.onnx")
    weights = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    assert not np.any(weights["w"].astype(np.float16))  # the truth: every weight is 0 in FP16

    code, report = studio_json(capsys, "convert", path, "-o", tmp_path / "t16.onnx", "--output-type", "FP16",
                               "--validate")
    diagnosis = report["validation"]["diagnosis"]
    assert code == 1 and not report["validation"]["passed"]
    assert report["validation"]["outputs"][0]["zero_loss"]
    assert (diagnosis["verdict"], diagnosis["cause"], diagnosis["op"]) == ("fail", "underflow", "head/matmul")
    code, check = studio_json(capsys, "fp16-check", path, "-o", tmp_path / "fc", "--check")
    assert code == 1 and (check["diagnosis"]["cause"], check["diagnosis"]["op"]) == ("underflow", "head/matmul")
    out = next(r for r in check["rows"] if r["name"] == "head/add")
    assert out["cosine"] is None or out["cosine"] == "nan"  # not "cosine 1"
    # The fix the diagnosis gives, applied, passes.
    keep = diagnosis["fix"].split("--keep-fp32 ")[1].split(")")[0]
    assert keep == "head/matmul,head/add"
    code, fixed = studio_json(capsys, "convert", path, "-o", tmp_path / "t16k.onnx", "--output-type", "FP16",
                              "--validate", "--keep-fp32", keep)
    assert code == 0 and fixed["validation"]["diagnosis"]["verdict"] == "pass"


# ---------------------------------------------------------------------- one cause, every tool
def test_an_epsilon_before_a_log_is_named_the_same_by_every_tool(capsys, tmp_path):
    model, frames = audio_frontend(tmp_path)
    silent = np.load(frames)[0, 48:]  # the truth: silent frames give mel 0, and 1e-10 is 0 in FP16
    assert not silent.any() and np.float16(1e-10) == 0
    given = ["--input", f"frames={frames}"]
    causes = {}
    _, report = studio_json(capsys, "convert", model, "-o", tmp_path / "f16.onnx", "--output-type", "FP16",
                            "--validate", *given)
    causes["convert"] = report["validation"]["diagnosis"]
    _, check = studio_json(capsys, "fp16-check", model, "-o", tmp_path / "fc", *given)
    causes["fp16-check"] = check["diagnosis"]
    _, reduced = studio_json(capsys, "accuracy", "reduce", model, "-o", tmp_path / "r", *given)
    causes["reduce"] = reduced["diagnosis"]
    _, precision = studio_json(capsys, "accuracy", "precision", model, "-o", tmp_path / "p", "--no-latency", *given)
    causes["precision"] = precision["diagnosis"]
    for tool, d in causes.items():
        assert (d["verdict"], d["cause"], d["op"]) == ("fail", "underflow", "log/add_floor"), (tool, d)
    # A model output holding inf/NaN is never called harmless.
    types = [f["type"] for f in check["findings"]]
    assert "single_point_error" not in types and "nonfinite_output" in types
    code, out, _ = studio(capsys, "compare", tmp_path / "fc" / "frontend_fp32", tmp_path / "fc" / "frontend_fp16sim")
    row = next(line for line in out.splitlines() if "log/log" in line and "Log" in line)
    assert "inf/NaN: 640 target" in row and "1.000000" not in row


def test_every_threshold_is_an_option_printed_beside_the_verdict(capsys, attention, tmp_path):
    path, _x, _mask = attention
    inputs = ["--input", f"x={tmp_path / 'x.npy'}", "--input", f"attention_mask={tmp_path / 'mask.npy'}"]
    code, out, _ = studio(capsys, "fp16-check", path, "-o", tmp_path / "fc", "--rel-euclidean", "1e-7", *inputs)
    assert "FP16 verdict: FAIL — precision loss" in out and "rel_euclidean < 1e-07" in out
    code, out, _ = studio(capsys, "compare", tmp_path / "fc" / "attention_fp32", tmp_path / "fc" / "attention_fp16sim")
    assert "FP16 verdict: PASS" in out and "rel_euclidean < 0.05" in out
    # A refusal gives the measured values and the limits.
    code, out, err = studio(capsys, "accuracy", "precision", path, "-o", tmp_path / "p", "--no-latency",
                            "--rel-euclidean", "1e-7", *inputs)
    assert code == 2 and "rel_euclidean" in err and "limit 1e-07" in err, err
