"""Input and op names as tf2onnx writes them (``model_1/conv/BiasAdd;model_1/conv/Conv2D:0``: a ``;``
and a ``:`` in every name) work on every target of reduce and precision and in every option that
takes names: ``--input-shape`` (one ``NAME=DIMS`` per input, or ATC's joined form read against the
model's real input names), ``--keep-fp32``, and the reproduction commands a repro is written with."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from studio.core.errors import UserError
from studio.core.model_inputs import parse_input_shapes
from studio.core.jobs import run_job
from studio.tools.convert.convert import convert_model
from studio.tools.convert.input_shape import parse_input_shape
from studio.tools.convert.options import ConvertOptions
from studio.tools.demo.journeys import build_fp16_frontend
from studio.tools.demo.models import build_unet
from tf_names import dynamic_batch, tf_name, tf_node, tf_style

FRAMES = tf_name("frames")
IMAGE = tf_name("image")


def _studio(*args, cwd=None, home) -> subprocess.CompletedProcess:
    env = {**os.environ, "STUDIO_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "studio", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=cwd)


@pytest.fixture
def frontend(tmp_path):
    """The demo audio front-end (FP16 overflows its power spectrum), named as tf2onnx names."""
    path = tmp_path / "frontend_tf.onnx"
    onnx.save(tf_style(build_fp16_frontend()), path)
    return path


@pytest.fixture
def unet(tmp_path):
    """The demo U-Net, tf2onnx names, batch left open."""
    path = tmp_path / "unet_tf.onnx"
    onnx.save(dynamic_batch(tf_style(build_unet())), path)
    return path


def test_a_name_holding_semicolons_and_colons_is_one_entry():
    from studio.core.shape_text import split_entries

    assert parse_input_shapes([f"{IMAGE}=2,3,8,8"]) == {IMAGE: (2, 3, 8, 8)}
    assert parse_input_shapes([f"{IMAGE}:2,3,8,8"]) == {IMAGE: (2, 3, 8, 8)}  # ATC's form: after the last ':'
    assert parse_input_shapes(["a,b=1,2", "c=d=3"]) == {"a,b": (1, 2), "c=d": (3,)}
    # ATC's joined form is ambiguous without the model ("x:0" could be an input of dims (0,)) ...
    assert split_entries("x:0;y:0:1,3;z:4") == [("x", "0"), ("y:0", "1,3"), ("z", "4")]
    # ... and read whole against its real input names
    assert parse_input_shapes(["x:0;y:0:1,3;z:4"], names=["x:0;y:0", "z"]) == {"x:0;y:0": (1, 3), "z": (4,)}
    specs = parse_input_shape(f"{IMAGE}:-1,3,8,8;mask:1~4", names=[IMAGE, "mask"])
    assert specs[IMAGE].dims == (-1, 3, 8, 8) and specs["mask"].dims == ((1, 4),)
    assert parse_input_shape({IMAGE: (2, 3, 8, 8)})[IMAGE].dims == (2, 3, 8, 8)  # a structure: nothing to split


def test_an_unknown_name_is_refused_with_the_models_input_names():
    with pytest.raises(UserError) as err:
        parse_input_shapes(["model_1/image:0=1,3"], names=[IMAGE, "mask"])
    assert "'model_1/image:0'" in str(err.value) and f"'{IMAGE}', 'mask'" in err.value.fix


def test_converter_takes_shapes_as_a_structure_and_the_result_matches_the_original(unet, tmp_path):
    out = tmp_path / "fixed.onnx"
    run_job(convert_model(ConvertOptions(model=unet, output=out, input_shape={IMAGE: (2, 3, 256, 256)})))
    converted = onnx.load(out)
    assert [d.dim_value for d in converted.graph.input[0].type.tensor_type.shape.dim] == [2, 3, 256, 256]
    x = np.random.default_rng(1).standard_normal((2, 3, 256, 256)).astype(np.float32)
    want = ort.InferenceSession(str(unet), providers=["CPUExecutionProvider"]).run(None, {IMAGE: x})[0]
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {IMAGE: x})[0]
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-3)


def test_keep_fp32_takes_a_node_name_holding_a_comma(tmp_path):
    model = build_fp16_frontend()
    for node in model.graph.node:
        node.name = f"model_1/{node.name},fused"  # a comma inside a node name
    path = tmp_path / "commas.onnx"
    onnx.save(model, path)
    kept = "model_1/power/real_sq,fused"
    run_job(convert_model(ConvertOptions(model=path, output=tmp_path / "out.onnx", output_type="FP16",
                                         keep_fp32_ops=[kept, "Log,Add"])))
    converted = onnx.load(tmp_path / "out.onnx")
    # the kept Mul still reads and writes FP32: its inputs come from casts to FP32 (a type check by ONNX)
    types = {v.name: v.type.tensor_type.elem_type
             for v in onnx.shape_inference.infer_shapes(converted).graph.value_info}
    node = next(n for n in converted.graph.node if n.name == kept)
    assert types[node.output[0]] == onnx.TensorProto.FLOAT
    log = next(n for n in converted.graph.node if n.op_type == "Log")
    assert types.get(log.output[0], onnx.TensorProto.FLOAT) == onnx.TensorProto.FLOAT


@pytest.mark.parametrize("target", ["fp16-sim", "fp16"])
def test_reduce_on_tf_names_writes_a_repro_whose_commands_run(frontend, tmp_path, studio_home, target):
    done = _studio("accuracy", "reduce", frontend, "-o", tmp_path / "repro", "--target", target, "--json",
                   home=studio_home)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ops"] == [tf_node("power/real_sq")] and result["inputs"] == [tf_name("dft/real")]
    repro = tmp_path / "repro"
    commands = (repro / "commands.sh").read_text()
    if target == "fp16":
        # the converter's line reproduces the target's conversion: quoted, one --input-shape per input
        line = next(line for line in commands.splitlines() if line.startswith("studio convert"))
        argv = shlex.split(line)
        assert argv[argv.index("--input-shape") + 1] == f"{tf_name('dft/real')}=1,64,129"
        assert _studio(*argv[1:], cwd=repro, home=studio_home).returncode == 0
        feeds = dict(np.load(repro / "inputs.npz"))
        converted = onnx.load(repro / "model_fp16.onnx")
        converted.graph.output.extend(onnx.ValueInfoProto(name=o) for n in converted.graph.node for o in n.output)
        session = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
        with np.errstate(all="ignore"):
            dumped = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
        fp16 = dumped[f"{tf_name('power/real_sq')}/fp16"]
        fp32 = ort.InferenceSession(str(repro / "model.onnx"), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        assert fp16.dtype == np.float16 and (~np.isfinite(fp16) & np.isfinite(fp32)).any()  # fails alone


@pytest.mark.parametrize("target", ["fp16-sim", "fp16"])
def test_precision_on_tf_names_finds_the_set_of_the_same_model_named_plainly(frontend, tmp_path, studio_home,
                                                                              target):
    plain = tmp_path / "plain.onnx"
    onnx.save(build_fp16_frontend(), plain)
    found = {}
    for label, path in (("tf", frontend), ("plain", plain)):
        # the tf-named run builds and times the FP16 builds too (the converter reads the names)
        done = _studio("accuracy", "precision", path, "-o", tmp_path / label, "--target", target, "--json",
                       *(["--no-latency"] if label == "plain" else []), home=studio_home)
        assert done.returncode == 0, done.stderr
        found[label] = json.loads(done.stdout)
    assert found["tf"]["keep_fp32"] == [tf_node(op) for op in found["plain"]["keep_fp32"]]
    assert found["tf"]["keep_fp32"] and found["tf"]["minimal"]
    # the set, converted with the converter as a user would, leaves the output finite
    keep = (tmp_path / "tf" / "keep_fp32.txt").read_text().split("\n")
    out = tmp_path / "kept.onnx"
    done = _studio("convert", frontend, "-o", out, "--output-type", "FP16",
                   *[arg for op in filter(None, keep) for arg in ("--keep-fp32", op)], home=studio_home)
    assert done.returncode == 0, done.stderr
    x = np.random.default_rng(0).standard_normal((1, 64, 256)).astype(np.float32)
    y = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {FRAMES: x})[0]
    assert np.isfinite(y).all()


def test_convert_cli_input_shape_with_tf_names(unet, tmp_path, studio_home):
    for spec in (f"{IMAGE}=2,3,256,256", f"{IMAGE}:2,3,256,256"):
        out = tmp_path / "out.onnx"
        done = _studio("convert", unet, "-o", out, "--input-shape", spec, "--json", home=studio_home)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["inputs"][IMAGE]["shape"] == [2, 3, 256, 256]
        assert [d.dim_value for d in onnx.load(out).graph.input[0].type.tensor_type.shape.dim] == [2, 3, 256, 256]
    done = _studio("convert", unet, "-o", tmp_path / "bad.onnx", "--input-shape", "model_1/image:0=2,3,256,256",
                   home=studio_home)
    assert done.returncode == 2 and "'model_1/image:0'" in done.stderr and repr(IMAGE) in done.stderr


def test_out_nodes_takes_tf_names_holding_semicolons(tmp_path):
    path, out = tmp_path / "unet_tf.onnx", tmp_path / "cut.onnx"
    onnx.save(tf_style(build_unet()), path)
    relu, head = tf_name("encoder1/conv1/relu"), tf_node("head/softmax")
    run_job(convert_model(ConvertOptions(model=path, output=out, out_nodes=f"{relu};{head}:0",
                                         fusions={"ConvBnFusion": False})))
    assert [o.name for o in onnx.load(out).graph.output] == [relu, tf_name("mask")]
    # the cut model's first output is the original's tensor of that name (ONNX Runtime, every tensor out)
    x = np.random.default_rng(2).standard_normal((1, 3, 256, 256)).astype(np.float32)
    probe = onnx.load(path)
    probe.graph.output.append(onnx.ValueInfoProto(name=relu))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run([relu], {IMAGE: x})[0]
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run([relu], {IMAGE: x})[0]
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-3)
