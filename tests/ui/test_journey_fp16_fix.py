"""Journey 7 in the main window at 1,280 × 720: an FP16 drop -> reduce -> FP32 set -> apply ->
verified. Every step is a click in Studio's own window; the verdicts are checked against the
models' own ONNX Runtime runs.

Before, there was no Apply (the set ended as a command line to copy), the graph's *Convert…*
took the quietly loaded one-op repro, and comparing a correct keep-FP32 build with its original
named an op kept in FP32 as the first FP16 overflow.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton

SIZE = (1280, 720)


def _run(model: Path, feeds: dict) -> np.ndarray:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _click(qtbot, button) -> None:
    # a button a job's end puts on a tool row is laid out on the event loop's next turn
    qtbot.waitUntil(lambda: button.isVisible() and button.isEnabled(), timeout=5000)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def _wait_idle(qtbot, window, timeout=90000) -> None:
    qtbot.waitUntil(lambda: not window.runner.active_jobs, timeout=timeout)


def _graph_button(graph, text: str) -> QToolButton:
    return next(b for b in graph.findChildren(QToolButton) if b.text() == text)


@pytest.fixture
def window(qtbot, make_window, tmp_path):
    win = make_window(build_all=True)
    qtbot.waitExposed(win)
    win.resize(*SIZE)
    qtbot.waitUntil(lambda: (win.width(), win.height()) == SIZE)
    win.open_workspace(tmp_path / "ws", create=True)
    return win


def test_fp16_drop_to_an_applied_and_verified_fix(qtbot, window, tmp_path):
    from studio.tools.demo.journeys import build_fp16_frontend

    model = tmp_path / "ws" / "fp16_frontend.onnx"
    onnx.save(build_fp16_frontend(), model)
    graph, accuracy, convert = (window.panels[n] for n in ("graph", "accuracy", "convert"))

    # 1. the model in the graph; its FP16 check fails at the DFT's square (overflow)
    window.open_paths([model])
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.left.model.path == model, timeout=20000)
    _click(qtbot, _graph_button(graph, "FP16 check"))
    qtbot.waitUntil(lambda: accuracy.result is not None, timeout=60000)
    _wait_idle(qtbot, window)
    assert not accuracy.result.diagnosis and accuracy.result.diagnosis.op == "power/real_sq"
    assert window.is_in_front("accuracy")

    # 2. reduce: the repro opens in the graph behind the findings
    accuracy.reduce_action.trigger()
    _wait_idle(qtbot, window)
    repro = tmp_path / "ws" / "accuracy" / "fp16_frontend_repro" / "model.onnx"
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.left.model.path == repro, timeout=20000)

    # the graph's Convert… on the repro takes the original model, its output in the workspace
    window.show_panel("graph")
    _click(qtbot, _graph_button(graph, "Convert…"))
    qtbot.waitUntil(lambda: window.is_in_front("convert"))
    assert convert.model_page.model_path() == model
    assert Path(convert.model_page.output_edit.text()).parent == tmp_path / "ws" / "convert"

    # 3. find the FP32 set; 4. Apply converts the original with it and compares
    window.show_panel("accuracy")
    accuracy.precision_action.trigger()
    _wait_idle(qtbot, window)
    assert "Keep in FP32" in accuracy.findings.text()
    status = window.statusBar().currentMessage()
    assert status.startswith("Accuracy: Keep in FP32") and "<" not in status  # plain text, no raw tags
    keep = accuracy._found_set[1]
    assert "power/real_sq" in keep
    _click(qtbot, accuracy.apply_button)
    _wait_idle(qtbot, window)
    built = tmp_path / "ws" / "convert" / "fp16_frontend_fp16_keep.onnx"
    assert built.is_file()

    # 5. verified, and no op that was kept in FP32 is called an overflow
    text = accuracy.findings.text()
    assert "Applied" in text and "<b>verified</b>" in text
    assert "overflow" not in text.lower()
    assert accuracy.result.diagnosis and accuracy.result.diagnosis.cause == "none"
    # independently: the build on the check's own input, against the original, with ONNX Runtime
    golden_inputs = accuracy.last_pair[0]
    frames = np.load(next(golden_inputs.glob("input_frames*.npy")))
    original, fixed = _run(model, {"frames": frames}), _run(built, {"frames": frames})
    assert np.isfinite(fixed).all() and _cosine(original, fixed) > 0.999
    # the kept ops compute in FP32 in the build: their outputs are float32, and the all-FP16 overflow
    # value (|x| > 65504) survives there as in the original
    kept = {n.name: n for n in onnx.load(built).graph.node if n.name in keep}
    assert set(kept) == set(keep)
    # and nothing was pushed off the 720 px screen: the window kept its size, the status bar is in it
    assert (window.width(), window.height()) == SIZE
    bar = window.statusBar()
    assert bar.isVisible() and bar.mapTo(window, bar.rect().bottomLeft()).y() < SIZE[1]
