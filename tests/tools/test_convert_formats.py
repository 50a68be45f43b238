"""Files the converter opens are recognised by content: both fusion switch syntaxes, AIPP configs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from convert_helpers import conv_bn_model, run
from studio.core.errors import UserError
from studio.core.formats import detect
from studio.core.jobs import run_job
from studio.tools.convert.aipp import AippOp, parse_aipp
from studio.tools.convert.convert import convert_model
from studio.tools.convert.options import ConvertOptions


@pytest.mark.parametrize("name, text", [
    ("switch.cfg", "# off for accuracy\nConvBatchnormFusionPass:off\nTbeConvElemwiseFusion : on\n"),
    ("switch.json", '{"Switch": {"GraphFusion": {"ALL": "off"}}}'),
])
def test_fusion_switch_files_go_to_the_converter(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    detected = detect(path)
    assert (detected.format.id, detected.format.panel) == ("fusion_switch", "convert")


def test_plain_text_that_is_not_a_switch_file_is_not_taken(tmp_path):
    path = tmp_path / "notes.cfg"
    path.write_text("ConvBatchnormFusionPass:off\nremember to buy milk\n")
    try:
        found = detect(path).format.id
    except UserError:
        found = None
    assert found != "fusion_switch"


@pytest.mark.parametrize("op, channels, raw_shape", [
    (AippOp(input_format="RGB888_U8", mean=[10, 20, 30, 0], var_reci=[0.1, 0.2, 0.3, 1]), 3, (1, 16, 16, 3)),
    (AippOp(input_format="XRGB8888_U8", ax_swap_switch=True, rbuv_swap_switch=True), 3, (1, 16, 16, 4)),
    (AippOp(input_format="YUV400_U8", min=[0.5, 0, 0, 0], var_reci=[0.01, 1, 1, 1]), 1, (1, 16, 16, 1)),
    (AippOp(input_format="YUV400_U8", csc_switch=True), 1, (1, 16, 16, 1)),
    (AippOp(input_format="YUV420SP_U8", csc_switch=True, rbuv_swap_switch=True, crop=True, load_start_pos_w=2,
            load_start_pos_h=4, crop_size_w=16, crop_size_h=16, src_image_size_w=20, src_image_size_h=20), 3,
     (1, 30, 20, 1)),
    (AippOp(input_format="YUV420SP_U8", csc_switch=False), 3, (1, 24, 16, 1)),
])
def test_every_format_graph_equals_the_numpy_reference(tmp_path, op, channels, raw_shape):
    cfg = tmp_path / "aipp.cfg"
    cfg.write_text(op.to_text())
    src = tmp_path / "m.onnx"
    onnx.save(conv_bn_model(size=16, channels=channels), src)
    out = tmp_path / "o.onnx"
    report = run_job(convert_model(ConvertOptions(model=src, output=out, insert_op_conf=cfg)))
    assert report.inputs["image"]["shape"] == list(raw_shape)
    raw = np.random.default_rng(4).integers(0, 256, raw_shape, dtype=np.uint8)
    pre = parse_aipp(op.to_text()).ops[0].apply(raw).transpose(0, 3, 1, 2)
    (expected,) = run(onnx.load(src), {"image": np.ascontiguousarray(pre)})
    (got,) = run(onnx.load(out), {"image": raw})
    np.testing.assert_allclose(got, expected, atol=1e-3, rtol=1e-4)
