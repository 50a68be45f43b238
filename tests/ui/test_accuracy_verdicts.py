"""What the accuracy panel says about a failing op, and how the graph shows it.

The target is the model with its biases stored in FP16 (as an FP16 conversion stores them). Its
``shift`` output crosses zero: where the golden value is ~1e-5, the bias's rounding (~1e-4) is a
relative error of ~10, so the mean relative error fails while the cosine is 0.9999999. The
target model also holds an op the golden run has no tensor for (``extra``): nothing measured there.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from studio.core.jobs import run_job
from studio.tools.accuracy.compare import compare_dumps
from studio.tools.accuracy.local_dump import dump_model
from studio.tools.graph.categories import CATEGORY_COLOURS
from studio.ui.panels.accuracy import AccuracyPanel
from studio.ui.panels.graph import GraphPanel


N = 256


def _model(path, bias, extra: bool):
    w = np.random.default_rng(1).uniform(0.5, 2.0, (1, N)).astype(np.float32)
    nodes = [helper.make_node("Mul", ["x", "w"], ["scaled"], name="scale"),
             helper.make_node("Add", ["scaled", "b"], ["shifted"], name="shift"),
             helper.make_node("Relu", ["shifted"], ["act_out"], name="act")]
    last = "act_out"
    if extra:  # an op the converter added: the golden run has no tensor for it
        nodes.append(helper.make_node("Identity", ["act_out"], ["extra_out"], name="extra"))
        last = "extra_out"
    nodes.append(helper.make_node("Softmax", [last], ["prob"], name="head", axis=1))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, N])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, N])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path, w


@pytest.fixture
def comparison(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, N)).astype(np.float32)
    _, w = _model(tmp_path / "probe.onnx", np.zeros((1, N), np.float32), False)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    near = rng.random(N) < 0.3  # 30 % of the outputs cross zero: golden ~1e-5 there
    bias[0, near] = -(x[0, near] * w[0, near]) + 1e-5
    golden_model, _ = _model(tmp_path / "g.onnx", bias, False)
    target_model, _ = _model(tmp_path / "t.onnx", bias.astype(np.float16).astype(np.float32), True)
    golden = run_job(dump_model(golden_model, tmp_path / "golden", inputs={"x": x}))
    target = run_job(dump_model(target_model, tmp_path / "target", inputs={"x": x}))
    return run_job(compare_dumps(golden, target)), target_model


@pytest.fixture
def panels(make_panels):
    accuracy, graph, _links = make_panels(AccuracyPanel, GraphPanel, size=(1100, 700))
    return accuracy, graph


def _row(result, name):
    return next(r for r in result.rows if r.name == name)


def test_a_mean_relative_error_failure_says_which_metric_and_why_and_the_scatter_shows_it(qtbot, panels, comparison):
    accuracy, _ = panels
    result, _ = comparison
    shift = _row(result, "shift")
    assert shift.violations == ["mean_rel_err"] and shift.metrics.cosine > 0.99999
    accuracy.set_result(result)
    # The finding and the table name the metric, its value and limit, and the near-zero golden values.
    assert "mean_rel_err" in accuracy.findings.text() and "near zero" in accuracy.findings.text()
    source = accuracy.model.rows.index(shift)
    status = accuracy.model.index(source, 3).data()
    assert status.startswith("fail: MRE") and ">= 1" in status and "(near-zero golden)" in status, status
    tooltip = accuracy.model.index(source, 3).data(0x03)  # ToolTipRole
    assert "near zero" in tooltip and "limit 1" in tooltip
    # No cosine fails: the scatter opens on the metric that does.
    qtbot.waitUntil(lambda: accuracy.scatter.point_of(shift.index) is not None, timeout=5000)
    assert accuracy.scatter.metric == "mean_rel_err"
    # Shown on cosine, selecting the failing row brings its metric back.
    accuracy.scatter.show_metric("cosine")
    accuracy.select_row(_row(result, "scale").index)
    accuracy.select_row(shift.index)
    assert accuracy.scatter.metric == "mean_rel_err"
    assert accuracy.scatter.point_of(shift.index)[1] == pytest.approx(shift.metrics.mean_rel_err)


def _delta_e(a: str, b: str) -> float:
    """CIE76 colour distance."""
    def lab(colour):
        r, g, b = (int(colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4))
        lin = [((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92 for c in (r, g, b)]
        x = (lin[0] * 0.4124 + lin[1] * 0.3576 + lin[2] * 0.1805) / 0.95047
        y = lin[0] * 0.2126 + lin[1] * 0.7152 + lin[2] * 0.0722
        z = (lin[0] * 0.0193 + lin[1] * 0.1192 + lin[2] * 0.9505) / 1.08883
        f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
        return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])
    return sum((p - q) ** 2 for p, q in zip(lab(a), lab(b))) ** 0.5


def test_show_in_graph_colours_by_verdict_in_its_own_palette_and_greys_out_what_was_not_measured(qtbot, panels,
                                                                                                  comparison):
    accuracy, graph = panels
    result, target_model = comparison
    accuracy.set_result(result)
    overlays = []
    accuracy.links.overlay.connect(overlays.append)
    accuracy.select_row(_row(result, "shift").index)
    accuracy.show_in_graph()
    assert overlays[0].verdicts["shift"] == "fail" and overlays[0].values["shift"] > 0.99999
    qtbot.waitUntil(lambda: graph.left.view is not None and graph.left.model.path == target_model, timeout=10000)
    qtbot.waitUntil(lambda: bool(graph.left.canvas.state.overlay_text), timeout=10000)
    view, state = graph.left.view, graph.left.canvas.state
    colour = {view.items[i].name: state.overlay[i].name() for i in range(len(view.items))
              if view.items[i].kind == "node"}
    # Failing although its cosine is above 0.99999: the fail colour, not the pass one.
    from studio.tools.graph.overlay import BAD, GOOD, NO_DATA

    assert colour["shift"] == BAD and colour["act"] == BAD and colour["scale"] == GOOD
    assert colour["extra"] == NO_DATA  # no golden tensor: greyed out, not coloured by its category
    assert "fail: MRE" in state.overlay_text[int(view.item_of_node[graph.left.graph.node_index()["shift"]])]
    legend = dict((text, c) for c, text in graph.left.canvas.legend)
    assert legend == {"fail": BAD, "pass": GOOD, "no data": NO_DATA}
    # The palette shares no colour with the op categories (the old green and red were 14 apart).
    for overlay_colour in (BAD, GOOD):
        assert min(_delta_e(overlay_colour, c) for c in CATEGORY_COLOURS.values()) > 30
