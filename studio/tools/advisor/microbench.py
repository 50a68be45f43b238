"""Measure this computer's roofs with the kernels and the clock the profile's ops are timed with.

The points of a local roofline are ONNX Runtime kernel times from its profiler, so the roofs are
measured the same way: small models run in ONNX Runtime with profiling on, and each figure is the
best kernel time of the runs made in a fraction of a second, and then the best of several such
rounds (peaks are best cases, points are means, so measured points fall under their roof unless
the machine was busier while the roofs were measured; measuring again keeps the higher figures,
see :func:`.devices.merge_roofs`). The result is cached per machine (:mod:`.roof_cache`):

* compute: a float32 MatMul (``2 n^3`` FLOP) and a 3x3 Conv (``2 x MACs``), the faster of them;
* memory: a chain of Relu over tensors from 64 KiB to 64 MiB, ``2 x size`` bytes each (read and
  write). Small tensors stay in the caches, so the bandwidth is a curve over the working set, and
  an op is judged against the roof of its own size (a cache-aware roofline): the DRAM figure alone
  would put every cache-resident op "above the roof".
"""

from __future__ import annotations

import os
import datetime as dt
import json
import tempfile
import time
from collections.abc import Generator
from pathlib import Path

import numpy as np

from studio.core.jobs import Progress
from studio.tools.advisor.devices import THIS_COMPUTER, Device

RELU_SIZES = (1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26)  # bytes of one tensor
RELU_CHAIN = 6
SPREAD_S = 0.3  # each figure is the best run within this long (about 2.5 s a round)
# Rounds of every figure, interleaved; the best of them is kept. STUDIO_ROOF_ROUNDS overrides it:
# the test suite sets 1 (tests check behaviour; a round is ~2.5 s and every CLI process measures anew).
ROUNDS = max(1, int(os.environ.get("STUDIO_ROOF_ROUNDS", "5") or 5))
_MEASURED: Device | None = None


def measure(repeats: int = 5, again: bool = False, rounds: int = ROUNDS) -> Device:
    """A :class:`Device` for this computer: peak FLOP/s (FP32; FP16 set to it) and the bandwidth
    curve, the best of ``rounds`` rounds, measured once per process (``again`` measures anew)."""
    global _MEASURED
    if _MEASURED is not None and not again:
        return _MEASURED
    from studio.core.jobs import run_job

    _MEASURED = run_job(measure_job(repeats, rounds))[0]
    return _MEASURED


def measure_job(repeats: int = 5, rounds: int = ROUNDS, cancel=None
                ) -> Generator[Progress, None, tuple[Device, list[dict]]]:
    """Job: ``rounds`` rounds of every figure; returns (the best-of device, each round's figures).

    A peak is a maximum, so the best of several rounds is its estimator: a round taken while other
    work held the cores comes out low and is outvoted. The rounds interleave the figures, so a
    burst of load spoils one round of each, not every repeat of one.
    """
    rows = []
    with tempfile.TemporaryDirectory(prefix="studio-roofs-") as work:
        work = Path(work)
        for k in range(max(int(rounds), 1)):
            if cancel is not None:
                cancel.raise_if_cancelled()
            yield Progress(k / max(rounds, 1), f"measuring this computer's roofs: round {k + 1} of {rounds}")
            rows.append(_one_round(work, repeats))
    return device_from_rounds(rows), rows


