"""The Converter wizard, walked as a user walks it: model, AIPP with preview, advanced, Convert."""

from __future__ import annotations

import json
import re
from pathlib import Path

import onnx
import pytest
from PySide6.QtCore import Qt

from studio.core.formats import detect
from studio.ui.panels.convert import ConvertPanel

from convert_helpers import conv_bn_model


@pytest.fixture
def panel(make_panel):
    return make_panel(ConvertPanel, size=(1000, 700))


def _range_max(stats: str) -> float:
    return float(re.search(r"range \[[-0-9.e]+, ([-0-9.e]+)\]", stats)[1])


def test_walk_the_wizard_and_convert(panel, qtbot, tmp_path, ascend_fixtures):
    model = tmp_path / "cam.onnx"
    onnx.save(conv_bn_model(size=640, batch="N"), model)
    # Page 1: the model's inputs are listed off the GUI thread; the dynamic batch is flagged.
    panel.model_page.set_model(model)
    qtbot.waitUntil(lambda: panel.model_page.inputs_table.rowCount() == 1, timeout=5000)
    assert panel.model_page.inputs_table.item(0, 1).text() == "-1,3,640,640"
    assert "Set the -1 dims of image" in panel.model_page.inputs_hint.text()
    panel.model_page.inputs_table.item(0, 1).setText("1,3,640,640")
    assert panel.model_page.input_shape_spec() == "image:1,3,640,640"

    # Page 2: opening the real AIPP config (routed here by content) fills the form and previews it.
    panel.open_file(detect(ascend_fixtures / "cfg" / "aipp_rgb_static.cfg"))
    qtbot.waitUntil(lambda: panel.stack.currentIndex() == 1, timeout=5000)
    page = panel.aipp_page
    assert page.aipp_enabled and page.format_combo.currentText() == "RGB888_U8"
    assert page.src_w.value() == 640 and page.rbuv_swap.isChecked()
    qtbot.waitUntil(lambda: page.last_preview is not None, timeout=5000)
    assert page.last_preview.after.shape == (640, 640, 3)
    assert 0.9 < _range_max(page.stats_label.text()) <= 1.0  # var_reci 1/255
    first = page.last_preview
    page.var[0].setValue(2 / 255)  # a live edit re-runs the preview
    qtbot.waitUntil(lambda: page.last_preview is not first, timeout=5000)
    assert _range_max(page.stats_label.text()) > 1.5

    # Page 3: passes, command preview (local, then ATC), then back to local and turn BN folding off.
    panel.next_button.click()
    assert panel.stack.currentIndex() == 2
    panel.update_command()
    command = panel.advanced_page.preview.toPlainText()
    assert command.startswith(f"studio convert {model}") and "--input-shape image:1,3,640,640" in command
    assert "cam_converted_aipp.cfg" in command  # the edited AIPP is written next to the output
    # (an AIPP file loaded and left as it is would be used in place)
    panel.model_page.set_mode("atc")
    panel.update_command()
    atc = panel.advanced_page.preview.toPlainText()
    assert atc.startswith(f"atc --model={model} --framework=5 --output=") and "--soc_version=Ascend310" in atc
    panel.advanced_page.extra.setText("--soc_version=Ascend910")
    panel.update_command()
    assert "set twice" in panel.advanced_page.preview_error.text()
    panel.advanced_page.extra.setText("")
    panel.model_page.set_mode("local")
    items = panel.advanced_page.passes_list
    bn_item = next(items.item(i) for i in range(items.count()) if items.item(i).data(Qt.ItemDataRole.UserRole) == "ConvBnFusion")
    bn_item.setCheckState(Qt.CheckState.Unchecked)
    panel.model_page.output_type_combo.setCurrentText("FP16")

    # Finish: the job streams into the log, the result loads in the graph panel (behind the log).
    with qtbot.waitSignal(panel.request_load, timeout=20000) as opened:
        panel.finish_button.click()
    output = Path(opened.args[0])
    assert output == tmp_path / "cam_converted.onnx" and output.is_file()
    report = json.loads(output.with_name("cam_converted.report.json").read_text())
    assert report["passes"]["ConvBnFusion"] is False and report["validation"]["passed"]
    assert report["inputs"]["image"]["dtype"] == "uint8"
    written = (tmp_path / "cam_converted_aipp.cfg").read_text()
    assert "var_reci_chn_0 : 0.00784314" in written and "rbuv_swap_switch : true" in written
    assert "output out: max abs error" in panel.log.toPlainText() and "-> ok" in panel.log.toPlainText()
    with qtbot.waitSignal(panel.links.compare_models) as compared:
        panel.compare_button.click()
    assert compared.args == [model, output]


def test_fusion_switch_and_tf_model_routing(panel, qtbot, tmp_path):
    switch = tmp_path / "switch.json"
    switch.write_text('{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "off", "SoftmaxFusionPass": "on"}}}')
    panel.open_file(detect(switch))
    qtbot.waitUntil(lambda: panel.stack.currentIndex() == 2, timeout=5000)
    assert panel.advanced_page.pass_switches()["ConvBnFusion"] is False
    assert "SoftmaxFusionPass" in panel.advanced_page.switch_label.text()
    pb = tmp_path / "face_mask.pb"
    pb.write_bytes(b"\x0a\x05data_\x12\x0bPlaceholder")
    panel.open_file(detect(pb))
    assert panel.model_page.mode == "atc" and panel.stack.currentIndex() == 0
    assert panel.model_page.framework_combo.currentData() == 3
    panel.update_command()
    assert "--framework=3" in panel.advanced_page.preview.toPlainText()
    assert "--fusion_switch_file=" in panel.advanced_page.preview.toPlainText()


def test_broken_aipp_file_is_reported_on_the_notice_board(panel, qtbot, tmp_path):
    cfg = tmp_path / "broken.cfg"
    cfg.write_text("aipp_op {\n aipp_mode : static\n input_format : RGB888_U8\n mean_chn_0 : lots\n}\n")
    posted = []
    stop = panel.runner.board.subscribe(posted.append)
    try:
        panel.open_file(detect(cfg))
        qtbot.waitUntil(lambda: bool(posted), timeout=5000)
        qtbot.wait(50)
    finally:
        stop()
    assert len(posted) == 1 and "broken.cfg, line 4" in posted[0].where
    assert "broken.cfg" not in panel.log.toPlainText()  # said once, not again in the conversion's log
    assert not panel.aipp_page.aipp_enabled


def test_atc_without_cann_says_how_to_run_it_elsewhere(panel, qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no atc here
    model = tmp_path / "m.onnx"
    onnx.save(conv_bn_model(size=8), model)
    panel.model_page.set_model(model)
    panel.model_page.set_mode("atc")
    qtbot.waitUntil(lambda: panel.model_page.inputs_table.rowCount() == 1, timeout=5000)
    panel.finish_button.click()
    qtbot.waitUntil(lambda: "No place to run ATC" in panel.log.toPlainText(), timeout=5000)
    log = panel.log.toPlainText()
    assert f"$ atc --model={model} --framework=5" in log and "Hosts panel" in log
    assert panel.model_page.host_picker.hint.text().startswith("atc is not installed here")
    assert panel.finish_button.isEnabled()
