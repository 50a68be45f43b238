"""The converter on the kinds of models real exports are: Paddle Constant weights, If sub-graphs.

Every converted model is checked against ONNX Runtime on the original (an independent run).
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.convert.convert import convert_model
from studio.tools.convert.options import ConvertOptions
from studio.tools.convert.validate import compare_arrays
from trust_models import ort_run, paddle_style_model, shape_if_model, value_if_model


def _save(model, path):
    onnx.save(model, path)
    return path


def test_fp16_conversion_of_a_paddle_export_keeps_scalar_constants(tmp_path):
    src = _save(paddle_style_model(), tmp_path / "paddle.onnx")
    out = tmp_path / "paddle_fp16.onnx"
    report = run_job(convert_model(ConvertOptions(model=src, output=out, output_type="FP16",
                                                  input_shape="x:2,3,16,16", validate=True)))
    converted = onnx.load(out)
    inits = {i.name: i for i in converted.graph.initializer}
    clip = next(n for n in converted.graph.node if n.op_type == "Clip")
    # Clip's bounds stay scalars (rank 0), as in the export; the spec requires it.
    assert [list(inits[name].dims) for name in clip.input[1:]] == [[], []]
    x = np.random.default_rng(3).standard_normal((2, 3, 16, 16)).astype(np.float32)
    (ref,), (got,) = ort_run(paddle_style_model(), {"x": x}), ort_run(converted, {"x": x})
    assert ref.shape == got.shape == (2, 2, 16, 16)
    assert np.abs(ref - got).max() < 5e-3  # FP16 weights and activations, sigmoid outputs in 0..1
    assert report.validation["passed"] and report.fp16["converted_initializers"] >= 4


def test_fixing_shapes_folds_the_if_the_shapes_decide_and_the_result_loads(tmp_path):
    src = _save(shape_if_model(), tmp_path / "if.onnx")
    out = tmp_path / "if_fixed.onnx"
    report = run_job(convert_model(ConvertOptions(model=src, output=out, input_shape="x:1,4", validate=True)))
    assert [f["pass"] for f in report.fusions if f["pass"] == "IfFolding"] == ["IfFolding"]
    converted = onnx.load(out)
    assert not any(n.op_type == "If" for n in converted.graph.node)
    x = np.array([[1.5, -2.0, 3.25, 0.5]], np.float32)
    (ref,), (got,) = ort_run(shape_if_model(), {"x": x}), ort_run(out, {"x": x})
    np.testing.assert_array_equal(ref, got)
    assert report.validation["passed"]


def test_a_converted_model_onnx_runtime_cannot_load_is_not_written(tmp_path):
    src = _save(value_if_model(), tmp_path / "flag.onnx")
    out = tmp_path / "flag_fixed.onnx"
    with pytest.raises(UserError) as caught:
        run_job(convert_model(ConvertOptions(model=src, output=out, input_shape="x:1,4", validate=True)))
    assert "does not load in ONNX Runtime" in str(caught.value) and "flag_if" in str(caught.value)
    assert "depends on an input's value" in caught.value.fix
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flag.onnx"]  # no model, no report, no temp file


def test_tolerances_judge_tiny_outputs_by_atol_and_large_ones_by_rtol():
    rng = np.random.default_rng(0)
    ref = rng.normal(0, 1e-5, 1000)  # outputs near 1e-5 (an AIPP model's scores)
    got = ref + rng.normal(0, 3e-7, 1000)
    tiny = compare_arrays("tiny", ref, got, atol=1e-5, rtol=1e-4)
    assert tiny.passed and tiny.mismatches == 0
    a, b = ref / np.linalg.norm(ref), got / np.linalg.norm(got)
    assert float(a @ b) < 0.9999  # the old cosine threshold would have failed these outputs
    big = np.linspace(100.0, 200.0, 50)
    off = big.copy()
    off[[3, 7]] *= 1.001  # 0.1 % off: beyond rtol 1e-4 and atol 1e-5 on two elements
    result = compare_arrays("big", big, off, atol=1e-5, rtol=1e-4)
    expected = int(np.count_nonzero((np.abs(off - big) > 1e-5) & (np.abs(off - big) / np.abs(big) > 1e-4)))
    assert result.mismatches == expected == 2 and not result.passed
    assert result.worst["index"] == [7] and result.worst["reference"] == big[7]


def test_report_names_the_inputs_used_random_or_files(tmp_path):
    src = _save(paddle_style_model(), tmp_path / "p.onnx")
    report = run_job(convert_model(ConvertOptions(model=src, output=tmp_path / "a.onnx", input_shape="x:1,3,16,16",
                                                  validate=True)))
    assert report.validation["inputs"] == {"x": {"source": "seeded random N(0,1), seed 0", "shape": [1, 3, 16, 16],
                                                 "dtype": "float32"}}
    data = np.random.default_rng(9).uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", data)
    report = run_job(convert_model(ConvertOptions(model=src, output=tmp_path / "b.onnx", input_shape="x:1,3,16,16",
                                                  validate_inputs={"x": tmp_path / "x.npy"})))
    assert report.validation["inputs"]["x"]["source"] == "file x.npy"
    assert report.validation["input"] == "given data (x)"
    # The reported error is the one between ONNX Runtime runs of the original and the converted model.
    (ref,), (got,) = ort_run(paddle_style_model(), {"x": data}), ort_run(tmp_path / "b.onnx", {"x": data})
    assert report.validation["outputs"][0]["max_abs_error"] == pytest.approx(float(np.abs(ref - got).max()), abs=1e-9)
    saved = json.loads((tmp_path / "b.report.json").read_text())
    assert saved["validation"]["inputs"]["x"]["source"] == "file x.npy"


def test_validate_image_without_aipp_is_refused(tmp_path):
    src = _save(paddle_style_model(), tmp_path / "p.onnx")
    with pytest.raises(UserError, match="has no AIPP"):
        run_job(convert_model(ConvertOptions(model=src, output=tmp_path / "o.onnx", input_shape="x:1,3,16,16",
                                             validate_image=tmp_path / "photo.png")))
    assert not (tmp_path / "o.onnx").exists()


def test_keep_fp32_of_an_unknown_op_is_refused(tmp_path):
    src = _save(paddle_style_model(), tmp_path / "p.onnx")
    with pytest.raises(UserError, match="neither an op type nor a node name") as caught:
        run_job(convert_model(ConvertOptions(model=src, output=tmp_path / "o.onnx", input_shape="x:1,3,16,16",
                                             output_type="FP16", keep_fp32_ops=["Sigmod"])))
    assert "Did you mean 'Sigmoid'" in caught.value.fix
    report = run_job(convert_model(ConvertOptions(model=src, output=tmp_path / "o.onnx", input_shape="x:1,3,16,16",
                                                  output_type="FP16", keep_fp32_ops=["Sigmoid"])))
    assert [k["node"] for k in report.fp16["kept_fp32"]] == ["sigmoid"]


def test_lifted_scalar_stays_rank_0():
    from studio.tools.convert.passes import PassContext, lift_constants

    ctx = PassContext(paddle_style_model())
    lift_constants(ctx)
    inits = {i.name: i for i in ctx.model.graph.initializer}
    assert list(inits["six"].dims) == [] and numpy_helper.to_array(inits["six"]) == np.float32(6.0)


@pytest.mark.parametrize("output_type", ["FP32", "FP16"])
def test_ir3_model_with_weights_listed_as_inputs_converts(tmp_path, output_type):
    from onnx import helper

    from convert_helpers import conv_bn_model

    model = conv_bn_model(size=16)
    model.ir_version = 3  # as the onnx wheel's light_* models (opset 9, weights listed as inputs)
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", 9))
    model.graph.input.extend(helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                             for i in model.graph.initializer)
    src = _save(model, tmp_path / "ir3.onnx")
    out = tmp_path / "ir3_out.onnx"
    report = run_job(convert_model(ConvertOptions(model=src, output=out, output_type=output_type, validate=True)))
    assert report.validation["passed"] and "(IR version 3 -> 4" in report.warnings[0]
    converted = onnx.load(out)
    assert [v.name for v in converted.graph.input] == ["image"]
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32)
    (ref,), (got,) = ort_run(model, {"image": x}), ort_run(out, {"image": x})
    assert np.abs(ref - got).max() < (1e-4 if output_type == "FP32" else 2e-2)


def test_fp16_overflow_inside_the_model_fails_validation_although_cpu_outputs_agree(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    # x * 1000 then * 0.001: 1e5 inside overflows FP16; ONNX Runtime's CPU run computes in FP32 between
    # the two Muls, so the output still equals x.
    nodes = [helper.make_node("Mul", ["x", "big"], ["scaled"], name="up"),
             helper.make_node("Mul", ["scaled", "small"], ["y"], name="down")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                              initializer=[numpy_helper.from_array(np.array(1000.0, np.float32), "big"),
                                           numpy_helper.from_array(np.array(0.001, np.float32), "small")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    src = _save(model, tmp_path / "m.onnx")
    data = np.full((1, 8), 100.0, np.float32)
    np.save(tmp_path / "x.npy", data)
    out = tmp_path / "m16.onnx"
    report = run_job(convert_model(ConvertOptions(model=src, output=out, output_type="FP16",
                                                  validate_inputs={"x": tmp_path / "x.npy"})))
    (got,) = ort_run(out, {"x": data})
    assert np.isfinite(got).all()  # what the CPU shows
    assert report.validation["outputs"][0]["passed"] and not report.validation["passed"]
    assert report.validation["fp16_overflow"] == [{"tensor": "scaled", "op": "up", "op_type": "Mul", "nonfinite": 8,
                                                   "size": 8, "mask": False}]
    assert "inf/NaN inside the converted model" in report.summary()


def test_fp16_conversion_keeps_if_bodies_fp32_and_what_they_read(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    w = rng.uniform(0.5, 1.5, 6).astype(np.float32)
    b = rng.uniform(-1, 1, 6).astype(np.float32)
    then = helper.make_graph([helper.make_node("Add", ["h", "w"], ["t"], name="then/add")], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [6])])
    other = helper.make_graph([helper.make_node("Sub", ["h", "b"], ["e"], name="else/sub")], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [6])])
    nodes = [helper.make_node("Mul", ["x", "w"], ["h"], name="scale"),  # FP16; its output is read by both bodies
             helper.make_node("If", ["flag"], ["picked"], name="branch", then_branch=then, else_branch=other),
             helper.make_node("Tanh", ["picked"], ["y"], name="tanh")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
                                           helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])],
                              initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    src = _save(model, tmp_path / "if16.onnx")
    out = tmp_path / "if16_fp16.onnx"
    report = run_job(convert_model(ConvertOptions(model=src, output=out, output_type="FP16", validate=True)))
    converted = onnx.load(out)
    inits = {i.name: i.data_type for i in converted.graph.initializer}
    assert inits["w"] == onnx.TensorProto.FLOAT and inits["w/fp16"] == onnx.TensorProto.FLOAT16  # body reads "w"
    assert [k["node"] for k in report.fp16["kept_fp32"]] == ["branch"]
    x = rng.standard_normal(6).astype(np.float32)
    for flag in (True, False):
        feeds = {"x": x, "flag": np.array(flag)}
        (ref,), (got,) = ort_run(model, feeds), ort_run(out, feeds)
        assert np.abs(ref - got).max() < 5e-3
    assert report.validation["passed"]
