"""Accuracy metrics over many tensor pairs: ours vs the memory pass, plain numpy and Polygraphy.

All metrics (cosine, max/mean abs, RMSE, max/mean/accumulated relative error, relative Euclidean
distance, KL divergence, mean/std of both sides) over N pairs of 4M float32 tensors (N = 100,
``--quick``: 20), timed in one run against

* the memory pass ``np.add(a, b, out=c)`` over the same pairs (the floor);
* a straightforward numpy version, one full pass per metric (float64);
* Polygraphy's comparator (``CompareFunc.simple``; ``pip install polygraphy`` into the venv by
  hand, it is not a project dependency — the figure is skipped without it).

A last figure measures the metrics right after ONNX Runtime ran in the same process: with ORT's
default spinning worker threads, and with spinning disabled (what ``studio dump`` does). The
metrics use no BLAS call (einsum's own loop), so OpenBLAS threads never join the fight.

Every figure is the median time of one pair times the number of pairs (the machine this ran on
is shared; a load spike in one pair must not decide a figure).

The pairs cycle through a pool of 8 distinct pairs (256 MiB): each 16 MiB tensor is far larger
than the caches, so every pass reads from memory as it would with N distinct pairs.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import numpy as np

from studio.tools.accuracy.metrics import EPS, compare_arrays

SIZE = 4 << 20
POOL = 8


def _pairs(count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    pool = []
    for _ in range(min(count, POOL)):
        golden = rng.standard_normal(SIZE, dtype=np.float32)
        target = golden + rng.standard_normal(SIZE, dtype=np.float32) * np.float32(1e-3)
        pool.append((golden, target))
    return [pool[i % len(pool)] for i in range(count)]


def straightforward(golden: np.ndarray, target: np.ndarray) -> dict:
    """One full numpy pass (or more) per metric, float64 — how most scripts do it."""
    x, y = target.astype(np.float64), golden.astype(np.float64)
    d = x - y
    cosine = min(float(np.sum(x * y) / (np.sqrt(np.sum(x * x)) * np.sqrt(np.sum(y * y)))), 1.0)
    mask = np.abs(y) > EPS
    rel = np.where(mask, np.abs(d) / np.where(mask, np.abs(y), 1.0), 0.0)
    p = np.maximum((y - y.min()) / (y.max() - y.min()), EPS)
    q = np.maximum((x - x.min()) / (x.max() - x.min()), EPS)
    p, q = p / p.sum(), q / q.sum()
    kl = float(np.sum(p * np.log(p / q)))
    return {"cosine": cosine, "max_abs_err": float(np.max(np.abs(d))), "mean_abs_err": float(np.mean(np.abs(d))),
            "rmse": float(np.sqrt(np.mean(d * d))), "max_rel_err": float(rel.max()), "mean_rel_err": float(rel.mean()),
            "acc_rel_err": float(rel.sum()), "rel_euclidean": float(np.sqrt(np.sum(d * d) / np.sum(y * y))),
            "kl_div": 0.0 if abs(kl) < EPS else kl, "golden_mean": float(y.mean()), "golden_std": float(y.std()),
            "target_mean": float(x.mean()), "target_std": float(x.std())}


def _time(func, pairs) -> float:
    """Median time of one pair times the number of pairs.

    This machine is shared: a load spike during one pair must not decide a figure, for us or
    for a peer, so every method is timed per pair and the median is scaled up.
    """
    times = []
    for golden, target in pairs:
        start = time.perf_counter()
        func(golden, target)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * len(pairs)


def _polygraphy():
    try:
        from polygraphy.comparator import CompareFunc, IterationResult
        from polygraphy.logger import G_LOGGER
    except ImportError:
        return None
    G_LOGGER.module_severity = G_LOGGER.CRITICAL
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    compare = CompareFunc.simple()

    def run(golden, target):
        return compare(IterationResult({"t": golden}, runner_name="golden"),
                       IterationResult({"t": target}, runner_name="target"))
    return run


def _ort_session(spinning: bool):
    """A small ONNX Runtime session; ``spinning`` keeps ORT's default busy-waiting worker threads."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [512, 512], np.random.default_rng(1).standard_normal(512 * 512)
                           .astype(np.float32).tolist())
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512, 512])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512, 512])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    options = ort.SessionOptions()
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session, {"x": np.ones((512, 512), np.float32)}


def _after_ort(spinning: bool, pairs) -> float:
    """Time the metrics right after ORT runs in this process (what the panel and `dump` do)."""
    session, feeds = _ort_session(spinning)
    for _ in range(5):
        session.run(None, feeds)
    took = _time(compare_arrays, pairs)
    del session
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 pairs instead of 100")
    args = parser.parse_args()
    count = 20 if args.quick else 100
    pairs = _pairs(count)
    out = np.empty(SIZE, dtype=np.float32)
    # Check once that we and the plain version agree before timing either.
    ours, plain = compare_arrays(*pairs[0]), straightforward(*pairs[0])
    for key, value in plain.items():
        assert math.isclose(getattr(ours, key), value, rel_tol=1e-6, abs_tol=1e-9), (key, getattr(ours, key), value)
    memory = _time(lambda g, t: np.add(g, t, out=out), pairs)
    ours_s = _time(compare_arrays, pairs)
    plain_s = _time(straightforward, pairs)
    label = f"all metrics, {count} pairs of 4M float32"
    rows = [
        {"figure": f"{label} vs memory pass", "unit": "s", "ours": ours_s, "peer": memory,
         "peer_name": "np.add(a, b, out=c), one memory pass", "goal": "ours within 10x of the memory pass"},
        {"figure": f"{label} vs plain numpy", "unit": "s", "ours": ours_s, "peer": plain_s,
         "peer_name": "numpy, one pass per metric (float64)", "goal": "faster than one pass per metric"},
    ]
    poly = _polygraphy()
    if poly is not None:
        rows.append({"figure": f"{label} vs Polygraphy", "unit": "s", "ours": ours_s,
                     "peer": _time(poly, pairs), "peer_name": "Polygraphy CompareFunc.simple",
                     "goal": "at least 20x faster than Polygraphy"})
    else:
        print("polygraphy not installed: `.venv/bin/pip install polygraphy` for the third figure", file=sys.stderr)
    few = pairs[:8]
    quiet = _after_ort(False, few)
    spinning = _after_ort(True, few)
    rows.append({"figure": "all metrics, 8 pairs, right after an ORT run", "unit": "s", "ours": quiet,
                 "peer": spinning, "peer_name": "same after an ORT session with spinning threads (ORT default)",
                 "goal": "our dumps disable spinning: no slowdown"})
    for row in rows:
        row["ratio"] = row["ours"] / row["peer"] if row["peer"] else float("nan")
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
