"""``studio accuracy reduce`` on real models that go wrong in FP16: each reduces to a repro of a few
ops that, run alone from its saved files, gives the saved golden output in FP32 and fails in FP16."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from studio.core.jobs import run_job
from studio.tools.accuracy.fp16_sim import simulate_fp16
from studio.tools.accuracy.reduce import reduce_fp16
from studio.tools.corpus import manifest
from studio.tools.corpus.fetch import model_path
from studio.tools.corpus.inputs import make_inputs

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


@pytest.mark.parametrize("model_id, op_type", [("resnet50_light", "Conv"), ("magika", "ReduceSum")])
def test_real_fp16_failures_reduce_to_a_repro_that_fails_alone(corpus_root, tmp_path, model_id, op_type):
    import onnx

    entry = manifest.entry(model_id)
    model = model_path(entry, corpus_root)
    result = run_job(reduce_fp16(model, tmp_path / "repro", inputs=make_inputs(entry, model)))
    print(f"{model_id}: {result.model_ops} ops -> {len(result.ops)} ({result.first_op}, {result.first_op_type}); "
          f"{result.target_runs} target runs; {result.reason}")
    assert result.first_op_type == op_type and len(result.ops) <= 5
    repro = onnx.load(tmp_path / "repro" / "model.onnx")
    feeds = dict(np.load(tmp_path / "repro" / "inputs.npz"))
    golden = np.load(tmp_path / "repro" / "golden_outputs.npz")[result.output]
    fp32 = ort.InferenceSession(repro.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(fp32, golden, rtol=1e-5, atol=1e-6)
    with np.errstate(all="ignore"):
        fp16 = ort.InferenceSession(simulate_fp16(repro)[0].SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert (~np.isfinite(fp16) & np.isfinite(golden)).any()


def test_a_bert_attention_mask_is_not_an_fp16_failure(corpus_root, tmp_path):
    """MiniLM's mask constant (-3.4e38) once reduced to a one-Constant "repro": stored clamped to
    -65504 as converters store it, every output stays finite and close, so there is nothing to reduce."""
    from studio.core.errors import UserError

    entry = manifest.entry("minilm_l3_padded")
    model = model_path(manifest.entry(entry.source), corpus_root)
    feeds = make_inputs(entry, model)
    with np.errstate(all="ignore"):
        fp32 = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, feeds)
        fp16 = ort.InferenceSession(simulate_fp16(__import__("onnx").load(model))[0].SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    for ref, got in zip(fp32, fp16):
        if ref.dtype.kind == "f":
            assert np.isfinite(got).all()
            cosine = float(np.dot(ref.ravel(), got.ravel()) / (np.linalg.norm(ref) * np.linalg.norm(got)))
            assert cosine > 0.999
    with pytest.raises(UserError, match="outputs pass"):
        run_job(reduce_fp16(model, tmp_path / "repro", inputs=feeds))


def test_real_fp16_target_reduces_and_finds_a_minimal_fp32_set(corpus_root, tmp_path):
    """magika converted to a real FP16 ONNX: a LayerNorm sum overflows; the repro is that one op and
    keeping the sum and the division it feeds in FP32 makes the converted model pass."""
    from studio.ops.fp16_target import Fp16OnnxRunner
    from studio.tools.accuracy.precision import find_fp32_set

    entry = manifest.entry("magika")
    model = model_path(entry, corpus_root)
    feeds = make_inputs(entry, model)
    result = run_job(reduce_fp16(model, tmp_path / "repro", inputs=feeds, runner=Fp16OnnxRunner()))
    found = run_job(find_fp32_set(model, tmp_path / "set", inputs=feeds, runner=Fp16OnnxRunner()))
    print(f"magika (fp16): {result.model_ops} ops -> {len(result.ops)} ({result.first_op_type}), "
          f"{result.target_runs} target runs; FP32 set {found.keep}, {found.target_runs} target runs")
    assert result.first_op_type == "ReduceSum" and len(result.ops) <= 5 and result.target_runs <= 6
    assert found.minimal and 1 <= len(found.keep) <= 5 and found.outputs_after == {
        name: "passes" for name in found.outputs_after}
