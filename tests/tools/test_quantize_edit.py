"""Rollback candidates edited from the quantised graph: each one's ONNX Runtime outputs against a
fresh ``quantize_static`` build with the same exclusions (ONNX Runtime's quantiser called directly,
calibrated on the same samples), compared with numpy."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from quantize_helpers import chain_model, ort_quantize_static, samples
from studio.core.jobs import run_job
from studio.tools.quantize.build import COMPUTE_OPS, Builder, Settings, quantised_layers
from studio.tools.quantize.edit import same_graph
from studio.tools.quantize.run import quantize
from studio.tools.quantize.search import Target


def _outputs(path, feeds_list):
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return [session.run(None, feeds) for feeds in feeds_list]


def _cosine(a, b) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / norms) if norms else 0.0  # an all-zero answer against a real one: nothing in common


def _edited_against_ort(tmp_path, model, calib, keeps, per_channel=False):
    """For each keep set: Studio's edited candidate and ORT's own build with the rest excluded."""
    from onnxruntime.quantization import QuantFormat, QuantType

    work = tmp_path / "work"
    work.mkdir()
    builder = Builder(model, Settings(per_channel=per_channel), work, work / "ranges.json")
    full = builder.calibrate(calib)
    layers = quantised_layers(onnx.load(str(model)), onnx.load(str(full)), COMPUTE_OPS)
    assert builder.enable_edits(full, layers)
    for index, keep in enumerate(keeps(layers)):
        rollback = [name for name in layers if name not in keep]
        edited = builder.build(rollback)
        ort_build = ort_quantize_static(model, tmp_path / f"ort_{index}.onnx", calib, quant_format=QuantFormat.QDQ,
                                        op_types_to_quantize=list(COMPUTE_OPS), per_channel=per_channel,
                                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                                        nodes_to_exclude=rollback)
        ours, theirs = _outputs(edited, calib), _outputs(ort_build, calib)
        for a_list, b_list in zip(ours, theirs):
            for a, b in zip(a_list, b_list):
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"keep {sorted(keep)}")
        # the very graph ORT builds, node for node: what lets the written model skip a second measurement
        assert same_graph(onnx.load(str(edited)), onnx.load(str(ort_build)))
        # the layers kept read INT8 weights, the others their float ones (a float layer may still read a
        # dequantised activation: ORT rewires every reader of a quantised tensor)
        made_by = {o: n.op_type for n in onnx.load(str(edited)).graph.node for o in n.output}
        int8_weights = {n.name for n in onnx.load(str(edited)).graph.node
                        if n.name in layers and made_by.get(n.input[1]) == "DequantizeLinear"}
        assert int8_weights == set(keep)
    assert builder.edited == len(keeps(layers))
    return layers


def test_edited_unet_candidates_give_quantize_static_outputs(tmp_path):
    from studio.tools.demo.models import build_unet

    model = tmp_path / "unet.onnx"
    graph = build_unet()
    onnx.save(graph, str(model))
    shape = [d.dim_value or 1 for d in graph.graph.input[0].type.tensor_type.shape.dim]
    calib = [{graph.graph.input[0].name: np.random.default_rng(0).random(shape, dtype=np.float32)}]

    def keeps(layers):
        up = next(name for name in layers if "convtranspose" in name)     # a quantised bias rolled back
        return [set(), {layers[0]}, set(layers) - {layers[0], layers[1]},  # neighbours: a shared pair stays
                set(layers) - {up}, set(layers[::3])]

    layers = _edited_against_ort(tmp_path, model, calib, keeps)
    assert len(layers) == 20


@pytest.mark.parametrize("per_channel", [False, True])
def test_edited_chain_candidates_give_quantize_static_outputs(tmp_path, per_channel):
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=1)

    def keeps(layers):  # mm3 writes the graph's output: rolling it back renames its output back
        return [{"mm0", "mm1", "mm2"}, {"mm3"}, {"mm1", "mm3"}, set()]

    _edited_against_ort(tmp_path, model, samples(8, 1), keeps, per_channel)


def _branching_model(path):
    """x -> mm_a -> h (read by mm_b directly and by mm_c) -> Add -> y: the tensor h is touched by three
    quantised layers, so its QDQ pair stays while any of them is quantised."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array((rng.standard_normal((16, 16)) / 4).astype(np.float32), f"w_{k}")
             for k in "abc"]
    nodes = [helper.make_node("MatMul", ["x", "w_a"], ["h"], name="mm_a"),
             helper.make_node("MatMul", ["h", "w_b"], ["hb"], name="mm_b"),
             helper.make_node("MatMul", ["h", "w_c"], ["hc"], name="mm_c"),
             helper.make_node("Add", ["hb", "hc"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "branch", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))


def test_edited_candidates_keep_a_pair_another_quantised_layer_shares(tmp_path):
    model = tmp_path / "branch.onnx"
    _branching_model(model)

    def keeps(layers):
        return [{"mm_a"}, {"mm_b"}, {"mm_c"}, {"mm_b", "mm_c"}, {"mm_a", "mm_c"}]

    assert _edited_against_ort(tmp_path, model, samples(8, 1), keeps) == ["mm_a", "mm_b", "mm_c"]


def test_the_search_edits_its_candidates_and_measures_each_set_once(tmp_path):
    model = tmp_path / "chain.onnx"
    layers = chain_model(model, outlier_at=1, layers=6)
    result = run_job(quantize(model, tmp_path / "q.onnx", samples(16, 1), samples(8, 2), Settings(),
                              Target(min_cosine=0.99), timing=False))
    assert result.fallback == ["mm1"]
    # quantize_static ran twice: the calibration and the model written; every other build was edited
    assert result.builds - result.edited_builds == 2
    # a set both searches try is built once: fewer builds than checks counted
    checks = len(layers) + sum(found.runs for found in result.searches)
    assert result.edited_builds < checks
    # the written model (quantize_static's) measured again: equal to an independent numpy cosine
    reference, mixed = _outputs(model, samples(8, 2)), _outputs(result.out, samples(8, 2))
    cosines = [_cosine(r[0], m[0]) for r, m in zip(reference, mixed)]
    assert result.table[2].accuracy.min_cosine == pytest.approx(min(cosines), abs=1e-6)
    assert not result.table[2].notes


def test_a_failing_check_stops_at_its_first_sample_below_the_target_and_completes_when_reported(tmp_path,
                                                                                              monkeypatch):
    from onnxruntime.quantization import QuantFormat, QuantType

    from studio.tools.quantize import search
    from studio.tools.quantize.measure import accuracy_of

    model = tmp_path / "chain.onnx"
    layers = chain_model(model, outlier_at=1)
    calib, evaluation = samples(16, 1), samples(8, 2)
    work = tmp_path / "work"
    work.mkdir()
    builder = Builder(model, Settings(), work, work / "ranges.json")
    full = builder.calibrate(calib)
    assert builder.enable_edits(full, layers)
    reference = _outputs(model, evaluation)
    fp32 = accuracy_of(reference, reference, None)
    consumed = []

    def counting(path, feeds):
        for out in search_run_each(path, feeds):
            consumed.append(path)
            yield out

    search_run_each = search.run_each
    monkeypatch.setattr(search, "run_each", counting)
    checker = search.Checker(builder, evaluation, reference, None, Target(min_cosine=0.99), fp32,
                             order=list(reversed(range(len(evaluation)))))
    assert not checker.passes([])            # every layer INT8: mm1's outlier breaks the first sample already
    assert len(consumed) == 1
    assert checker.passes(["mm1"])           # a passing set is measured on every sample
    assert len(consumed) == 1 + len(evaluation)
    # reported: completed on every sample, equal to numpy over ORT's own fully quantised model
    ort_full = ort_quantize_static(model, tmp_path / "ort.onnx", calib, quant_format=QuantFormat.QDQ,
                                   op_types_to_quantize=list(COMPUTE_OPS), activation_type=QuantType.QUInt8,
                                   weight_type=QuantType.QInt8)
    cosines = [_cosine(r[0], o[0]) for r, o in zip(reference, _outputs(ort_full, evaluation))]
    assert checker.accuracy([]).min_cosine == pytest.approx(min(cosines), abs=1e-6)
    assert checker.runs == 2


def test_search_ranked_runs_only_the_ranked_bisection_and_says_so(tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=1, layers=6)
    evaluation = samples(8, 2)
    result = run_job(quantize(model, tmp_path / "q.onnx", samples(16, 1), evaluation, Settings(),
                              Target(min_cosine=0.99), timing=False, search="ranked"))
    assert [found.method for found in result.searches] == ["ranked-binary"]
    assert any("only the ranked-binary search ran (--search ranked)" in note for note in result.notes)
    assert result.fallback == ["mm1"]
    # the written model meets the target by an independent numpy cosine over ORT's outputs
    cosines = [_cosine(r[0], m[0]) for r, m in zip(_outputs(model, evaluation), _outputs(result.out, evaluation))]
    assert min(cosines) >= 0.99
    assert result.table[2].accuracy.min_cosine == pytest.approx(min(cosines), abs=1e-6)


def test_the_qoperator_form_quantises_every_candidate_again_and_says_so(tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=1)
    result = run_job(quantize(model, tmp_path / "q.onnx", samples(16, 1), samples(8, 2), Settings(format="qoperator"),
                              Target(min_cosine=0.99), timing=False))
    assert result.fallback == ["mm1"] and result.edited_builds == 0
    assert any("edited from the quantised graph in the QDQ form only" in note for note in result.notes)
