"""Helpers of the tests that drive the whole main window: a panel shown in a window of a given
size, and the smallest model the window opens."""

from __future__ import annotations

from pathlib import Path


def panel_in_window(qtbot, make_window, size: tuple[int, int], name: str):
    """A main window of ``size`` on screen with panel ``name`` in front; returns (window, panel)."""
    window = make_window()
    window.resize(*size)
    qtbot.waitExposed(window)
    window.show_panel(name)
    return window, window.panels[name]


def tiny_model(path: Path) -> Path:
    """Write a two-op ONNX model (Relu ``relu0``, then Sigmoid ``sig0``, 1×4 floats) to ``path``."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu0"),
                               helper.make_node("Sigmoid", ["r"], ["y"], name="sig0")], "tiny", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return Path(path)
