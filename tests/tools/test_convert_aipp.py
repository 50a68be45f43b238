"""AIPP: the real config files, parse errors with line numbers, and the inserted pre-processing
checked against the same image pre-processed by hand with OpenCV."""

from __future__ import annotations

import cv2
import numpy as np
import onnx
import pytest

from convert_helpers import conv_bn_model, run
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.convert.aipp import AippOp, load_aipp, parse_aipp
from studio.tools.convert.convert import convert_model
from studio.tools.convert.options import ConvertOptions


def test_parse_rgb_fixture(ascend_fixtures):
    config = load_aipp(ascend_fixtures / "cfg" / "aipp_rgb_static.cfg")
    (op,) = config.ops
    assert (op.aipp_mode, op.input_format) == ("static", "RGB888_U8")
    assert (op.src_image_size_w, op.src_image_size_h) == (640, 640)
    assert op.rbuv_swap_switch and not op.csc_switch
    assert op.var_reci[:3] == pytest.approx([1 / 255] * 3)
    assert op.min[:3] == [0, 0, 0]


def test_parse_yuv_fixture(ascend_fixtures):
    (op,) = load_aipp(ascend_fixtures / "cfg" / "aipp_yuv420sp_csc.cfg").ops
    assert op.input_format == "YUV420SP_U8" and op.csc_switch and not op.crop
    assert op.matrix == [[256, 0, 359], [256, -88, -183], [256, 454, 0]]
    assert op.input_bias == [0, 128, 128]
    assert op.related_input_rank == 0


@pytest.mark.parametrize("text, line, needle", [
    ("aipp_op {\n aipp_mode : static\n input_format : RGB888_U8\n var_reci_chn0 : 0.5\n}", 4, "did you mean 'var_reci_chn_0'"),
    ("aipp_op {\n aipp_mode : static\n input_format : RGB888\n}", 3, "did you mean RGB888_U8"),
    ("aipp_op {\n aipp_mode : static\n input_format : RGB888_U8\n csc_switch : yes\n}", 4, "Use true or false"),
    ("aipp_op {\n aipp_mode : static\n input_format : RGB888_U8\n", 3, "'}' is missing"),
    ("aipp_mode : static\n", 1, "outside an aipp_op block"),
    ("aipp_op {\n aipp_mode static\n}", 2, "expected 'key : value'"),
])
def test_broken_aipp_names_the_line(text, line, needle):
    with pytest.raises(UserError) as err:
        parse_aipp(text, "broken.cfg")
    assert f"broken.cfg, line {line}" in err.value.where
    assert needle.lower() in str(err.value).lower()


def test_rules_of_a_static_block():
    with pytest.raises(UserError, match="needs input_format"):
        parse_aipp("aipp_op {\n aipp_mode : static\n}")
    with pytest.raises(UserError, match="even src_image_size"):
        parse_aipp("aipp_op {\naipp_mode : static\ninput_format : YUV420SP_U8\nsrc_image_size_w : 63\nsrc_image_size_h : 64\n}")
    with pytest.raises(UserError, match="crop window goes past"):
        parse_aipp("aipp_op {\naipp_mode : static\ninput_format : RGB888_U8\nsrc_image_size_w : 64\nsrc_image_size_h : 64\n"
                   "crop : true\nload_start_pos_w : 40\ncrop_size_w : 32\ncrop_size_h : 32\n}")


def test_written_text_parses_back_to_the_same_block(ascend_fixtures):
    (op,) = load_aipp(ascend_fixtures / "cfg" / "aipp_yuv420sp_csc.cfg").ops
    (again,) = parse_aipp(op.to_text()).ops
    again.line = op.line
    assert again == op


def test_rgb_fixture_model_matches_opencv_by_hand(ascend_fixtures, tmp_path):
    """Converted model on the raw RGB image == original model on the image pre-processed with OpenCV.

    Tolerance: 1e-4 absolute on the outputs (float32 rounding of the same arithmetic).
    """
    model_path = tmp_path / "m640.onnx"
    onnx.save(conv_bn_model(size=640), model_path)
    out = tmp_path / "m640_aipp.onnx"
    report = run_job(convert_model(ConvertOptions(model=model_path, output=out,
                                                  insert_op_conf=ascend_fixtures / "cfg" / "aipp_rgb_static.cfg")))
    assert report.inputs["image"] == {"shape": [1, 640, 640, 3], "dtype": "uint8"}
    rng = np.random.default_rng(3)
    bgr = rng.integers(0, 256, (640, 640, 3), dtype=np.uint8)
    rgb_raw = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)  # what the camera hands the NPU: RGB888
    # By hand: rbuv_swap_switch turns RGB into BGR, var_reci 1/255 scales, NCHW for the model.
    by_hand = cv2.cvtColor(rgb_raw, cv2.COLOR_RGB2BGR).astype(np.float32) * np.float32(0.0039215686274509803921568627451)
    by_hand = by_hand.transpose(2, 0, 1)[None]
    (expected,) = run(onnx.load(model_path), {"image": by_hand})
    (got,) = run(onnx.load(out), {"image": rgb_raw[None]})
    np.testing.assert_allclose(got, expected, atol=1e-4)


