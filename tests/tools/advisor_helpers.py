"""Models and traces the advisor tests generate (onnx.helper, fixed seeds)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def mish_cnn(path: Path, blocks: int = 3, channels: int = 16, size: int = 96, seed: int = 5,
             mish: bool = True, batch: int = 1) -> Path:
    """Conv+BN followed by a decomposed Mish (Softplus -> Tanh -> Mul) per block, or a Relu."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    x, cin = "input", 3
    for b in range(blocks):
        w = (rng.standard_normal((channels, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{b}"),
                  numpy_helper.from_array(rng.uniform(0.5, 1.5, channels).astype(np.float32), f"bn{b}_s"),
                  numpy_helper.from_array((rng.standard_normal(channels) * 0.1).astype(np.float32), f"bn{b}_b"),
                  numpy_helper.from_array((rng.standard_normal(channels) * 0.1).astype(np.float32), f"bn{b}_m"),
                  numpy_helper.from_array(rng.uniform(0.5, 1.5, channels).astype(np.float32), f"bn{b}_v")]
        nodes.append(helper.make_node("Conv", [x, f"w{b}"], [f"conv{b}"], name=f"block{b}/conv", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("BatchNormalization", [f"conv{b}", f"bn{b}_s", f"bn{b}_b", f"bn{b}_m", f"bn{b}_v"],
                                      [f"bn{b}"], name=f"block{b}/bn"))
        if mish:
            nodes.append(helper.make_node("Softplus", [f"bn{b}"], [f"sp{b}"], name=f"block{b}/mish/softplus"))
            nodes.append(helper.make_node("Tanh", [f"sp{b}"], [f"th{b}"], name=f"block{b}/mish/tanh"))
            nodes.append(helper.make_node("Mul", [f"bn{b}", f"th{b}"], [f"act{b}"], name=f"block{b}/mish/mul"))
        else:
            nodes.append(helper.make_node("Relu", [f"bn{b}"], [f"act{b}"], name=f"block{b}/relu"))
        x, cin = f"act{b}", channels
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="head/pool"))
    graph = helper.make_graph(nodes, "mish_cnn",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])],
                              [helper.make_tensor_value_info("pool", TensorProto.FLOAT, [batch, channels, 1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def profiled_mish(folder: Path, iterations: int) -> tuple[Path, Path]:
    """(the :func:`mish_cnn` model, a real `studio profile run` folder of it) under ``folder``."""
    from studio.core.jobs import run_job
    from studio.tools.profiler.local_run import profile_model

    model = mish_cnn(folder / "mish.onnx")
    run_job(profile_model(model, folder / "profile", iterations=iterations, warmup=1))
    return model, folder / "profile"


def host_sleep_trace(path: Path, sleep_s: float = 5.0, kernels: int = 40) -> Path:
    """A Chrome trace: an NPU stream running kernels, idle for ``sleep_s`` while the host sits in an
    msprofTx range ("create stream") with no API call inside it, then kernels again."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "process_labels", "pid": 1, "tid": 0, "args": {"labels": "NPU"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "Stream 7"}},
        {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "CANN"}},
        {"ph": "M", "name": "process_labels", "pid": 2, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_name", "pid": 3, "tid": 0, "args": {"name": "msprofTx"}},
        {"ph": "M", "name": "process_labels", "pid": 3, "tid": 0, "args": {"labels": "CPU"}},
    ]
    t = 1000.0
    for i in range(kernels // 2):  # before the sleep: 200 us kernels, 20 us apart
        events.append({"ph": "X", "name": f"Conv2D_{i}", "pid": 1, "tid": 7, "ts": t, "dur": 200.0, "args": {}})
        events.append({"ph": "X", "name": "aclnnConvolution", "pid": 2, "tid": 11, "ts": t - 15, "dur": 10.0})
        t += 220.0
    sleep_from = t
    events.append({"ph": "X", "name": "create stream", "pid": 3, "tid": 11, "ts": sleep_from + 5,
                   "dur": sleep_s * 1e6, "args": {}})
    t = sleep_from + sleep_s * 1e6 + 30
    events.append({"ph": "X", "name": "aclrtCreateStream", "pid": 2, "tid": 11, "ts": t - 20, "dur": 8.0})
    for i in range(kernels // 2, kernels):
        events.append({"ph": "X", "name": f"Conv2D_{i}", "pid": 1, "tid": 7, "ts": t, "dur": 200.0, "args": {}})
        events.append({"ph": "X", "name": "aclnnConvolution", "pid": 2, "tid": 11, "ts": t - 15, "dur": 10.0})
        t += 220.0
    path.write_text(json.dumps({"traceEvents": events}))
    return path


OP_SUMMARY_COLUMNS = ["Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)",
                      "Input Shapes", "Input Data Types", "OP State"]


def op_summary_csv(path: Path, rows: list[tuple]) -> Path:
    """An msprof-style op_summary CSV: rows of (name, type, task type, duration us[, dtypes, state])."""
    import csv

    t = 1_700_000_000_000_000.0
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(OP_SUMMARY_COLUMNS)
        for row in rows:
            name, op_type, task, dur = row[:4]
            dtypes = row[4] if len(row) > 4 else "FLOAT16"
            state = row[5] if len(row) > 5 else "static"
            out.writerow([name, op_type, task, f"{t:.3f}\t", dur, "1,16,32,32", dtypes, state])
            t += dur + 5
    return path


def small_model(path: Path, nodes_spec: str, batch: int = 1, dynamic: bool = False) -> Path:
    """Tiny models for single rules: "conv_add", "matmul_add", "gelu", "layernorm", "scale_relu"."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits, nodes = [], []
    dim0 = "N" if dynamic else batch
    if nodes_spec in ("conv_add", "conv_add_last_axis"):  # the second: an [8] constant broadcasts over W
        shape_in, shape_out = [dim0, 3, 16, 16], [dim0, 8, 16, 16]
        bias_shape = (1, 8, 1, 1) if nodes_spec == "conv_add" else (16,)
        inits += [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
                  numpy_helper.from_array(rng.standard_normal(bias_shape).astype(np.float32), "b")]
        nodes += [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                  helper.make_node("Add", ["c", "b"], ["y"], name="add")]
    elif nodes_spec == "matmul_add":
        shape_in, shape_out = [dim0, 32], [dim0, 16]
        inits += [numpy_helper.from_array(rng.standard_normal((32, 16)).astype(np.float32), "w"),
                  numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")]
        nodes += [helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
                  helper.make_node("Add", ["m", "b"], ["y"], name="bias")]
    elif nodes_spec == "gelu":
        shape_in = shape_out = [dim0, 64]
        inits += [numpy_helper.from_array(np.array(1.4142135, np.float32), "sqrt2"),
                  numpy_helper.from_array(np.array(1.0, np.float32), "one"),
                  numpy_helper.from_array(np.array(0.5, np.float32), "half")]
        nodes += [helper.make_node("Div", ["x", "sqrt2"], ["d"], name="gelu/div"),
                  helper.make_node("Erf", ["d"], ["e"], name="gelu/erf"),
                  helper.make_node("Add", ["e", "one"], ["a"], name="gelu/add"),
                  helper.make_node("Mul", ["x", "a"], ["m"], name="gelu/mul"),
                  helper.make_node("Mul", ["m", "half"], ["y"], name="gelu/mul_half")]
    elif nodes_spec == "layernorm":
        shape_in = shape_out = [dim0, 8, 64]
        inits += [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
                  numpy_helper.from_array(np.array(1e-5, np.float32), "eps")]
        nodes += [helper.make_node("ReduceMean", ["x"], ["mu"], name="ln/mean", axes=[-1]),
                  helper.make_node("Sub", ["x", "mu"], ["xc"], name="ln/sub"),
                  helper.make_node("Pow", ["xc", "two"], ["sq"], name="ln/pow"),
                  helper.make_node("ReduceMean", ["sq"], ["var"], name="ln/var", axes=[-1]),
                  helper.make_node("Add", ["var", "eps"], ["ve"], name="ln/add"),
                  helper.make_node("Sqrt", ["ve"], ["sd"], name="ln/sqrt"),
                  helper.make_node("Div", ["xc", "sd"], ["y"], name="ln/div")]
    elif nodes_spec == "scale_relu":  # x * 1e5 -> Relu: overflows FP16 for |x| >~ 0.66
        shape_in = shape_out = [dim0, 4, 8, 8]
        inits += [numpy_helper.from_array(np.array(1e5, np.float32), "k")]
        nodes += [helper.make_node("Mul", ["x", "k"], ["s"], name="scale"),
                  helper.make_node("Relu", ["s"], ["y"], name="relu")]
    elif nodes_spec == "plain_relu":
        shape_in = shape_out = [dim0, 4, 8, 8]
        nodes += [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                  helper.make_node("Sigmoid", ["r"], ["y"], name="sigmoid")]
    else:
        raise ValueError(nodes_spec)
    graph = helper.make_graph(nodes, nodes_spec, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape_in)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape_out)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def session_ratio(a, b, feeds: dict, pairs: int = 15) -> float:
    """Median over interleaved pairs of time(b) / time(a) for two ONNX Runtime sessions on ``feeds``
    (plain timing, the independent check of the advisor's A/B)."""
    import time

    a.run(None, feeds), b.run(None, feeds)
    ratios = []
    for i in range(pairs):
        t = {}
        for name, s in ((("a", a), ("b", b)) if i % 2 == 0 else (("b", b), ("a", a))):
            t0 = time.perf_counter()
            s.run(None, feeds)
            t[name] = time.perf_counter() - t0
        ratios.append(t["b"] / t["a"])
    return float(np.median(ratios))
