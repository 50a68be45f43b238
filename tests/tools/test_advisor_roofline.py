"""The roofline against hand-computed ops, and the device table."""

from __future__ import annotations

import json

import pytest

from studio.tools.advisor.devices import Device, load_devices, save_device
from studio.tools.advisor.roofline import classify, node_work, roofline


def _conv_model(tmp_path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    b = numpy_helper.from_array(np.ones((64, 64), np.float32), "mw")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("Reshape", ["r", "shape"], ["f"], name="flat"),
         helper.make_node("MatMul", ["f", "mw"], ["y"], name="matmul")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])],
        [w, b, numpy_helper.from_array(np.array([4, 64], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, str(tmp_path / "m.onnx"))
    from studio.tools.graph.reader import read_model

    return read_model(tmp_path / "m.onnx").main


def test_work_matches_hand_counts(tmp_path):
    graph = _conv_model(tmp_path)
    index = graph.node_index()
    # Conv: 4 out ch x 8x8 x (3 in ch x 3x3) MACs = 6912 -> 13824 FLOP;
    # bytes = input 3*64*4 + weight 4*27*4 + output 4*64*4 = 768 + 432 + 1024
    assert node_work(graph, index["conv"]) == (13824.0, 2224.0)
    # Relu: one op per element (256), in + out 256*4 each
    assert node_work(graph, index["relu"]) == (256.0, 2048.0)
    # MatMul [4,64] x [64,64]: 4*64*64 MACs -> 32768 FLOP; bytes (256 + 4096 + 256) * 4
    assert node_work(graph, index["matmul"]) == (32768.0, 18432.0)
    # Reshape only re-labels the tensor (a view in ONNX Runtime and on the NPU): no work, no traffic
    assert node_work(graph, index["flat"]) == (0.0, 0.0)


def test_classification_at_80_percent_of_the_roof():
    device = Device("test", fp16_flops=1e12, bandwidth=1e11, fp32_flops=1e12)  # ridge 10 FLOP/byte
    flops, nbytes = 13824.0, 2224.0  # intensity 6.2 < 10: memory side, roof 6.216e11 FLOP/s
    roof = flops / nbytes * 1e11
    at = lambda fraction: flops / (fraction * roof) * 1e6  # the time (us) reaching that fraction  # noqa: E731
    bound, intensity, attainable, achieved, ratio = classify(flops, nbytes, at(0.9), device)
    assert bound == "memory-bound" and attainable == pytest.approx(roof) and ratio == pytest.approx(0.9)
    assert classify(flops, nbytes, at(0.79), device)[0] == "latency-bound"
    assert classify(flops, nbytes, None, device)[0] == "memory-region"
    mm = 2.0 * 256 ** 3, 3 * 256 * 256 * 4.0  # intensity 42.7 > 10: compute side, roof 1e12
    assert classify(*mm, mm[0] / 0.85e12 * 1e6, device)[0] == "compute-bound"
    assert classify(*mm, mm[0] / 0.5e12 * 1e6, device)[0] == "latency-bound"
    assert classify(*mm, None, device)[0] == "compute-region"


def test_roofline_points_use_measured_times(tmp_path):
    graph = _conv_model(tmp_path)
    device = Device("test", fp16_flops=1e12, bandwidth=1e11, fp32_flops=1e12)
    points = {p.name: p for p in roofline(graph, device, {"conv": 13824.0 / 6.216e11 * 1e6 / 0.95})}
    assert points["conv"].bound == "memory-bound" and points["conv"].ratio == pytest.approx(0.95, rel=1e-3)
    assert points["relu"].bound == "memory-region" and points["relu"].time_us is None


def test_device_table_cites_sources_and_takes_user_edits(tmp_path):
    table = load_devices(tmp_path / "none.json")
    assert table["Ascend 310"].fp16_flops == 8e12 and table["Ascend 310"].int8_ops == 16e12
    assert table["Ascend 910"].fp16_flops == 256e12
    assert all(d.source for d in table.values())
    assert table["Ascend 310"].estimate  # its bandwidth is derived from a card total
    path = save_device(Device("Ascend 310", 9e12, 60e9, source="my lab"), tmp_path / "devices.json")
    edited = load_devices(path)
    assert edited["Ascend 310"].fp16_flops == 9e12 and edited["Ascend 910"].fp16_flops == 256e12
    assert json.loads(path.read_text())[0]["source"] == "my lab"


def test_microbenchmark_measures_positive_roofs():
    from studio.tools.advisor.microbench import measure

    device = measure(repeats=2, again=True, rounds=1)
    assert device.fp32_flops > 1e6 and device.bandwidth > 1e6  # a busy shared machine: only sanity
    assert "measured" in device.source and len(device.bandwidths) == 6
