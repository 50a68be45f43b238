"""Journey 1's hand-overs: the graph panel's "Profile" and "FP16 check" each take one click.

The buttons emit ``links.profile_model`` / ``links.check_fp16``; the profiler runs a local profile
and shows it, the accuracy panel dumps FP32 and FP16 simulation and compares; both send their
overlay back to the graph. Outputs go to the workspace when one is open, else the user cache.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtWidgets import QToolButton

from studio.core.formats import detect
from studio.core.paths import cache_dir
from studio.ui.panels.accuracy import AccuracyPanel
from studio.ui.panels.graph import GraphPanel
from studio.ui.panels.profiler import ProfilerPanel


def tiny_model(path: Path) -> Path:
    """Conv → Relu → Sigmoid on an 8×8 image: small, but the FP16 simulation changes its numbers."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w")
    bias = numpy_helper.from_array(np.full(4, 1e-4, np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu0"),
             helper.make_node("Sigmoid", ["r"], ["y"], name="sig0")]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [weight, bias])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path


def _button(graph: GraphPanel, text: str) -> QToolButton:
    return next(b for b in graph.findChildren(QToolButton) if b.text() == text)


def _show_model(qtbot, graph: GraphPanel, model: Path) -> None:
    graph.open_file(detect(model))
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.left.model.path == model, timeout=10000)


@pytest.fixture
def panels(make_panels):
    graph, profiler, accuracy, links = make_panels(GraphPanel, ProfilerPanel, AccuracyPanel)
    profiler.iterations, profiler.warmup = 3, 1  # fast; the defaults are the CLI's (20 after 3)
    return graph, profiler, accuracy, links


def test_buttons_are_enabled_for_onnx_models_only(qtbot, panels, tmp_path, ascend_fixtures):
    graph, _profiler, _accuracy, links = panels
    requests = []
    links.profile_model.connect(requests.append)
    links.check_fp16.connect(requests.append)
    assert not _button(graph, "Profile").isEnabled() and not _button(graph, "FP16 check").isEnabled()
    assert "ONNX Runtime" in _button(graph, "Profile").toolTip()
    assert "FP16 simulation" in _button(graph, "FP16 check").toolTip()
    om = ascend_fixtures / "om" / "root_model.om"
    _show_model(qtbot, graph, om)
    assert not _button(graph, "Profile").isEnabled()  # an OM model runs on the NPU only
    _button(graph, "Profile").click()
    assert requests == []


def test_profile_button_runs_a_local_profile_into_the_cache(qtbot, panels, tmp_path):
    graph, profiler, _accuracy, links = panels
    model = tiny_model(tmp_path / "tiny.onnx")
    overlays, focused, statuses = [], [], []
    links.overlay.connect(overlays.append)
    links.focus.connect(focused.append)
    profiler.status.connect(statuses.append)
    _show_model(qtbot, graph, model)
    _button(graph, "Profile").click()
    qtbot.waitUntil(lambda: bool(profiler.profiles), timeout=20000)
    loaded = profiler.profiles[0]
    assert loaded.trace.size > 0 and profiler.timeline.trace is loaded.trace
    assert loaded.path.parent == cache_dir() / "profiles" and loaded.path.name.startswith("tiny_")
    assert (loaded.path / "studio_profile.json").is_file() and profiler.opened_paths == [loaded.path]
    run = profiler.last_run
    assert run.iterations == 3 and run.warmup == 1 and len(run.latencies_ms) == 3
    assert overlays and overlays[-1].model == model.resolve() and overlays[-1].unit == "%"
    assert {"conv0", "relu0", "sig0"} & set(overlays[-1].values)
    assert focused[-1] == "profiler"
    assert "p99" in statuses[-1] and "inferences/s" in statuses[-1] and "p99" in profiler.info.text()
    assert "p90" in profiler.info.toolTip() and "inferences/s" in profiler.info.toolTip() and str(loaded.path) in profiler.info.toolTip()


