"""The Converter's fields belong to one model: AIPP set up for a picture model does not stay ticked
for an audio model handed over next, the output path is the new model's (in the workspace's
convert/ folder, not beside the last model or a repro), and an AIPP config on a model that takes
no picture says to convert without AIPP, not to give the input an image shape."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.ui.panels.convert import ConvertPanel

from convert_helpers import conv_bn_model

AIPP = """aipp_op {
 aipp_mode : static
 input_format : RGB888_U8
 src_image_size_w : 64
 src_image_size_h : 64
 var_reci_chn_0 : 0.0039216
 var_reci_chn_1 : 0.0039216
 var_reci_chn_2 : 0.0039216
}
"""


@pytest.fixture
def panel(make_panel, tmp_path):
    widget = make_panel(ConvertPanel, size=(1000, 700))
    widget.workspace_folder = tmp_path / "ws"
    return widget


def _audio(tmp_path: Path) -> Path:
    from studio.tools.demo.journeys import build_fp16_frontend

    path = tmp_path / "elsewhere" / "fp16_frontend.onnx"
    path.parent.mkdir()
    onnx.save(build_fp16_frontend(), path)
    return path


def test_aipp_and_output_do_not_carry_over_to_the_next_model(qtbot, panel, tmp_path):
    picture = tmp_path / "cam.onnx"
    onnx.save(conv_bn_model(size=64), picture)
    cfg = tmp_path / "cam_aipp.cfg"
    cfg.write_text(AIPP)
    panel.model_page.set_model(picture)
    assert Path(panel.model_page.output_edit.text()) == tmp_path / "ws" / "convert" / "cam_converted.onnx"
    panel.load_aipp(cfg)
    qtbot.waitUntil(lambda: panel.aipp_page.aipp_enabled, timeout=5000)

    audio = _audio(tmp_path)
    panel.links.convert_model.emit(audio)  # the graph panel's "Convert…"
    assert panel.model_page.model_path() == audio
    assert not panel.aipp_page.aipp_enabled
    assert "AIPP pre-processing switched off" in panel.log.toPlainText()
    assert Path(panel.model_page.output_edit.text()) == tmp_path / "ws" / "convert" / "fp16_frontend_converted.onnx"
    panel.update_command()
    assert "--insert-op-conf" not in panel.advanced_page.preview.toPlainText()


def test_aipp_ticked_for_a_model_without_an_image_input_is_switched_off(qtbot, panel, tmp_path):
    audio = _audio(tmp_path)
    panel.model_page.set_model(audio)
    panel.aipp_page.enabled_box.setChecked(True)  # ticked by hand, for this very model
    qtbot.waitUntil(lambda: panel.model_page.info is not None, timeout=5000)
    qtbot.waitUntil(lambda: not panel.aipp_page.aipp_enabled, timeout=5000)
    assert "no image input" in panel.log.toPlainText() and "frames [1,64,256]" in panel.log.toPlainText()


def test_an_aipp_error_on_an_audio_input_suggests_converting_without_aipp(tmp_path):
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions

    audio = _audio(tmp_path)
    dims = [d.dim_value for d in onnx.load(audio).graph.input[0].type.tensor_type.shape.dim]
    assert len(dims) == 3  # independently: no image shape fits this input
    cfg = tmp_path / "aipp.cfg"
    cfg.write_text(AIPP)
    with pytest.raises(UserError) as info:
        run_job(convert_model(ConvertOptions(model=audio, output=tmp_path / "out.onnx", insert_op_conf=cfg)))
    assert "no image" in info.value.what and "frames" in info.value.what
    assert "without AIPP" in info.value.fix and "--input_shape" not in info.value.fix
