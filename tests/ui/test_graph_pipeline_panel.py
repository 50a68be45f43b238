"""A MindX SDK pipeline in the graph panel: roles, dashed references, findings, edit and save."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtWidgets import QTreeWidgetItem

from studio.core.formats import detect
from studio.tools.graph.categories import CATEGORY_COLOURS
from studio.ui.panels.graph import GraphPanel
from studio.ui.panels.graph.pipeline_edit import PropertyDialog

OCR = "real/mindx_pipeline/mindxsdk-referenceapps/mxVision/GeneralTextRecognition/data/OCR.pipeline"


@pytest.fixture
def panel(make_panel):
    return make_panel(GraphPanel)


def _rows(tree) -> list[QTreeWidgetItem]:
    out = []
    for i in range(tree.topLevelItemCount()):
        top = tree.topLevelItem(i)
        out += [top] + [top.child(j) for j in range(top.childCount())]
    return out


def _open(qtbot, panel, path: Path) -> None:
    panel.open_file(detect(path))
    qtbot.waitUntil(lambda: panel.left.view is not None and panel.left.model.path == path, timeout=10000)


def test_pipeline_shows_roles_references_and_findings(qtbot, panel, ascend_fixtures, tmp_path):
    path = tmp_path / "OCR.pipeline"
    path.write_bytes((ascend_fixtures / OCR).read_bytes())
    _open(qtbot, panel, path)
    view = panel.left.view
    categories = {it.name: it.category for it in view.items if it.kind == "node"}
    assert categories["dbdetection/mxpi_tensorinfer0"] == "infer"
    assert categories["dbdetection/appsrc0"] == "source" and categories["dbdetection/queue0"] == "flow"
    # 9 references (dataSource, parentName, outputDataKeys ...), drawn dashed; the one from mxpi_rotation1
    # to mxpi_classpostprocessor0 runs beside a link of the same pair, which is drawn instead
    assert len(view.references) == 8
    assert all(view.edge_values[k] == "" for k in view.references)
    assert "Model inference" in panel.legend_label.text() and "Conv / MatMul" not in panel.legend_label.text()
    rows = _rows(panel.details)
    check = next(r for r in rows if r.text(0).startswith("Check:"))
    assert check.text(0).startswith("Check: 9 error(s)")
    # double-clicking a finding selects its element
    finding = check.child(0)
    wanted = finding.data(0, 0x0100)[1]
    panel.details.itemDoubleClicked.emit(finding, 0)  # the details then show the element (the row is gone)
    assert panel.left.graph.nodes[panel.left.selected_node].name == wanted
    assert CATEGORY_COLOURS["infer"] != CATEGORY_COLOURS["postprocess"]


def test_edit_a_property_saves_it_in_place_and_reopens(qtbot, panel, ascend_fixtures, tmp_path):
    path = tmp_path / "OCR.pipeline"
    original = (ascend_fixtures / OCR).read_bytes()
    path.write_bytes(original)
    _open(qtbot, panel, path)
    node = "dbdetection/mxpi_tensorinfer0"
    panel.select_node(node)
    rows = _rows(panel.details)
    model_row = next(r for r in rows if r.text(0) == "modelPath")
    assert model_row.data(0, 0x0100)[:3] == ("prop", node, "modelPath")
    handle = panel.set_pipeline_prop(node, "modelPath", "./model/unet.om")
    qtbot.waitUntil(lambda: not handle.active, timeout=10000)
    qtbot.waitUntil(lambda: panel.left.model is not None and panel.left.selected_node >= 0
                    and panel.left.graph.nodes[panel.left.selected_node].attributes.get("modelPath")
                    == "./model/unet.om", timeout=10000)  # read again, and the element selected again
    saved = path.read_bytes()
    assert saved == original.replace(b"./data/model/Dynamic24_ch_ppocr_server_v2.0_det_infer.om",
                                     b"./model/unet.om")
    assert json.loads(saved)["dbdetection"]["mxpi_tensorinfer0"]["props"]["modelPath"] == "./model/unet.om"
    assert panel.left.graph.nodes[panel.left.selected_node].name == node


def test_the_property_dialog_offers_the_last_conversion(qtbot, tmp_path):
    converted = tmp_path / "model" / "unet.om"
    dialog = PropertyDialog("mxpi_tensorinfer0", "modelPath", "old.om", tmp_path, converted)
    qtbot.addWidget(dialog)
    assert dialog.use_last.isVisibleTo(dialog) and dialog.browse.isVisibleTo(dialog)
    dialog.use_last.click()
    assert dialog.value == "./model/unet.om"
    plain = PropertyDialog("queue0", "max-size-buffers", "100", tmp_path, None)
    qtbot.addWidget(plain)
    assert not plain.browse.isVisibleTo(plain) and not plain.use_last.isVisibleTo(plain)
    adding = PropertyDialog("queue0", "", "", tmp_path, None)
    qtbot.addWidget(adding)
    assert not adding.buttons.buttons()[0].isEnabled()
    adding.name_edit.setText("modelPath")
    assert adding.buttons.buttons()[0].isEnabled() and adding.browse.isVisibleTo(adding)


def test_fit_of_a_tall_graph_is_readable_from_its_top(qtbot, panel, ascend_fixtures):
    from studio.ui.panels.graph.canvas import READABLE_SCALE

    _open(qtbot, panel, ascend_fixtures / OCR)
    canvas = panel.left.canvas
    canvas.fit()
    bounds = canvas.painter_cache.bounds()
    assert bounds.height() > 2 * bounds.width()  # a tall chain: shrunk to fit it would be unreadable
    assert canvas.scale >= READABLE_SCALE
    assert abs(canvas.origin.y() - (bounds.top() - 30)) < 1  # from its first element
