"""The converter's part of the demo workspace: an AIPP config for the demo U-Net and the U-Net
converted with it (AIPP + Conv/BN folding + FP16), validated on the demo's 640x640 picture, and a
fusion switch file (the form ATC's ``--fusion_switch_file`` takes)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.tools.convert.aipp import AippOp, AippConfig

CFG_NAME = "unet_aipp.cfg"
CONVERTED_NAME = "unet_converted.onnx"
FUSION_SWITCH_NAME = "fusion_switch.cfg"
FUSION_SWITCH_TEXT = """\
# ATC fusion switches (atc --fusion_switch_file, studio convert --fusion-switch-file):
# keep BatchNorm as its own op, e.g. to compare it op by op with the original model
ConvBatchnormFusionPass:off
"""


def demo_aipp() -> AippConfig:
    """A camera-style config: RGB888 640x640 frames, centre 256x256 crop, scaled to [-1, 1]."""
    op = AippOp(input_format="RGB888_U8", src_image_size_w=640, src_image_size_h=640, crop=True,
                load_start_pos_w=192, load_start_pos_h=192, crop_size_w=256, crop_size_h=256,
                mean=[127, 127, 127, 0], min=[0.5, 0.5, 0.5, 0], var_reci=[1 / 127.5] * 3 + [1.0])
    return AippConfig([op])


def add_to_demo(folder: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, list[Path]]:
    """Write ``convert/unet_aipp.cfg``, ``convert/fusion_switch.cfg``, ``convert/unet_converted.onnx``
    and its report; show the AIPP cfg."""
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions

    out_dir = Path(folder) / "convert"
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = out_dir / CFG_NAME
    if not cfg.is_file():
        header = ("# AIPP for the demo U-Net: 640x640 RGB camera frames, centre 256x256 crop, scaled to [-1, 1]\n"
                  "# model: ../models/unet.onnx\n# preview: ../images/aipp_640.png\n")
        cfg.write_text(header + demo_aipp().to_text(), encoding="utf-8")
    switches = out_dir / FUSION_SWITCH_NAME
    if not switches.is_file():
        switches.write_text(FUSION_SWITCH_TEXT, encoding="utf-8")
    converted = out_dir / CONVERTED_NAME
    model = Path(folder) / "models" / "unet.onnx"
    if not converted.is_file() and model.is_file():
        image = Path(folder) / "images" / "aipp_640.png"
        options = ConvertOptions(model=model, output=converted, insert_op_conf=cfg, output_type="FP16",
                                 validate_image=image if image.is_file() else None)
        yield from convert_model(options, cancel)
    return [cfg]
