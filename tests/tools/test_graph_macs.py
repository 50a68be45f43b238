"""MACs per node, the node-data overlay it writes, and the demo contribution."""

from __future__ import annotations

import json

from studio.core.formats import detect
from studio.core.jobs import run_job
from studio.tools.graph.demo import add_to_demo
from studio.tools.graph.macs import graph_macs, node_data
from studio.tools.graph.overlay import load_node_data
from studio.tools.graph.reader import read_model
from studio.tools.graph.synthetic import CHANNELS, write_synthetic


def test_conv_and_matmul_macs(tmp_path):
    graph = read_model(write_synthetic(tmp_path / "s.onnx", 400)).main
    macs = graph_macs(graph)
    spatial = CHANNELS * CHANNELS  # outputs are [1, C, 4, 4]
    assert macs["stage1/block0/conv1"] == CHANNELS * spatial * CHANNELS * 9  # out elems x Cin x 3 x 3
    assert macs["stage3/block0/attn/q"] == CHANNELS * spatial * CHANNELS  # out elems x K
    assert macs["stage1/block0/relu1"] == CHANNELS * spatial


def test_node_data_round_trip_and_detection(tmp_path):
    graph = read_model(write_synthetic(tmp_path / "s.onnx", 200)).main
    path = tmp_path / "macs.json"
    path.write_text(json.dumps(node_data(graph)))
    assert detect(path).format.id == "node_data"
    overlay = load_node_data(path)
    assert abs(sum(overlay.values.values()) - 100) < 0.1
    assert overlay.bands and overlay.colour(50.0) == "#d0453a"


def test_demo_writes_the_unet_overlay_once(tmp_path):
    from studio.tools.demo.models import DEMO_MODELS

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "unet.onnx").write_bytes(DEMO_MODELS["unet"].build().SerializeToString())
    shown = run_job(add_to_demo(tmp_path))
    assert shown == [tmp_path / "graph" / "unet_macs.json"]
    stamp = shown[0].stat().st_mtime_ns
    assert run_job(add_to_demo(tmp_path)) == shown and shown[0].stat().st_mtime_ns == stamp
    assert "decoder1/conv1/conv" in load_node_data(shown[0]).values


def test_gc_pause_is_reentrant_and_restores():
    import gc
    import threading

    from studio.core.gc_pause import paused_gc

    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        done = threading.Event()

        def other_job():
            with paused_gc():
                done.wait(1)

        thread = threading.Thread(target=other_job)
        thread.start()
    assert not gc.isenabled()  # the other job still runs
    done.set()
    thread.join()
    assert gc.isenabled()


def _dynamic_model(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Flatten", ["r"], ["y"], name="flat", axis=1)], "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_shapes_from_a_run_win_over_declared(tmp_path):
    from studio.tools.graph.runtime_shapes import record_shapes

    path = _dynamic_model(tmp_path)
    graph = read_model(path).main
    assert graph.value("r").shape == ("N", 3, 2)
    shapes, dtypes = run_job(record_shapes(path, {"N": 5}))
    assert shapes["r"] == (5, 3, 2) and shapes["y"] == (5, 6) and dtypes["y"] == "float32"
    assert graph.apply_runtime_shapes(shapes, dtypes) == 3
    assert graph.value("y").type_text() == "float32[5,6] (runtime)"
