"""The accuracy panel: findings, table, filter and sort, scatter click, drill-down, show in graph."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from accuracy_helpers import chain_model

from studio.core import formats
from studio.core.jobs import run_job
from studio.tools.accuracy.compare import compare_dumps
from studio.tools.accuracy.local_dump import dump_model
from studio.ui.panels.accuracy import AccuracyPanel


@pytest.fixture
def dumps(tmp_path):
    golden = run_job(dump_model(chain_model(tmp_path / "g.onnx"), tmp_path / "golden"))
    target = run_job(dump_model(chain_model(tmp_path / "t.onnx", bias_error=(1, 3.0)), tmp_path / "target"))
    return golden, target


@pytest.fixture
def panel(make_panel):
    return make_panel(AccuracyPanel, size=(1100, 800))


def test_empty_state_says_what_to_do(panel):
    assert panel.empty.isVisible() and "Open a comparison CSV" in panel.empty.text()
    assert not panel.export_button.isEnabled()


def test_two_dump_folders_make_a_comparison_with_table_scatter_and_drilldown(qtbot, panel, dumps):
    golden, target = dumps
    panel.open_file(formats.detect(golden))
    assert "open a second dump" in panel.sources.text()
    qtbot.waitUntil(lambda: "ONNX Runtime FP32 run" in panel.sources.text())
    panel.open_file(formats.detect(target))
    qtbot.waitUntil(lambda: panel.result is not None, timeout=10000)
    assert panel.splitter.isVisible() and not panel.empty.isVisible()
    assert "Problem node" in panel.findings.text() and "block1/add" in panel.findings.text()
    assert panel.model.rowCount() == len(panel.result.rows) == panel.proxy.rowCount()
    # The advisor's op is selected first.
    qtbot.waitUntil(lambda: panel.selected_row is not None and panel.selected_row.name == "block1/add")

    # Filter: failing rows only, then by name.
    panel.status_filter.setCurrentText("fail")
    failing = [r for r in panel.result.rows if r.passed is False]
    assert panel.proxy.rowCount() == len(failing) > 0
    panel.filter_edit.setText("relu")
    assert all("relu" in panel.proxy.index(i, 1).data() for i in range(panel.proxy.rowCount()))
    panel.filter_edit.clear()
    panel.status_filter.setCurrentText("all")
    # Sort by cosine ascending: the worst row first.
    panel.table.sortByColumn(4, Qt.SortOrder.AscendingOrder)
    worst = min(panel.result.compared, key=lambda r: r.metrics.cosine)
    assert panel.proxy.index(0, 1).data() == worst.name
    panel.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)

    # Click a point in the scatter: its row gets selected.
    panel.tabs.setCurrentWidget(panel.scatter)
    qtbot.wait(50)
    target_row = next(r for r in panel.result.compared if r.name == "block0/relu")
    x, y = panel.scatter.point_of(target_row.index)
    view = panel.scatter.plot
    scene_pos = view.plotItem.vb.mapViewToScene(QPointF(x, y))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(scene_pos))
    qtbot.waitUntil(lambda: panel.selected_row is not None and panel.selected_row.name == "block0/relu")

    # The drill-down of the selected row: histograms, worst elements, heat map.
    qtbot.waitUntil(lambda: panel.drilldown.current is not None and panel.drilldown.current.name == "block0/relu",
                    timeout=10000)
    data = panel.drilldown.current
    assert data.golden_hist.sum() == data.target_hist.sum() == 4 * 8 * 8
    assert panel.drilldown.worst.rowCount() == 20
    assert data.heat is not None and data.heat.shape == (8, 8)
    worst_abs = float(panel.drilldown.worst.item(0, 3).text())
    assert worst_abs == pytest.approx(target_row.metrics.max_abs_err, rel=1e-5)


def _show_in_graph(panel, row_name: str) -> tuple[list, list]:
    """Select ``row_name`` and press "Show in graph": the (model, node) pairs and overlays sent."""
    nodes, overlays = [], []
    panel.links.show_node.connect(lambda model, name: nodes.append((model, name)))
    panel.links.overlay.connect(overlays.append)
    panel.select_row(next(r.index for r in panel.result.rows if r.name == row_name))
    panel.show_in_graph()
    return nodes, overlays


def test_show_in_graph_emits_node_and_cosine_overlay(qtbot, panel, dumps, tmp_path):
    result = run_job(compare_dumps(*dumps))
    csv_path = result.write_csv(tmp_path / "r.csv")
    panel.open_file(formats.detect(csv_path))
    qtbot.waitUntil(lambda: panel.result is not None, timeout=10000)
    nodes, overlays = _show_in_graph(panel, "block1/add")
    assert nodes == [(tmp_path / "t.onnx", "block1/add")]
    overlay = overlays[0]
    assert overlay.higher_is_better and overlay.thresholds == [0.99]
    assert overlay.values["block1/add"] < 0.99 and overlay.values["block0/relu"] > 0.99

    out = tmp_path / "export" / "again.csv"
    panel.export_csv(out)
    qtbot.waitUntil(out.is_file, timeout=5000)
    assert out.read_text().splitlines()[0].startswith("Index,OpType,NPUDump")


def test_compare_models_link_dumps_both_and_compares(qtbot, panel, tmp_path):
    golden = chain_model(tmp_path / "orig.onnx")
    converted = chain_model(tmp_path / "conv.onnx", bias_error=(2, 3.0))
    panel.links.compare_models.emit(golden, converted)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=15000)
    assert panel.result.findings[0].name == "block2/add"
    assert np.isfinite(panel.result.rows[1].metrics.cosine)


def test_panel_import_leaves_numpy_and_pyqtgraph_for_later():
    import subprocess

    code = ("import sys; import studio.ui.panels.accuracy; "
            "print(sorted(m for m in ('numpy', 'pyqtgraph', 'onnx', 'onnxruntime') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_mapping_recompares_the_shown_dumps(qtbot, panel, tmp_path):
    import json

    from accuracy_helpers import write_npy_dump

    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(32).astype(np.float32) for _ in range(2))
    golden = write_npy_dump(tmp_path / "g", [("conv", a), ("bn", b)])
    target = write_npy_dump(tmp_path / "t", [("conv_bn", b)])
    panel.compare(golden, target)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=10000)
    assert {r.status for r in panel.result.rows} == {"golden only", "target only"}
    assert panel.mapping_button.isEnabled()
    mapping = tmp_path / "conv.onnx.report.json"
    mapping.write_text(json.dumps({"node_mapping": {"conv_bn": ["conv", "bn"]}}))
    first = panel.result
    panel.compare_with_mapping(mapping)
    qtbot.waitUntil(lambda: panel.result is not first, timeout=10000)
    assert [r.status for r in panel.result.rows] == ["fused", "pass"]


def test_show_in_graph_uses_golden_names_when_only_the_golden_model_is_known(qtbot, panel, tmp_path):
    from accuracy_helpers import write_npy_dump

    golden = run_job(dump_model(chain_model(tmp_path / "g.onnx"), tmp_path / "golden"))
    from studio.tools.accuracy.dumpset import load_dump

    dump = load_dump(golden)
    target = write_npy_dump(tmp_path / "npy", [(e.op_name.replace("/", "_"), dump.load(e) * 1.5)
                                               for e in dump.entries])
    panel.compare(golden, target)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=10000)
    nodes, overlays = _show_in_graph(panel, "block0_add")
    assert nodes == [(tmp_path / "g.onnx", "block0/add")]
    assert overlays[0].model == tmp_path / "g.onnx" and "block2/relu" in overlays[0].values


def test_fp16_check_of_a_dynamic_model_asks_for_the_input_size(qtbot, panel, tmp_path):
    import onnx
    from trust_models import paddle_style_model

    model = tmp_path / "paddle.onnx"
    onnx.save(paddle_style_model(), model)
    panel.workspace_folder = tmp_path / "ws"
    panel.check_fp16(model)
    qtbot.waitUntil(lambda: panel.input_dialog is not None and panel.input_dialog.isVisible(), timeout=10000)
    dialog = panel.input_dialog
    assert list(dialog.shape_edits) == ["x"]
    assert dialog.shape_edits["x"].text() == ",3,16,16"  # fixed dims filled in, the dynamic one left to the user
    assert "x: give 4 positive sizes" in dialog.problem_text()
    dialog.set_shape("x", "2,4,16,16")
    assert "fixed at 3" in dialog.problem_text()
    dialog.set_shape("x", "2,3,16,16")
    assert dialog.problem_text() == ""
    dialog.accept()
    qtbot.waitUntil(lambda: panel.result is not None, timeout=20000)
    golden = panel.last_pair[0]
    manifest = __import__("json").loads((golden / "manifest.json").read_text())
    assert manifest["inputs"]["x"]["shape"] == [2, 3, 16, 16]
    assert "tensors compared" in panel.sources.text()


def test_compare_with_original_takes_sizes_from_the_converted_model(qtbot, panel, tmp_path):
    import onnx
    from trust_models import paddle_style_model

    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions

    original = tmp_path / "paddle.onnx"
    onnx.save(paddle_style_model(), original)
    converted = tmp_path / "paddle_1.onnx"
    run_job(convert_model(ConvertOptions(model=original, output=converted, input_shape="x:1,3,16,16")))
    panel.links.compare_models.emit(original, converted)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=20000)
    assert panel.input_dialog is None  # nothing to ask: the converted model's sizes were used
    manifest = __import__("json").loads((panel.last_pair[0] / "manifest.json").read_text())
    assert manifest["inputs"]["x"]["shape"] == [1, 3, 16, 16]
    target = __import__("json").loads((panel.last_pair[1] / "manifest.json").read_text())
    assert target["inputs"]["x"]["source"] == "given"  # the very array the original got
    assert panel.result.compared and all(r.passed for r in panel.result.compared)


def test_integer_and_boolean_inputs_are_asked_for_and_take_a_number(qtbot, panel, tmp_path):
    import json

    import onnx
    from trust_models import value_if_model

    model = tmp_path / "flag.onnx"
    onnx.save(value_if_model(), model)
    panel.check_fp16(model)
    qtbot.waitUntil(lambda: panel.input_dialog is not None and panel.input_dialog.isVisible(), timeout=10000)
    dialog = panel.input_dialog
    assert list(dialog.shape_edits) == ["x", "flag"] and dialog.shape_edits["flag"].isReadOnly()
    dialog.set_shape("x", "2,4")
    dialog.set_data("flag", "0")  # the else branch: split the batch of 2 in halves
    assert dialog.problem_text() == ""
    dialog.accept()
    qtbot.waitUntil(lambda: panel.result is not None, timeout=20000)
    manifest = json.loads((panel.last_pair[0] / "manifest.json").read_text())
    assert manifest["inputs"]["flag"]["source"] == "given" and manifest["inputs"]["x"]["shape"] == [2, 4]
    flag = np.load(panel.last_pair[0] / manifest["inputs"]["flag"]["file"])
    assert flag.dtype == np.bool_ and flag.shape == () and not flag


def test_the_verdict_leads_and_thresholds_judge_the_rows_again(qtbot, panel, dumps, monkeypatch):
    from PySide6.QtWidgets import QDialog

    from studio.ui.panels.accuracy import thresholds_dialog

    golden, target = dumps
    panel.set_result(run_job(compare_dumps(golden, target)), (golden, target))
    text = panel.findings.text()
    assert text.index("Verdict on the outputs: FAIL") < text.index("Problem node")
    assert "cosine &gt; 0.99" in text  # the limits are printed beside the verdict
    failing = sum(1 for r in panel.result.rows if r.passed is False)
    # Loosen every limit in the dialog: the same tensors, judged again, all pass; no file is read.
    monkeypatch.setattr(thresholds_dialog.ThresholdsDialog, "exec", lambda self: QDialog.DialogCode.Accepted)
    monkeypatch.setattr(thresholds_dialog.ThresholdsDialog, "values",
                        lambda self: {"cosine": -1.0, "rel_euclidean": 1e9, "kl_div": 1e9, "rmse": 1e9,
                                      "mean_rel_err": 1e9})
    assert panel.thresholds_button.isEnabled() and failing > 0
    panel.thresholds_button.click()
    assert "Verdict on the outputs: PASS" in panel.findings.text()
    assert all(r.passed is not False for r in panel.result.rows)
    assert panel.result.thresholds.rel_euclidean == 1e9 and "rel_euclidean &lt; 1e+09" in panel.findings.text()
