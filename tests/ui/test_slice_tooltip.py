"""A timeline slice's hover: name, duration, share and the few fields that say what ran."""

from __future__ import annotations

import json

from studio.core import formats
from studio.ui.panels.profiler import ProfilerPanel

# An ONNX Runtime profile event has about a dozen args; an msprof op row has twenty.
ORT_ARGS = {"op_name": "Conv", "provider": "CPUExecutionProvider", "node_index": "3",
            "activation_size": "786432", "parameter_size": "1728", "output_size": "4194304",
            "input_type_shape": [{"float": [1, 3, 256, 256]}, {"float": [16, 3, 3, 3]}, {"float": [16]}],
            "output_type_shape": [{"float": [1, 16, 256, 256]}],
            "thread_scheduling_stats": {"main_thread": {"thread_pool_size": 2, "block_size": 64}},
            **{f"extra_{i}": i * 1000 for i in range(12)}}


def test_a_slice_hover_shows_what_matters_and_leaves_the_rest_below(qtbot, make_panel, tmp_path):
    events = [{"ph": "X", "name": "conv1", "pid": 1, "tid": 1, "ts": 0, "dur": 115727.5,
               "cat": "Node", "args": ORT_ARGS},
              {"ph": "X", "name": "relu", "pid": 1, "tid": 1, "ts": 120000, "dur": 10, "args": {"op_name": "Relu"}}]
    path = tmp_path / "ort.json"
    path.write_text(json.dumps(events))
    panel = make_panel(ProfilerPanel)
    panel.open_file(formats.detect(path))
    qtbot.waitUntil(lambda: bool(panel.profiles), timeout=10000)
    index = int(panel.current.trace.slices_named("conv1")[0])
    lines = panel.timeline.describe(index).splitlines()
    assert lines[0] == "conv1"
    assert lines[1].startswith("duration 115.7 ms") and "share of op self time" in lines[1]
    assert 5 <= len(lines) <= 9, lines  # not 20 lines of runtime arguments over the tracks
    text = "\n".join(lines)
    assert "op_name: Conv" in text and "provider: CPUExecutionProvider" in text
    assert "input_type_shape: " in text and "thread_scheduling_stats" not in text
    assert lines[-1].startswith("+") and "Selected slice" in lines[-1]
    assert all(len(line) < 110 for line in lines)
