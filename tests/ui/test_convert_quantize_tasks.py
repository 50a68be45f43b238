"""The Converter's Quantize page with a task target and the Ascend fields, driven as a user drives
it: a tiny segmenter whose one broken layer (an input channel offset by 1000) INT8 ruins, pictures
drawn here with their masks, a Dice target, and AMCT and ATC (the stand-ins of tests/cann_standins)
run on the real loopback sshd. The table's Dice and IoU are checked against numpy on plain ONNX
Runtime runs of the models (ONNX Runtime's own quantiser for the INT8 one), and what came back from
the host against the rollback set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convert_remote_helpers import make_quantize_toolkit
from quantize_helpers import dice_iou, ort_quantize_static
from quantize_task_models import blob_pictures, ort_outputs, segmenter, unit_tensor
from standins import fake_om
from studio.ui.panels.convert import ConvertPanel


@pytest.fixture
def host(tmp_path, sshd_host):
    """A host store holding the test sshd with the AMCT and ATC stand-ins as its toolkit."""
    from studio.remote.context import HostContext
    from studio.remote.hosts import HostStore

    entry, known = sshd_host
    om = fake_om(tmp_path / "stand-in.om")
    entry.toolkit = str(make_quantize_toolkit(tmp_path / "cann", om))
    entry.extra["deploy_root"] = str(tmp_path / "host root")
    store = HostStore(tmp_path / "hosts.toml")
    store.put(entry)
    store.save()
    return HostContext(store=store, known_hosts=known), entry, om


def _percent(value: float) -> str:
    return f"{value * 100:.1f} %"


def test_a_dice_target_with_ascend_on_a_host_runs_to_the_end(make_panel, qtbot, tmp_path, host):
    from onnxruntime.quantization import QuantFormat, QuantType

    context, entry, om = host
    model = tmp_path / "seg.onnx"
    segmenter(model)
    masks = blob_pictures(tmp_path / "pics", 6)
    panel = make_panel(ConvertPanel)
    panel.host_context = context
    panel.model_page.set_model(model)
    panel.go_to(3)
    page = panel.quantize_page
    out = tmp_path / "seg_int8.onnx"
    page.calib_edit.setText(str(tmp_path / "pics"))
    page.output_edit.setText(str(out))
    page.preset_combo.setCurrentIndex(page.preset_combo.findData("unit"))
    page.target.set_kind("dice")
    page.target.drop_spin.setValue(1.0)
    page.target.truth_edit.setText(str(tmp_path / "masks"))
    page.timing_box.setChecked(False)
    page.ascend.box.setChecked(True)
    folder = Path(page.ascend.folder_edit.text())
    assert folder == tmp_path / "seg_int8_ascend"
    page.ascend.soc_edit.setText("Ascend910B1")
    page.ascend.hosts.refresh()
    assert page.ascend.hosts.select(entry.name)

    page.run_button.click()
    assert page.cancel_button.isVisible() and not page.run_button.isEnabled()  # a job: the GUI thread is free
    qtbot.waitUntil(lambda: panel.quantize.result is not None or "failed" in page.step_label.text(), timeout=60000)
    assert panel.quantize.result is not None, panel.log.toPlainText()
    result = panel.quantize.result
    log = panel.log.toPlainText()
    assert "--head" not in log  # a segmenter's target carries no detection settings
    assert re.search(r"\$ studio quantize .*--truth .*masks.*--max-dice-drop 1.*--host " + entry.name, log)

    # The table's task metrics against numpy on plain ONNX Runtime runs of each model.
    pictures = sorted((tmp_path / "pics").iterdir())
    tensors = [unit_tensor(p) for p in pictures]
    truth = [masks[p.stem] for p in pictures]
    int8_model = ort_quantize_static(model, tmp_path / "all.onnx", [{"image": t} for t in tensors],
                                     quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                                     weight_type=QuantType.QInt8)
    expected = {"FP32": dice_iou(ort_outputs(model, tensors), truth),
                "INT8": dice_iou(ort_outputs(int8_model, tensors), truth),
                "mixed": dice_iou(ort_outputs(out, tensors), truth)}
    assert expected["INT8"][0] < 0.5 <= expected["mixed"][0]  # INT8 breaks it, the rollback mends it
    view = page.view
    assert [view.cell(view.table, r, "Model") for r in range(3)] == ["FP32", "INT8", "mixed"]
    for r, name in enumerate(("FP32", "INT8", "mixed")):
        assert view.cell(view.table, r, "Dice") == _percent(expected[name][0]), name
        assert view.cell(view.table, r, "IoU") == _percent(expected[name][1]), name
        assert view.cell(view.table, r, "Latency vs FP32") == "-"  # not timed, not guessed
    assert result.fallback == ["conv2"] and "Dice" in view.summary.text()

    # The Ascend files: written, run on the host, the .om, the deployable model and the report fetched.
    assert (folder / "seg_int8.om").read_bytes() == om.read_bytes()
    assert (folder / "amct_out" / "seg_deploy_model.onnx").read_bytes() == model.read_bytes()
    report = (folder / "quantize_ascend.log").read_text()
    assert re.findall(r"AMCT: skip layer (\S+) \(kept in float\)$", report, re.M) == result.fallback
    shown = view.ascend.toPlainText()
    assert view.tabs.isTabEnabled(3) and 'skip_layers: "conv2"' in shown
    assert "amct_onnx calibration --model=seg.onnx" in shown and "--soc_version=Ascend910B1" in shown
    assert f"# ran on {entry.name}" in shown and str(folder / "seg_int8.om") in shown
