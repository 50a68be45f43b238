"""The wizard's ATC mode with an SSH host picked: Convert runs on the test sshd (stand-in atc)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import onnx
import pytest

from studio.remote.hosts import HostStore
from studio.ui.panels.convert import ConvertPanel

from convert_helpers import conv_bn_model
from convert_remote_helpers import make_toolkit


@pytest.fixture
def panel(make_panel, sshd_host, tmp_path, ascend_fixtures):
    entry, known = sshd_host
    toolkit = make_toolkit(tmp_path / "cann", ascend_fixtures / "om" / "root_model.om")
    store = HostStore()
    store.put(replace(entry, name="npu-box", toolkit=str(toolkit), extra={"deploy_root": str(tmp_path / "deploy")}))
    store.save()
    widget = make_panel(ConvertPanel, size=(1000, 700))
    widget.host_context.known_hosts = known
    return widget


def _prepare(panel, qtbot, model: Path, output: Path) -> None:
    onnx.save(conv_bn_model(size=16), model)
    panel.model_page.set_model(model)
    qtbot.waitUntil(lambda: panel.model_page.inputs_table.rowCount() == 1, timeout=5000)
    panel.model_page.set_mode("atc")
    picker = panel.model_page.host_picker
    assert "npu-box" in [picker.combo.itemText(i) for i in range(picker.combo.count())]
    assert picker.select("npu-box")
    panel.model_page.output_edit.setText(str(output))


def test_remote_host_picker_runs_atc_and_opens_the_om(panel, qtbot, tmp_path, ascend_fixtures):
    out = tmp_path / "out" / "net.om"
    _prepare(panel, qtbot, tmp_path / "net.onnx", out)
    opened = []
    panel.request_load.connect(opened.append)  # loaded behind the log, the converter stays in front
    panel.finish()
    qtbot.waitUntil(lambda: bool(opened), timeout=15000)
    assert opened == [out] and panel.result_path == out and panel.open_button.isEnabled()
    assert out.read_bytes() == (ascend_fixtures / "om" / "root_model.om").read_bytes()
    log = panel.log.toPlainText()
    assert "ATC run success, welcome to the next use." in log  # streamed into the wizard's log
    assert "ATC finished on npu-box" in log
    qtbot.waitUntil(lambda: panel.finish_button.isEnabled(), timeout=5000)


def test_remote_failure_shows_the_code_in_the_log(panel, qtbot, tmp_path):
    _prepare(panel, qtbot, tmp_path / "net.onnx", tmp_path / "bad.om")
    panel.model_page.inputs_table.item(0, 1).setText("1,3,99999,16")
    panel.finish()
    qtbot.waitUntil(lambda: "error: ATC failed on npu-box" in panel.log.toPlainText(), timeout=15000)
    assert "E10001" in panel.log.toPlainText() and "atc.log" in panel.log.toPlainText()
    assert not (tmp_path / "bad.om").exists()


def test_this_computer_is_offered_when_atc_is_here(panel, qtbot, tmp_path, ascend_fixtures, monkeypatch):
    toolkit = make_toolkit(tmp_path / "local-cann", ascend_fixtures / "om" / "root_model.om")
    monkeypatch.setenv("PATH", f"{toolkit / 'bin'}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("STANDIN_TOOLKIT", str(toolkit))
    monkeypatch.setenv("STANDIN_OM", str(ascend_fixtures / "om" / "root_model.om"))
    out = tmp_path / "here.om"
    _prepare(panel, qtbot, tmp_path / "net.onnx", out)
    picker = panel.model_page.host_picker
    assert picker.combo.itemText(0) == "This computer" and picker.select("local")
    opened = []
    panel.request_load.connect(opened.append)  # loaded behind the log, the converter stays in front
    panel.finish()
    qtbot.waitUntil(lambda: bool(opened), timeout=15000)
    assert opened == [out] and out.read_bytes() == (ascend_fixtures / "om" / "root_model.om").read_bytes()
    assert "ATC run success, welcome to the next use." in panel.log.toPlainText()
