"""The peer of latency tests: a plain onnxruntime timing loop, as a user would write it."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np


def plain_ort_ms(model: Path, shape: list[int], runs: int) -> float:
    """Median ms of ``runs`` runs of ``model`` on one seeded random float32 input of ``shape`` (after a warm-up)."""
    import onnxruntime as ort

    name = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).get_inputs()[0].name
    feed = {name: np.random.default_rng(0).random(shape, dtype=np.float64).astype(np.float32)}
    return plain_ort_feeds_ms(model, feed, runs, warmup=1)


def plain_ort_feeds_ms(model: Path, feeds: dict, runs: int, warmup: int = 5) -> float:
    """Median ms of ``runs`` bare ``session.run`` calls of ``model`` on ``feeds`` (after ``warmup``)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1000)
    return float(np.median(times))


def plain_ab_ratio(model_a: Path, model_b: Path, feeds: dict, pairs: int = 300) -> float:
    """new / base ratio of the medians of bare runs of two models, alternating A, B, B, A, ..."""
    import onnxruntime as ort

    sessions = [ort.InferenceSession(str(m), providers=["CPUExecutionProvider"]) for m in (model_a, model_b)]
    for s in sessions:
        for _ in range(5):
            s.run(None, feeds)
    times: list[list[float]] = [[], []]
    for i in range(pairs):
        for k in ((0, 1) if i % 2 == 0 else (1, 0)):
            t0 = time.perf_counter()
            sessions[k].run(None, feeds)
            times[k].append(time.perf_counter() - t0)
    return float(np.median(times[1]) / np.median(times[0]))