def test_fp16_button_compares_fp32_with_fp16_simulation_in_the_cache(qtbot, panels, tmp_path):
    graph, _profiler, accuracy, links = panels
    model = tiny_model(tmp_path / "tiny.onnx")
    overlays, focused = [], []
    links.overlay.connect(overlays.append)
    links.focus.connect(focused.append)
    _show_model(qtbot, graph, model)
    _button(graph, "FP16 check").click()
    qtbot.waitUntil(lambda: accuracy.result is not None, timeout=20000)
    result = accuracy.result
    assert result.golden_mode != result.target_mode  # FP32 against FP16 simulation
    assert accuracy.last_pair == (cache_dir() / "accuracy" / "tiny_fp32", cache_dir() / "accuracy" / "tiny_fp16sim")
    assert (cache_dir() / "accuracy" / "tiny_fp32_vs_fp16sim.csv").is_file()
    cosines = [row.metrics.cosine for row in result.compared]
    assert cosines and all(0.9 < c <= 1.0 + 1e-6 for c in cosines)
    assert accuracy.model.rowCount() == len(result.rows) and not accuracy.empty.isVisible()
    overlay = overlays[-1]
    assert overlay.title == "Accuracy verdict" and overlay.higher_is_better  # coloured by pass / fail
    assert {"conv0", "relu0", "sig0"} <= set(overlay.values)
    assert focused[-1] == "accuracy"
    qtbot.waitUntil(lambda: graph.overlay is not None, timeout=5000)  # the graph colours the model by it
    files = sorted(p.name for p in accuracy.last_pair[1].iterdir())
    accuracy.result = None
    _button(graph, "FP16 check").click()  # again: the earlier dump's files are replaced, not piled up
    qtbot.waitUntil(lambda: accuracy.result is not None, timeout=20000)
    again = sorted(p.name for p in accuracy.last_pair[1].iterdir())
    assert len(again) == len(files) and again != files


def test_with_a_workspace_both_write_into_it(qtbot, make_window, tmp_path):
    window = make_window(show=False)
    workspace = window.open_workspace(tmp_path / "ws", create=True)
    assert workspace is not None
    model = tiny_model(tmp_path / "ws" / "tiny.onnx")
    profiler, accuracy = window.panels["profiler"], window.panels["accuracy"]
    profiler.iterations, profiler.warmup = 2, 0
    window.links.profile_model.emit(model)
    window.links.check_fp16.emit(model)
    qtbot.waitUntil(lambda: bool(profiler.profiles) and accuracy.result is not None, timeout=30000)
    assert profiler.profiles[0].path.parent == workspace.folder / "profiles"
    assert accuracy.last_pair == (workspace.folder / "accuracy" / "tiny_fp32",
                                  workspace.folder / "accuracy" / "tiny_fp16sim")
    assert not (cache_dir() / "profiles").exists() and not (cache_dir() / "accuracy").exists()
    assert window.notifier.history == []


def test_a_cancelled_profile_leaves_no_folder_and_a_bad_model_says_why(qtbot, panels, tmp_path):
    _graph, profiler, _accuracy, _links = panels
    model = tiny_model(tmp_path / "tiny.onnx")
    profiler.iterations = 100_000  # long enough to be cancelled while it runs
    profiler.profile_model(model)
    handle = next(h for h in profiler.runner.active_jobs if h.title.startswith("Profiling"))
    qtbot.waitUntil(lambda: (cache_dir() / "profiles").is_dir(), timeout=10000)
    handle.cancel()
    qtbot.waitUntil(lambda: "cancelled" in profiler.info.text(), timeout=10000)
    folder = cache_dir() / "profiles"  # a failed run removes every folder it created, this one included
    assert not profiler.profiles and (not folder.exists() or list(folder.iterdir()) == [])
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07garbage")
    profiler.iterations = 2
    profiler.profile_model(broken)
    qtbot.waitUntil(lambda: "Could not profile broken.onnx" in profiler.info.text(), timeout=10000)
    folder = cache_dir() / "profiles"  # a failed run removes every folder it created, this one included
    assert not profiler.profiles and (not folder.exists() or list(folder.iterdir()) == [])


def test_fp16_check_of_a_broken_model_says_so(qtbot, panels, tmp_path):
    _graph, _profiler, accuracy, links = panels
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07garbage")
    links.check_fp16.emit(broken)
    qtbot.waitUntil(lambda: "failed" in accuracy.sources.text(), timeout=10000)
    assert accuracy.result is None and "broken.onnx" in accuracy.sources.text()
