"""--input_shape: parsing, fixing dynamic dims, and errors that say exactly what to add."""

from __future__ import annotations

import onnx
import pytest

from convert_helpers import conv_bn_model
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.convert.convert import convert_model
from studio.tools.convert.input_shape import fix_input_shapes, parse_input_shape
from studio.tools.convert.options import ConvertOptions


def test_parse_atc_syntax_with_tf_names_ranges_and_dynamic_dims():
    specs = parse_input_shape('"input/input_data:0:1,416,416,3;mask:-1,1~8"')
    assert specs["input/input_data:0"].dims == (1, 416, 416, 3)
    assert specs["mask"].dims == (-1, (1, 8))
    assert specs["mask"].text() == "mask:-1,1~8"


@pytest.mark.parametrize("spec, needle", [
    ("image:1,3,x,224", "Dim 2 of input 'image'"),
    ("1,3,224,224", "has no input name"),
    ("image:1,0,3,3", "is 0"),
    ("a:1;a:2", "appears twice"),
])
def test_parse_errors_name_the_entry(spec, needle):
    with pytest.raises(UserError) as err:
        parse_input_shape(spec)
    assert needle in str(err.value)
    assert err.value.where == "--input_shape"


def test_fix_dynamic_batch_then_infer_shapes(tmp_path):
    model = conv_bn_model(batch="N")
    path = tmp_path / "dyn.onnx"
    onnx.save(model, path)
    report = run_job(convert_model(ConvertOptions(model=path, output=tmp_path / "out.onnx", input_shape="image:4,3,32,32")))
    assert report.inputs["image"]["shape"] == [4, 3, 32, 32]
    assert report.outputs["out"]["shape"] == [4, 4, 32, 32]  # inferred after fixing
    converted = onnx.load(tmp_path / "out.onnx")
    assert converted.graph.value_info  # intermediate shapes recorded


def test_open_dynamic_dim_names_input_dim_and_the_exact_option(tmp_path):
    path = tmp_path / "dyn.onnx"
    onnx.save(conv_bn_model(batch="N"), path)
    with pytest.raises(UserError) as err:
        run_job(convert_model(ConvertOptions(model=path, output=tmp_path / "out.onnx")))
    message = str(err.value)
    assert "Input 'image' has a dynamic dim 0 ('N')" in message
    assert '--input_shape="image:1,3,32,32"' in message
    assert not (tmp_path / "out.onnx").exists()


@pytest.mark.parametrize("shape, message", [
    ("img:1,3,32,32", "(?s)'img', which is not an input.*inputs are: 'image'"),  # an unknown input name
    ("image:1,3,32", "has 4 dims but --input_shape gives 3"),  # the wrong rank
    ("image:1,3,64,64", "fixed at 32 in the model"),  # a fixed dim given another size
])
def test_unknown_input_name_and_wrong_rank_and_fixed_dim_conflict(shape, message):
    with pytest.raises(UserError, match=message):
        fix_input_shapes(conv_bn_model(batch="N"), shape)


def test_local_conversion_refuses_ranges_and_minus_one():
    with pytest.raises(UserError, match="local conversion needs a fixed size"):
        fix_input_shapes(conv_bn_model(batch="N"), "image:-1,3,32,32")
