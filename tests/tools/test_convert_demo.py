"""The converter's demo content: an AIPP config for the U-Net and the U-Net converted with it."""

from __future__ import annotations

import json

from studio.core.formats import detect
from studio.core.jobs import run_job
from studio.tools.convert.aipp import load_aipp
from studio.tools.convert.demo import add_to_demo
from studio.tools.demo.workspace import create_demo_workspace


def test_demo_writes_config_converted_unet_and_report_once(tmp_path):
    folder = tmp_path / "demo"
    run_job(create_demo_workspace(folder))
    shown = run_job(add_to_demo(folder, None))
    cfg = folder / "convert" / "unet_aipp.cfg"
    assert shown == [cfg]
    assert detect(cfg).format.panel == "convert"
    (op,) = load_aipp(cfg).ops
    assert (op.src_image_size_w, op.crop_size_w, op.input_format) == (640, 256, "RGB888_U8")
    report = json.loads((folder / "convert" / "unet_converted.report.json").read_text())
    assert report["inputs"]["image"] == {"shape": [1, 640, 640, 3], "dtype": "uint8"}
    assert report["validation"]["passed"] and report["validation"]["input"] == "image aipp_640.png"
    assert report["fp16"]["converted_initializers"] > 0
    from studio.tools.convert.fusion_switch import load_fusion_switch

    switches = folder / "convert" / "fusion_switch.cfg"
    assert detect(switches).format.panel == "convert"
    assert load_fusion_switch(switches).local_passes() == {"ConvBnFusion": False}
    converted = folder / "convert" / "unet_converted.onnx"
    stamp = converted.stat().st_mtime_ns
    run_job(add_to_demo(folder, None))  # runs on every --demo start: nothing is redone
    assert converted.stat().st_mtime_ns == stamp
