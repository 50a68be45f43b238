"""The peer of latency tests: a plain onnxruntime timing loop, as a user would write it."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np


def plain_ort_ms(model: Path, shape: list[int], runs: int) -> float:
    """Median ms of ``runs`` runs of ``model`` on one seeded random float32 input of ``shape`` (after a warm-up)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: np.random.default_rng(0).random(shape, dtype=np.float64).astype(np.float32)}
    session.run(None, feed)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - t0) * 1000)
    return float(np.median(times))
