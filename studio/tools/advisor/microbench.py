"""Measure this computer's roofs: a float32 matmul for compute and a large copy for bandwidth.

Numbers a user can reproduce: ``2*n^3`` FLOP per matmul of two n x n float32 matrices, and
``2*size`` bytes per copy (read + write) of an array larger than the caches. The best of a few
repetitions counts, as peak figures are best cases.
"""

from __future__ import annotations

import datetime as dt
import time

import numpy as np

from studio.tools.advisor.devices import THIS_COMPUTER, Device


_MEASURED: Device | None = None


def measure(n: int = 512, copy_mib: int = 32, repeats: int = 5, again: bool = False) -> Device:
    """A :class:`Device` for this computer (FP32 and FP16 figures both set to the FP32 matmul rate).

    Measured once per process (``again`` measures anew): the figures do not change between reports.
    """
    global _MEASURED
    if _MEASURED is not None and not again:
        return _MEASURED
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a @ b  # warm the BLAS threads
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    flops = 2.0 * n ** 3 / best
    src = np.ones(copy_mib * 2**20 // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best_copy = min(_timed(lambda: np.copyto(dst, src)) for _ in range(repeats))
    bandwidth = 2.0 * src.nbytes / best_copy
    _MEASURED = Device(THIS_COMPUTER, fp16_flops=flops, bandwidth=bandwidth, fp32_flops=flops,
                  source=f"measured here {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC}: float32 matmul "
                         f"{n}x{n} (numpy), copy of {copy_mib} MiB; best of {repeats}", estimate=False,
                  note="FP16 peak set to the FP32 rate (CPU kernels compute FP16 in FP32)")
    return _MEASURED


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return max(time.perf_counter() - t0, 1e-9)
