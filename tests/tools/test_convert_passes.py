"""Graph passes: Conv+BN folding with the node mapping, Constant-node weights (Paddle style),
Conv+Mul/Add, identity removal, constant folding, and the fusion switch file."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from convert_helpers import affine_chain_model, conv_bn_model, run
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.convert.convert import convert_model
from studio.tools.convert.fusion_switch import parse_fusion_switch
from studio.tools.convert.options import ConvertOptions


def _convert(tmp_path, model, **kwargs):
    src = tmp_path / "src.onnx"
    onnx.save(model, src)
    out = tmp_path / "out.onnx"
    report = run_job(convert_model(ConvertOptions(model=src, output=out, **kwargs)))
    return report, onnx.load(out)


def test_conv_bn_folding_keeps_outputs_and_maps_nodes(tmp_path):
    model = conv_bn_model(size=16)
    report, converted = _convert(tmp_path, model)
    assert [n.op_type for n in converted.graph.node] == ["Conv", "Relu", "Conv"]
    assert report.node_mapping["conv"] == ["conv", "bn"]
    assert report.node_mapping["relu"] == ["relu"]
    assert {"pass": "ConvBnFusion", "nodes": ["conv", "bn"], "result": "conv",
            "detail": "bn folded into conv"} in report.fusions
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(run(converted, {"image": x})[0], run(model, {"image": x})[0], atol=1e-5)
    written = json.loads((tmp_path / "out.report.json").read_text())
    assert written["node_mapping"]["conv"] == ["conv", "bn"]
    stamps = {p.key: p.value for p in converted.metadata_props}
    assert stamps == {"studio.convert.source": str(tmp_path / "src.onnx"),
                      "studio.convert.report": str(tmp_path / "out.report.json")}


def test_constant_nodes_holding_weights_are_folded_too(tmp_path):
    model = conv_bn_model(size=16, constants_as_nodes=True)  # weights in Constant nodes, as Paddle exports
    report, converted = _convert(tmp_path, model)
    assert [n.op_type for n in converted.graph.node] == ["Conv", "Relu", "Conv"]
    # The Constant nodes that held the Conv's and the BN's values are credited to the fused Conv.
    assert set(report.node_mapping["conv"]) >= {"conv", "bn", "const_conv/weight", "const_bn/var"}
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(run(converted, {"image": x})[0], run(model, {"image": x})[0], atol=1e-5)


def test_mul_add_identity_and_shape_chain(tmp_path):
    model = affine_chain_model()
    report, converted = _convert(tmp_path, model, input_shape="x:2,3,8,8")
    ops = [n.op_type for n in converted.graph.node]
    assert ops == ["Conv", "Relu", "Reshape"], ops
    assert report.node_mapping["conv"] == ["conv", "mul", "add", "identity"]
    assert set(report.node_mapping["reshape"]) >= {"reshape", "shape", "gather", "concat", "minus1"}
    passes = {f["pass"] for f in report.fusions}
    assert {"ConvMulFusion", "ConvAddFusion", "IdentityElimination", "ConstantFolding"} <= passes
    x = np.random.default_rng(2).standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(run(converted, {"x": x})[0], run(model, {"x": x})[0], atol=1e-5)


def test_fusion_switch_file_turns_atc_passes_off(tmp_path):
    switch = tmp_path / "fusion_switch.cfg"
    switch.write_text("# keep BN separate\nConvBatchnormFusionPass:off\nSoftmaxFusionPass:on\n")
    report, converted = _convert(tmp_path, conv_bn_model(size=8), fusion_switch_file=switch)
    assert "BatchNormalization" in [n.op_type for n in converted.graph.node]
    assert report.passes["ConvBnFusion"] is False
    assert report.atc_only_switches == ["SoftmaxFusionPass"]


def test_fusion_switch_json_syntax():
    switches = parse_fusion_switch('{"Switch":{"GraphFusion":{"ALL":"off","ConvScaleFusionPass":"on"},'
                                   '"UBFusion":{"ALL":"off"}}}')
    assert switches.local_passes() == {"ConvBnFusion": False, "ConvAddFusion": False, "ConvMulFusion": True,
                                       "MatMulAddFusion": False}
    assert switches.all_ub is False


@pytest.mark.parametrize("text, needle", [
    ("ConvBatchnormFusionPass=off\n", "line 1"),
    ('{"Switch": {"GraphFusion": {"X": "maybe"}}}', "Use \"on\" or \"off\""),
    ('{"Switch": {"GraphFusion": ', "line 1"),
])
def test_broken_fusion_switch_files(text, needle):
    with pytest.raises(UserError) as err:
        parse_fusion_switch(text, "switch.cfg")
    assert needle in str(err.value)


def test_not_onnx_is_a_clear_error(tmp_path):
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"this is not a model at all \x00\xff" * 10)
    with pytest.raises(UserError) as err:
        run_job(convert_model(ConvertOptions(model=bogus, output=tmp_path / "o.onnx")))
    assert "Not an ONNX model" in err.value.what
    pb = tmp_path / "frozen.pb"
    pb.write_bytes(b"\x0a\x03abc")
    with pytest.raises(UserError, match="--atc"):
        run_job(convert_model(ConvertOptions(model=pb, output=tmp_path / "o.onnx")))
    good = tmp_path / "good.onnx"
    onnx.save(conv_bn_model(size=64), good)
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(UserError, match="truncated"):
        run_job(convert_model(ConvertOptions(model=truncated, output=tmp_path / "o.onnx")))
    with pytest.raises(UserError, match="FP32 or FP16"):
        run_job(convert_model(ConvertOptions(model=bogus, output=tmp_path / "o.onnx", output_type="INT8")))


def test_cancel_stops_between_steps_and_writes_nothing(tmp_path):
    from studio.core.errors import Cancelled
    from studio.core.jobs import CancelToken

    src = tmp_path / "m.onnx"
    onnx.save(conv_bn_model(size=8), src)
    token = CancelToken()
    job = convert_model(ConvertOptions(model=src, output=tmp_path / "o.onnx"), token)
    next(job)  # loading
    token.cancel()
    with pytest.raises(Cancelled):
        run_job(job)
    assert not list(tmp_path.glob("o.onnx*"))


def test_out_nodes_cut_the_graph_and_unknown_names_are_named(tmp_path):
    report, converted = _convert(tmp_path, conv_bn_model(size=8), out_nodes="relu:0", soc_version="Ascend310")
    assert [o.name for o in converted.graph.output] == ["relu"]
    assert [n.name for n in converted.graph.node] == ["conv", "relu"]
    assert report.outputs["relu"]["shape"] == [1, 8, 8, 8]
    assert "ATC-only options ignored by the local conversion: --soc_version" in report.warnings
    with pytest.raises(UserError) as err:
        _convert(tmp_path, conv_bn_model(size=8), out_nodes="rellu:0")
    assert "'rellu:0' in --out_nodes" in err.value.what and "relu" in err.value.fix


def test_tensors_read_inside_subgraphs_are_left_alone(tmp_path):
    from onnx import TensorProto, helper

    # then/else branches read "ident" (the Identity's output) from the outer scope.
    then_g = helper.make_graph([helper.make_node("Relu", ["ident"], ["t"], name="then_relu")], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["ident"], ["e"], name="else_neg")], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["ident"], name="identity"),
         helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
              helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    report, converted = _convert(tmp_path, model)
    assert "identity" in [n.name for n in converted.graph.node]
    x = np.array([-1.0, 2.0], np.float32)
    for cond in (True, False):
        feeds = {"x": x, "cond": np.array(cond)}
        np.testing.assert_array_equal(run(converted, feeds)[0], run(model, feeds)[0])
    # FP16: the If stays FP32 with its bodies; "ident" keeps its name in FP32 for them.
    report, converted = _convert(tmp_path, model, output_type="FP16")
    assert {"node": "if", "op": "If", "reason": "If has sub-graphs: kept FP32 with its bodies"} in report.fp16["kept_fp32"]
    for cond in (True, False):
        feeds = {"x": x, "cond": np.array(cond)}
        np.testing.assert_array_equal(run(converted, feeds)[0], run(model, feeds)[0])


@pytest.mark.parametrize("shape, fused", [([4, 6], True), ([2, 4, 6], False)])
def test_matmul_add_becomes_gemm_only_for_matrices(tmp_path, shape, fused):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.standard_normal((6, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["mm"], name="fc/matmul"),
         helper.make_node("Add", ["mm", "b"], ["add"], name="fc/add"),
         helper.make_node("Relu", ["add"], ["y"], name="relu")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape[:-1] + [3])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    report, converted = _convert(tmp_path, model)
    ops = [n.op_type for n in converted.graph.node]
    assert ops == (["Gemm", "Relu"] if fused else ["MatMul", "Add", "Relu"])
    if fused:
        assert report.node_mapping["fc/matmul"] == ["fc/matmul", "fc/add"]
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(run(converted, {"x": x})[0], run(model, {"x": x})[0], atol=1e-5)