def test_yuv_fixture_model_matches_numpy_reference(ascend_fixtures, tmp_path):
    model_path = tmp_path / "m.onnx"
    onnx.save(conv_bn_model(size=32), model_path)
    out = tmp_path / "m_yuv.onnx"
    config = load_aipp(ascend_fixtures / "cfg" / "aipp_yuv420sp_csc.cfg")
    report = run_job(convert_model(ConvertOptions(model=model_path, output=out, insert_op_conf=config.path)))
    assert report.inputs["image"]["shape"] == [1, 48, 32, 1]  # NV12: H*3/2 rows
    raw = np.random.default_rng(5).integers(0, 256, (1, 48, 32, 1), dtype=np.uint8)
    pre = config.ops[0].apply(raw).transpose(0, 3, 1, 2)
    (expected,) = run(onnx.load(model_path), {"image": np.ascontiguousarray(pre)})
    (got,) = run(onnx.load(out), {"image": raw})
    np.testing.assert_allclose(got, expected, atol=1e-3)


def test_yuv_csc_reproduces_opencv_full_range_ycrcb(ascend_fixtures):
    """The fixture's JPEG matrix turns OpenCV's full-range YCrCb back into the RGB image (±3 levels:
    the hardware's >> 8 truncates, OpenCV rounds)."""
    (op,) = load_aipp(ascend_fixtures / "cfg" / "aipp_yuv420sp_csc.cfg").ops
    blocks = np.random.default_rng(9).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    rgb = blocks.repeat(2, axis=0).repeat(2, axis=1)  # 2x2 flat blocks: chroma subsampling loses nothing
    ycrcb = cv2.cvtColor(rgb, cv2.COLOR_RGB2YCrCb)
    uv = np.stack([ycrcb[::2, ::2, 2], ycrcb[::2, ::2, 1]], axis=-1).reshape(8, 16)  # NV12: U (Cb), V (Cr)
    nv12 = np.concatenate([ycrcb[..., 0], uv])[None, ..., None]
    back = op.apply(nv12)[0]
    assert np.abs(back - rgb.astype(np.float32)).max() <= 3


def test_crop_padding_and_xrgb_layout(tmp_path):
    op = AippOp(input_format="XRGB8888_U8", src_image_size_w=40, src_image_size_h=36, crop=True,
                load_start_pos_w=4, load_start_pos_h=2, crop_size_w=30, crop_size_h=30, padding=True,
                left_padding_size=1, right_padding_size=1, top_padding_size=1, bottom_padding_size=1,
                padding_value=0.5, mean=[10, 20, 30, 0], var_reci=[0.5, 0.25, 0.125, 1])
    text = op.to_text()
    model_path = tmp_path / "m.onnx"
    onnx.save(conv_bn_model(size=32), model_path)
    cfg = tmp_path / "x.cfg"
    cfg.write_text(text)
    out = tmp_path / "o.onnx"
    report = run_job(convert_model(ConvertOptions(model=model_path, output=out, insert_op_conf=cfg)))
    assert report.inputs["image"]["shape"] == [1, 36, 40, 4]
    raw = np.random.default_rng(2).integers(0, 256, (1, 36, 40, 4), dtype=np.uint8)
    pre = parse_aipp(text).ops[0].apply(raw)
    assert pre.shape == (1, 32, 32, 3) and pre[0, 0, 0, 0] == 0.5  # padded corner
    (expected,) = run(onnx.load(model_path), {"image": np.ascontiguousarray(pre.transpose(0, 3, 1, 2))})
    (got,) = run(onnx.load(out), {"image": raw})
    np.testing.assert_allclose(got, expected, atol=1e-4)


def test_aipp_size_mismatch_says_what_to_change(ascend_fixtures, tmp_path):
    model_path = tmp_path / "m.onnx"
    onnx.save(conv_bn_model(size=32), model_path)
    with pytest.raises(UserError, match="AIPP produces 640x640 but input 'image' is 32x32"):
        run_job(convert_model(ConvertOptions(model=model_path, output=tmp_path / "o.onnx",
                                             insert_op_conf=ascend_fixtures / "cfg" / "aipp_rgb_static.cfg")))
