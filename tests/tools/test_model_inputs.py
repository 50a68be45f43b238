"""--input / --input-shape parsing and feeds: dynamic axes are never filled in silently."""

from __future__ import annotations

import numpy as np
import pytest

from studio.errors import UserError
from studio.model_inputs import InputSpec, make_feeds, parse_input_files, parse_input_shapes, resolve_shape


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