def _one_round(work: Path, repeats: int) -> dict:
    """One round: MatMul and Conv FLOP/s, Relu bytes/s per working set."""
    matmul = _best_rate(_matmul_model(1024), work, repeats, {"MatMul"}, 2.0 * 1024 ** 3)
    conv_flops = 2.0 * 128 * 128 * 9 * 56 * 56
    conv = _best_rate(_conv_model(), work, repeats, {"Conv", "FusedConv"}, conv_flops)
    curve = [[2 * size, _best_rate(_relu_model(size // 4), work, repeats, {"Relu"}, 2.0 * size, per_node=True)]
             for size in RELU_SIZES]
    return {"matmul": matmul, "conv": conv, "bandwidths": curve}


def device_from_rounds(rows: list[dict]) -> Device:
    """The device of the best figures over ``rows`` (each figure's maximum on its own)."""
    matmul = max(r["matmul"] for r in rows)
    conv = max(r["conv"] for r in rows)
    sizes = [int(s) for s, _ in rows[0]["bandwidths"]]
    curve = [[size, max(dict((int(s), b) for s, b in r["bandwidths"]).get(size, 0.0) for r in rows)]
             for size in sizes]
    flops = max(matmul, conv)
    first = rows[0]
    spread = (f"; best of {len(rows)} rounds of {SPREAD_S:g} s per figure (the first round alone: "
              f"{max(first['matmul'], first['conv']) / 1e9:.1f} GFLOP/s, {first['bandwidths'][-1][1] / 1e9:.1f} GB/s)"
              if len(rows) > 1 else f"; best run of {SPREAD_S:g} s each")
    return Device(THIS_COMPUTER, fp16_flops=flops, bandwidth=curve[-1][1], fp32_flops=flops, bandwidths=curve,
                  source=f"measured here {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC} with ONNX Runtime "
                         f"kernel times (its profiler): MatMul 1024^3 {matmul / 1e9:.1f} GFLOP/s, Conv 3x3 "
                         f"128->128 at 56x56 {conv / 1e9:.1f} GFLOP/s; Relu bandwidth "
                         + ", ".join(f"{_size(ws)} {bw / 1e9:.0f} GB/s" for ws, bw in curve) + spread,
                  estimate=False,
                  note="FP16 peak set to the FP32 rate (CPU kernels compute FP16 in FP32); the bandwidth is "
                       "a curve over the working set (caches), `bandwidth` its largest size")


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def _best_rate(model, work: Path, repeats: int, op_types: set[str], amount: float, per_node: bool = False) -> float:
    """``amount`` per second of the fastest kernel run of ``op_types`` (all of one run summed, or
    one node when ``per_node``) over ``repeats`` profiled runs after a warm-up."""
    import onnx
    import onnxruntime as ort

    path = work / "bench.onnx"
    onnx.save(model, str(path))
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(work / "roofs")
    options.log_severity_level = 4
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.random.default_rng(0).standard_normal([d for d in i.shape], dtype=np.float32)
             for i in session.get_inputs()}
    started = time.perf_counter()
    runs = 0
    # at least ``repeats`` runs, and for SPREAD_S: a best case needs a moment the machine is free
    while runs < repeats + 1 or (time.perf_counter() - started < SPREAD_S and runs < 400):
        session.run(None, feeds)
        runs += 1
    profile = Path(session.end_profiling())
    events = json.loads(profile.read_text())
    profile.unlink()
    runs = _group_by_run(events, op_types)[1:]  # the first run warms up
    best_us = min((min(r) if per_node else sum(r)) for r in runs if r)
    return amount / (max(best_us, 0.5) / 1e6)


def _group_by_run(events: list[dict], op_types: set[str]) -> list[list[float]]:
    """Kernel durations (us) of ``op_types``, grouped by the ``model_run`` span they fall in."""
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "Session" and e.get("name") == "model_run")
    groups: list[list[float]] = [[] for _ in spans]
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time") \
                or e.get("args", {}).get("op_name") not in op_types:
            continue
        for k, (start, end) in enumerate(spans):
            if start <= e["ts"] <= end:
                groups[k].append(float(e["dur"]))
                break
    return groups


def _matmul_model(n: int):
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((n, n), dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], "roof_matmul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _conv_model():
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(2).standard_normal((128, 128, 3, 3), dtype=np.float32) * 0.05, "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "roof_conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 56, 56])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128, 56, 56])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _relu_model(elements: int):
    from onnx import TensorProto, helper

    names = ["x"] + [f"r{k}" for k in range(RELU_CHAIN)]
    nodes = [helper.make_node("Relu", [names[k]], [names[k + 1]], name=f"relu{k}") for k in range(RELU_CHAIN)]
    graph = helper.make_graph(nodes, "roof_relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
                              [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, [elements])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
