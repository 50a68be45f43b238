"""The Converter's Quantize page, driven as a user drives it, on a tiny model with one layer made
sensitive on purpose (an input channel scaled by 10,000: 8 bits round every other channel to 0).

What it shows is checked against the engine's own result and against plain ONNX Runtime runs of
the models it wrote, with the cosine taken in numpy."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from studio.tools.graph import overlay as colours
from studio.ui.panels.convert import ConvertPanel
from studio.ui.panels.graph import GraphPanel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from quantize_helpers import chain_model, samples  # noqa: E402


@pytest.fixture
def tiny(tmp_path):
    """(model, calibration .npz, layer names, the samples) with ``mm1`` the sensitive layer."""
    model = tmp_path / "chain.onnx"
    names = chain_model(model, outlier_at=1)
    feeds = samples(16)
    npz = tmp_path / "calib.npz"
    np.savez(npz, x=np.concatenate([f["x"] for f in feeds]))
    return model, npz, names, feeds


def _fill(panel, model, npz, out, budget=0.3):
    panel.model_page.set_model(model)
    panel.go_to(3)
    page = panel.quantize_page
    page.calib_edit.setText(str(npz))
    page.output_edit.setText(str(out))
    page.budget_spin.setValue(budget)
    return page


def _min_cosine_numpy(model: Path, reference: Path, feeds) -> float:
    """The lowest cosine of ``model``'s output against ``reference``'s over the samples (ORT + numpy)."""
    import onnxruntime as ort

    a = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(reference), providers=["CPUExecutionProvider"])
    values = []
    for f in feeds:
        x = a.run(None, f)[0].astype(np.float64).ravel()
        y = b.run(None, f)[0].astype(np.float64).ravel()
        values.append(min(1.0, x @ y / (np.linalg.norm(x) * np.linalg.norm(y))))
    return min(values)


def test_quantize_page_runs_to_the_end(make_panels, qtbot, tmp_path, tiny):
    model, npz, names, feeds = tiny
    panel, graph, links = make_panels(ConvertPanel, GraphPanel, size=(1280, 720))
    overlays = []
    links.overlay.connect(overlays.append)
    out = tmp_path / "chain_int8.onnx"
    page = _fill(panel, model, npz, out)
    assert not panel.finish_button.isVisible()  # page 4 runs by its own button, not Convert
    page.run_button.click()
    assert page.cancel_button.isVisible() and not page.run_button.isEnabled()  # running, the GUI thread free
    qtbot.waitUntil(lambda: panel.quantize.result is not None, timeout=20000)
    result = panel.quantize.result
    assert out.is_file() and page.run_button.isEnabled()
    assert "$ studio quantize " + str(model) in panel.log.toPlainText()

    # the planted layer ranks first and is the only one rolled back
    assert [s.name for s in result.sensitivity][0] == "mm1" and result.fallback == ["mm1"]

    # the measured table shows the engine's numbers ...
    view = page.view
    assert [view.cell(view.table, r, "Model") for r in range(3)] == ["FP32", "INT8", "mixed"]
    for r, row in enumerate(result.table):
        assert int(view.cell(view.table, r, "In float")) == row.rolled_back
        assert float(view.cell(view.table, r, "Min cosine")) == pytest.approx(row.accuracy.min_cosine, abs=5e-7)
        latency = view.cell(view.table, r, "Latency vs FP32")
        if row.latency is None:
            assert latency == "-"
        else:
            assert latency.startswith(row.latency.verdict)  # "no significant change" where that is the truth
    # ... which are the written models' own: ORT runs of the mixed model against FP32, cosine in numpy
    assert float(view.cell(view.table, 2, "Min cosine")) == pytest.approx(_min_cosine_numpy(out, model, feeds),
                                                                          abs=1e-6)
    assert float(view.cell(view.table, 2, "Min cosine")) >= 0.99 > float(view.cell(view.table, 1, "Min cosine"))
    # both searches: set sizes and run counts
    for r, found in enumerate(result.searches):
        assert view.cell(view.searches, r, "Search").startswith(found.method)
        assert int(view.cell(view.searches, r, "Layers in float")) == found.size
        assert int(view.cell(view.searches, r, "Runs")) == found.runs
    assert view.cell(view.sensitivity, 0, "Layer") == "mm1" and view.cell(view.sensitivity, 0, "Rolled back") == "yes"

    # the graph panel opened the FP32 model and coloured mm1 worst, the others not
    assert overlays and overlays[-1].model == model
    qtbot.waitUntil(lambda: graph.left.view is not None and bool(graph.left.canvas.state.overlay_text), timeout=10000)
    side = graph.left
    index = side.view.graph.node_index()
    colour = {n: side.canvas.state.overlay[int(side.view.item_of_node[index[n]])].name() for n in names}
    assert colour["mm1"] == colours.BAD
    assert all(colour[n] not in (colours.BAD, colours.NO_DATA) for n in names if n != "mm1")
    assert "in float" in side.canvas.state.overlay_text[int(side.view.item_of_node[index["mm1"]])]

    # a layer clicked in the sensitivity table is selected in the graph
    with qtbot.waitSignal(links.show_node, timeout=2000) as shown:
        view.sensitivity.cellClicked.emit(0, 0)
    assert shown.args == [model, "mm1"]

    # "Open mixed model in graph": the mixed model, its layers coloured the same way
    with qtbot.waitSignal(links.overlay, timeout=2000) as sent:
        view.mixed_button.click()
    assert sent.args[0].model == out and set(sent.args[0].values) == set(names)
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.left.model.path.resolve() == out.resolve(),
                    timeout=10000)


def test_cancel_leaves_no_output(make_panels, qtbot, tmp_path, tiny):
    model, npz, _names, _feeds = tiny
    panel, _links = make_panels(ConvertPanel, size=(1280, 720))
    out = tmp_path / "out" / "chain_int8.onnx"
    page = _fill(panel, model, npz, out, budget=10.0)
    page.run_button.click()
    handle = panel.quantize.handle
    # cancel while the models are being timed: the mixed model is built, not yet written
    handle.progress.connect(lambda step: step.message.startswith("round") and panel.quantize.cancel())
    with qtbot.waitSignal(handle.ended, timeout=20000):
        pass
    assert handle.state.value == "cancelled"
    assert not out.exists() and not out.with_name("chain_int8.ranges.json").exists()
    assert not any(p.name.startswith(".") for p in tmp_path.rglob("*"))  # no temporary file left either
    assert panel.quantize.result is None and page.run_button.isEnabled() and not page.cancel_button.isVisible()
    assert "cancelled" in page.step_label.text() and "cancelled" in panel.log.toPlainText()


def test_form_errors_say_which_field(make_panel, qtbot, tmp_path, tiny):
    model, npz, _names, _feeds = tiny
    panel = make_panel(ConvertPanel)
    page = _fill(panel, model, npz, tmp_path / "o.onnx")
    page.calib_edit.clear()
    assert panel.quantize.start() is None
    assert "No calibration data" in panel.log.toPlainText() and "Calibration" in panel.log.toPlainText()
    page.calib_edit.setText(str(npz))
    page.target.set_kind("top1")  # a top-1 target without labels
    assert panel.quantize.start() is None
    assert "A max top-1 drop target needs ground truth" in panel.log.toPlainText()
    assert "Quantize page, Truth" in panel.log.toPlainText()
    page.target.truth_edit.setText(str(tmp_path / "truth.csv"))
    page.target.drop_spin.setValue(2.5)
    request = page.request(model)  # the top-1 target reaches the operation with its labels
    assert (request.max_top1_drop, request.min_cosine, request.truth) == (2.5, None, tmp_path / "truth.csv")
    assert request.task == "classify" and not page.task_combo.isEnabled()
    page.target.set_kind("map50")  # a detector's target: its thresholds and head go with it
    page.target.head_combo.setCurrentIndex(page.target.head_combo.findData("yolox"))
    page.target.conf_spin.setValue(0.4)
    request = page.request(model)
    assert (request.max_map_drop, request.max_top1_drop, request.task, request.head, request.conf, request.iou) == \
        (2.5, None, "detect", "yolox", 0.4, 0.45)
    page.ascend.box.setChecked(True)  # the Ascend folder is offered beside the output, and shown
    assert page.ascend.folder_edit.text() == str(tmp_path / "o_ascend")
    page.ascend.folder_edit.clear()
    assert panel.quantize.start() is None and "No folder for the Ascend files" in panel.log.toPlainText()
    assert not (tmp_path / "o.onnx").exists()


def test_qoperator_mixed_model_coloured_in_graph(make_panels, qtbot, tmp_path, tiny):
    """In the QOperator form ONNX Runtime renames the quantised layers; the overlay of the mixed
    model still colours every layer, as the written file names them."""
    import onnx

    model, npz, names, _feeds = tiny
    panel, graph, _links = make_panels(ConvertPanel, GraphPanel, size=(1280, 720))
    out = tmp_path / "chain_qop.onnx"
    page = _fill(panel, model, npz, out)
    page.format_combo.setCurrentText("qoperator")
    page.timing_box.setChecked(False)
    page.run_button.click()
    qtbot.waitUntil(lambda: panel.quantize.result is not None, timeout=20000)
    assert page.view.cell(page.view.table, 1, "Latency vs FP32") == "-"  # not timed, not guessed
    page.view.mixed_button.click()
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.left.model.path.resolve() == out.resolve()
                    and bool(graph.left.canvas.state.overlay_text), timeout=10000)
    written = {n.name: n.op_type for n in onnx.load(str(out)).graph.node}
    side = graph.left
    index = side.view.graph.node_index()
    layers = [n for n, op in written.items() if op in ("MatMul", "QLinearMatMul")]
    assert len(layers) == len(names) and written["mm1"] == "MatMul"  # mm1 stayed float, the others quantised
    for name in layers:
        item = int(side.view.item_of_node[index[name]])
        assert side.canvas.state.overlay[item].name() != colours.NO_DATA, name
    assert side.canvas.state.overlay[int(side.view.item_of_node[index["mm1"]])].name() == colours.BAD
    assert "in float" in side.canvas.state.overlay_text[int(side.view.item_of_node[index["mm1"]])]
