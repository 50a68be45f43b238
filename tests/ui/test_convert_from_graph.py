"""The graph panel's "Convert…" takes the model on screen to the Converter's first page."""

from __future__ import annotations

import onnx
import pytest
from PySide6.QtWidgets import QToolButton

from studio.core.formats import detect
from studio.ui.panels.convert import ConvertPanel
from studio.ui.panels.graph import GraphPanel

from convert_helpers import conv_bn_model


@pytest.fixture
def panels(make_panels):
    return make_panels(GraphPanel, ConvertPanel)


def _convert_button(graph: GraphPanel) -> QToolButton:
    return next(b for b in graph.findChildren(QToolButton) if b.text() == "Convert…")


def test_convert_from_graph_loads_the_model_on_page_1(panels, qtbot, tmp_path):
    graph, convert, links = panels
    focused, statuses = [], []
    links.focus.connect(focused.append)
    graph.status.connect(statuses.append)
    _convert_button(graph).click()  # nothing on screen yet: says what to do, asks nothing
    assert focused == [] and "open a model first" in statuses[-1]
    assert convert.model_page.model_path() is None

    model = tmp_path / "net.onnx"
    onnx.save(conv_bn_model(size=24), model)
    convert.go_to(2)
    graph.open_file(detect(model))
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.left.model.path == model, timeout=10000)
    _convert_button(graph).click()
    assert focused == ["convert"]
    assert convert.model_page.model_path() == model and convert.stack.currentIndex() == 0
    # The converter reads the model's inputs off the GUI thread, as when the model is picked by hand.
    qtbot.waitUntil(lambda: convert.model_page.inputs_table.rowCount() == 1, timeout=5000)
    assert convert.model_page.inputs_table.item(0, 0).text() == "image"
    assert convert.model_page.output_edit.text() == str(tmp_path / "net_converted.onnx")


def test_an_om_on_screen_is_not_converted_again(panels, qtbot, ascend_fixtures):
    graph, convert, links = panels
    focused = []
    links.focus.connect(focused.append)
    om = ascend_fixtures / "om" / "root_model.om"
    graph.open_file(detect(om))
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.left.model.path == om, timeout=10000)
    _convert_button(graph).click()
    assert focused == ["convert"] and convert.model_page.model_path() is None
    assert "already an offline model" in convert.log.toPlainText()
