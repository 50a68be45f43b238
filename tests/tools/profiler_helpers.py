"""Helpers for the profiler tests: small synthetic traces written as the real tools write them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper


def write_trace(path: Path, events: list[dict], wrap: bool = False) -> Path:
    """Write events as a bare array (or an object with traceEvents)."""
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"} if wrap else events))
    return path


def random_x_events(n: int, seed: int = 0, tracks: int = 3) -> list[dict]:
    """n non-overlapping X events per track with random names, durations and gaps (µs floats)."""
    rng = np.random.default_rng(seed)
    events, clock = [], [0.0] * tracks
    for i in range(n):
        t = int(rng.integers(0, tracks))
        dur = float(rng.integers(1, 500)) / 4
        clock[t] += float(rng.integers(0, 100)) / 8
        events.append({"ph": "X", "name": f"op{int(rng.integers(0, 17))}", "cat": "k", "pid": 7, "tid": t,
                       "ts": clock[t], "dur": dur, "args": {"i": i}})
        clock[t] += dur
    return events


def dynamic_detector(path: Path) -> Path:
    """A small fully-convolutional net with dynamic N, H, W (like a text detector), generated."""
    rng = np.random.default_rng(1)
    inits, nodes, prev, channels = [], [], "x", 3
    for i, width in enumerate((16, 32, 32, 16)):
        w = rng.standard_normal((width, channels, 3, 3)).astype(np.float32) * 0.1
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, w.shape, w.ravel().tolist()))
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        prev, channels = f"r{i}", width
    nodes.append(helper.make_node("Sigmoid", [prev], ["y"], name="head"))
    graph = helper.make_graph(nodes, "det", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16, "H", "W"])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path


def name_stats(n: int) -> list:
    """``n`` per-name statistics rows (``NameStat``) as a big profile's statistics tab shows them."""
    import random

    from studio.tools.profiler.stats import NameStat

    rng = random.Random(5)
    stats = []
    for i in range(n):
        count = rng.randint(1, 50)
        total = rng.random() * 1e4
        stats.append(NameStat(f"aclnnOp{i % 9000}_{i}", count, total, total / count, total / count / 2,
                              total / count * 2, rng.random() / n, total * 0.9))
    return stats


def table_rows(n: int = 100_000) -> list[list]:
    """``n`` rows of a statistics table: names, counts, times, blanks and N/A as msprof exports have."""
    import random

    rng = random.Random(3)
    names = [f"aclnnOp{i % 5000}_{rng.choice('ABCDEF')}" for i in range(n)]
    return [[names[i], rng.randint(1, 50), rng.random() * 1000, None if i % 97 == 0 else rng.random(),
             rng.choice(["AI_CORE", "AI_CPU", "N/A", ""])] for i in range(n)]


def conv_exp_matmul(path: Path, channels: int, size: int, tanh: bool = False, name: str = "g") -> Path:
    """Conv (``channels`` out) -> Exp -> MatMul [-> Tanh] on a 1x3x``size``x``size`` input: ops
    ONNX Runtime does not fuse away; seeded weights (the same model every time)."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [channels, 3, 3, 3],
                           rng.random(channels * 27).astype(np.float32).tolist())
    m = helper.make_tensor("m", TensorProto.FLOAT, [size, size], rng.random(size * size).astype(np.float32).tolist())
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Exp", ["c"], ["r"], name="exp0"),
             helper.make_node("MatMul", ["r", "m"], ["t" if tanh else "y"], name="matmul0")]
    if tanh:
        nodes.append(helper.make_node("Tanh", ["t"], ["y"], name="tanh0"))
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, size, size])], [w, m])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path
