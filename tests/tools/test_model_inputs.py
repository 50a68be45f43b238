"""--input / --input-shape parsing and feeds: dynamic axes are never filled in silently."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.errors import UserError
from studio.core.model_inputs import InputSpec, make_feeds, parse_input_files, parse_input_shapes, resolve_shape


def test_parse_shapes_single_and_atc_form():
    assert parse_input_shapes(["image=1,3,224,224"]) == {"image": (1, 3, 224, 224)}
    assert parse_input_shapes(["image=1x3x224x224"]) == {"image": (1, 3, 224, 224)}
    assert parse_input_shapes(["image:1,3,224,224"]) == {"image": (1, 3, 224, 224)}
    assert parse_input_shapes(["a:1,3;b:2,4"]) == {"a": (1, 3), "b": (2, 4)}
    # TensorFlow names carry a colon: the dims follow the last one.
    assert parse_input_shapes(["input/input_data:0:1,416,416,3"]) == {"input/input_data:0": (1, 416, 416, 3)}
    assert parse_input_shapes(["scalar:"]) == {"scalar": ()} == parse_input_shapes(["scalar="])


@pytest.mark.parametrize("spec", ["image", "image:1,y", ":1,2", "=1,2", "image=0,3", "image:-1,3"])
def test_parse_shapes_rejects(spec):
    with pytest.raises(UserError) as err:
        parse_input_shapes([spec])
    assert "--input-shape" in str(err.value)


def test_parse_files():
    assert {k: str(v) for k, v in parse_input_files(["x=a.npy"]).items()} == {"x": "a.npy"}
    with pytest.raises(UserError):
        parse_input_files(["a.npy"])


def test_dynamic_axis_without_size_names_input_axis_and_option():
    spec = InputSpec("images", ("batch", 3, 224, 224))
    with pytest.raises(UserError) as err:
        resolve_shape(spec, {})
    text = str(err.value)
    assert "'images'" in text and "axis 0" in text and "'batch'" in text
    assert "--input-shape images=N,3,224,224" in text
    assert resolve_shape(spec, {"images": (8, 3, 224, 224)}) == (8, 3, 224, 224)


def test_given_shape_must_agree_with_fixed_dims_and_rank():
    spec = InputSpec("x", (None, 3))
    with pytest.raises(UserError, match="fixes it at 3"):
        resolve_shape(spec, {"x": (2, 4)})
    with pytest.raises(UserError, match="3 dimensions; the model has 2"):
        resolve_shape(spec, {"x": (2, 3, 1)})


def test_make_feeds_seeded_and_from_files(tmp_path):
    specs = [InputSpec("x", ("N", 4)), InputSpec("ids", (2,), "tensor(int64)")]
    a = make_feeds(specs, shapes={"x": (3, 4)}, seed=7)
    b = make_feeds(specs, shapes={"x": (3, 4)}, seed=7)
    assert a["x"].shape == (3, 4) and a["x"].dtype == np.float32
    assert np.array_equal(a["x"], b["x"]) and a["ids"].dtype == np.int64
    np.save(tmp_path / "x.npy", np.ones((5, 4), np.float64))
    feeds = make_feeds(specs, files={"x": tmp_path / "x.npy"})
    assert feeds["x"].shape == (5, 4) and feeds["x"].dtype == np.float32  # cast to the model's type
    with pytest.raises(UserError, match="no input named 'y'"):
        make_feeds(specs, shapes={"y": (1,)})
    np.save(tmp_path / "bad.npy", np.ones((5, 5), np.float32))
    with pytest.raises(UserError, match="axis 1"):
        make_feeds(specs, files={"x": tmp_path / "bad.npy"})


def _three_input_model(path):
    """x: float [N, 3, 4] (dynamic batch), ids: int64 [2, 5], flag: bool [3]; each passed through."""
    import onnx
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4]),
              helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 5]),
              helper.make_tensor_value_info("flag", TensorProto.BOOL, [3])]
    outputs = [helper.make_tensor_value_info(f"{v.name}_out", v.type.tensor_type.elem_type, None) for v in inputs]
    nodes = [helper.make_node("Identity", [v.name], [f"{v.name}_out"], name=f"copy_{v.name}") for v in inputs]
    model = helper.make_model(helper.make_graph(nodes, "three", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_profile_dump_and_bench_feed_identical_arrays_for_one_seed(tmp_path):
    """One synthesiser: the same model and seed give the same arrays whichever engine runs it."""
    import json

    import onnxruntime as ort

    from studio.core.jobs import run_job
    from studio.core.model_inputs import session_specs
    from studio.tools.accuracy.local_dump import dump_model
    from studio.tools.profiler.local_inputs import feed_inputs

    model = _three_input_model(tmp_path / "three.onnx")
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    seed, shapes = 11, {"x": [2, 3, 4]}
    profile, used = feed_inputs(session, {}, seed, shapes, model)                          # studio profile run
    bench = make_feeds(session_specs(session), {}, {"x": (2, 3, 4)}, seed)                 # studio bench
    folder = run_job(dump_model(model, tmp_path / "dump", seed=seed, shapes=shapes))  # studio dump
    manifest = json.loads((folder / "manifest.json").read_text())
    dump = {name: np.load(folder / info["file"]) for name, info in manifest["inputs"].items()}
    assert set(profile) == set(bench) == set(dump) == {"x", "ids", "flag"}
    for name in profile:
        assert profile[name].dtype == bench[name].dtype == dump[name].dtype, name
        assert np.array_equal(profile[name], bench[name]) and np.array_equal(profile[name], dump[name]), name
    assert (profile["x"] < 0).any()  # floats are standard normal, not only [0, 1)
    assert used["x"].source == f"seeded random (seed {seed}), shape given"
    assert used["ids"].source == f"seeded random (seed {seed}), static shape"
    other = make_feeds(session_specs(session), {}, {"x": (2, 3, 4)}, seed + 1)
    assert not np.array_equal(other["x"], bench["x"])


def test_a_dynamic_dim_is_never_sized_by_the_synthesiser():
    from studio.core.model_inputs import random_array

    with pytest.raises(UserError) as caught:
        make_feeds([InputSpec("x", ("N", 3))], seed=0)
    assert "axis 0" in caught.value.what and "--input-shape x=N,3" in caught.value.fix
    rng = np.random.default_rng(0)
    assert random_array("b", (4,), np.bool_, rng).dtype == np.bool_
    assert set(np.unique(random_array("i", (200,), np.int32, rng))) <= set(range(10))


def test_convert_validation_never_sizes_a_dynamic_dim_at_zero(tmp_path):
    """Validation used to feed a [0, 3] array for an [N, 3] input and call 0 elements a pass."""
    from onnx import TensorProto, helper

    from studio.tools.convert.validate import validate

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with pytest.raises(UserError) as caught:
        validate(model, model)
    assert "dynamic axis 0 (N)" in caught.value.what and "--input-shape x=N,3" in caught.value.fix
    given = validate(model, model, given={"x": np.arange(6, dtype=np.float32).reshape(2, 3)})  # data sizes it
    assert given.inputs["x"]["shape"] == [2, 3] and all(o.passed for o in given.outputs)
