"""INT8 quantisation: sensitivity, rollback search and the measured table, each figure checked
against ONNX Runtime's own quantiser and runs and numpy, on tiny models built here."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from quantize_helpers import OUTLIER, chain_model, ort_quantize_static, samples
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.quantize.build import Settings
from studio.tools.quantize.run import quantize
from studio.tools.quantize.search import Target


def _ort_outputs(path, feeds_list):
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return [session.run(None, feeds)[0] for feeds in feeds_list]


def _numpy_min_cosine(reference, outputs):
    values = []
    for r, o in zip(reference, outputs):
        r, o = r.astype(np.float64).ravel(), o.astype(np.float64).ravel()
        norms = np.linalg.norm(r) * np.linalg.norm(o)
        values.append(r @ o / norms if norms else 0.0)  # an all-zero answer against a real one: nothing in common
    return min(values)


def _ort_quantize_only(model, out, layer, calib):
    """ONNX Runtime's quantize_static on its own: only ``layer`` quantised, MinMax on ``calib``."""
    from onnxruntime.quantization import QuantFormat, QuantType

    ort_quantize_static(model, out, calib, quant_format=QuantFormat.QDQ, op_types_to_quantize=["MatMul"],
                        nodes_to_quantize=[layer], activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def _run(model, out, calib, evaluation, target, **kw):
    return run_job(quantize(model, out, calib, evaluation, Settings(), target, budget_s=0.2, **kw))


def test_the_layer_with_an_outlier_ranks_first_and_is_the_only_one_rolled_back(tmp_path):
    model = tmp_path / "chain.onnx"
    layers = chain_model(model, outlier_at=1)
    calib, evaluation = samples(16, 1), samples(8, 2)
    result = _run(model, tmp_path / "q.onnx", calib, evaluation, Target(min_cosine=0.99))

    assert [s.name for s in result.sensitivity][0] == "mm1"
    assert sorted(s.name for s in result.sensitivity) == sorted(layers)
    assert result.fallback == ["mm1"]
    assert all(found.rollback == ["mm1"] for found in result.searches)
    assert {found.method for found in result.searches} == {"ddmin", "ranked-binary"}

    # mm1 quantised alone, by ONNX Runtime's quantiser directly, judged with numpy
    reference = _ort_outputs(model, evaluation)
    _ort_quantize_only(model, tmp_path / "only_mm1.onnx", "mm1", calib)
    alone = _numpy_min_cosine(reference, _ort_outputs(tmp_path / "only_mm1.onnx", evaluation))
    top = result.sensitivity[0]
    assert top.min_cosine == pytest.approx(alone, abs=1e-6)
    assert alone < 0.9  # the outlier really breaks it

    # the written model: mm1 in float (no DequantizeLinear feeds it), the others quantised, and it meets the target
    import onnx

    written = onnx.load(str(result.out))
    made_by = {o: n.op_type for n in written.graph.node for o in n.output}
    reads_dq = {n.name: any(made_by.get(i) == "DequantizeLinear" for i in n.input) for n in written.graph.node
                if n.op_type == "MatMul"}
    assert reads_dq == {"mm0": True, "mm1": False, "mm2": True, "mm3": True}
    mixed = _numpy_min_cosine(reference, _ort_outputs(result.out, evaluation))
    assert mixed >= 0.99
    assert result.table[2].accuracy.min_cosine == pytest.approx(mixed, abs=1e-6)

    # the outlier shows in mm1's input statistics: scipy's kurtosis of the same tensor
    w0 = onnx.numpy_helper.to_array(next(t for t in onnx.load(str(model)).graph.initializer if t.name == "w0"))
    divisor = np.ones(16, np.float32)
    divisor[3] = 1 / OUTLIER
    spread = np.concatenate([(np.maximum(s["x"] @ w0, 0) / divisor).ravel() for s in calib])
    assert top.activation.kurtosis == pytest.approx(scipy.stats.kurtosis(spread), rel=1e-3)
    assert top.activation.kurtosis == max(s.activation.kurtosis for s in result.sensitivity)


def test_without_an_outlier_nothing_is_rolled_back_and_int8_meets_a_loose_target(tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=None)
    evaluation = samples(8, 2)
    result = _run(model, tmp_path / "q.onnx", samples(16, 1), evaluation, Target(min_cosine=0.95), timing=False)
    assert result.fallback == []
    reference = _ort_outputs(model, evaluation)
    assert _numpy_min_cosine(reference, _ort_outputs(result.out, evaluation)) >= 0.95
    assert result.table[1].accuracy.min_cosine == pytest.approx(result.table[2].accuracy.min_cosine)


def test_top1_target_counts_against_numpy(tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=1)
    evaluation = samples(24, 3)
    reference = _ort_outputs(model, evaluation)
    labels = [int(np.argmax(r)) if k % 4 else (int(np.argmax(r)) + 1) % 16 for k, r in enumerate(reference)]
    result = _run(model, tmp_path / "q.onnx", samples(16, 1), evaluation, Target(max_top1_drop=1.0),
                  labels=labels, timing=False)
    fp32_top1 = np.mean([np.argmax(r) == y for r, y in zip(reference, labels)])
    assert fp32_top1 == 0.75 and result.table[0].accuracy.top1 == pytest.approx(fp32_top1)
    mixed = _ort_outputs(result.out, evaluation)
    mixed_top1 = np.mean([np.argmax(o) == y for o, y in zip(mixed, labels)])
    assert result.table[2].accuracy.top1 == pytest.approx(mixed_top1)
    assert mixed_top1 >= fp32_top1 - 0.01
    assert result.table[1].accuracy.top1 < fp32_top1 - 0.01  # full INT8 misses it: the rollback was needed
    assert result.fallback == ["mm1"]


def test_an_unreachable_target_says_the_best_reached_and_writes_nothing(tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=1)
    out = tmp_path / "q.onnx"
    with pytest.raises(UserError, match=r"No rollback meets the target.*best reached is min cosine 0\.9\d+ with "
                                        r"\d of 4 layer"):
        _run(model, out, samples(16, 1), samples(8, 2), Target(min_cosine=0.9999999))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.onnx"]


def test_a_model_with_no_quantisable_layer_is_refused(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu"),
                               helper.make_node("Sigmoid", ["y"], ["z"], name="sig")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 16])])
    model = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(model))
    with pytest.raises(UserError, match="quantises no layer of this model"):
        _run(model, tmp_path / "q.onnx", samples(4), samples(4), Target(min_cosine=0.99))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.onnx"]


def test_calibration_ranges_are_saved_and_reused_only_for_the_same_samples(tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=1)
    first = _run(model, tmp_path / "q.onnx", samples(16, 1), samples(8, 2), Target(min_cosine=0.99), timing=False)
    assert first.ranges.is_file() and not first.reused_ranges
    again = _run(model, tmp_path / "q.onnx", samples(16, 1), samples(8, 2), Target(min_cosine=0.99), timing=False)
    assert again.reused_ranges and again.fallback == first.fallback
    other = _run(model, tmp_path / "q.onnx", samples(16, 5), samples(8, 2), Target(min_cosine=0.99), timing=False)
    assert not other.reused_ranges
