"""A compiled kernel for :mod:`studio.tools.accuracy.msprobe_metrics`: msprobe's six metrics in one walk.

The numpy path takes a float64 copy of both tensors, then one or more passes (and a float32 or
float64 copy) per metric: about 20 MB/s. This numba kernel reads each pair of elements once and
keeps every running figure: the dot product and both squared norms (Cosine), Σ(n − b)²
(EucDist), max |n − b| (MaxAbsErr), the largest relative error and the counts under 0.001 and
0.005 (the two ratios), and whether infinities or NaNs sit at different places.

msprobe's arithmetic is kept: Cosine, EucDist and MaxAbsErr in float64; the relative error
``|(n' − b') / b'|`` in float32 when both tensors are float32 or narrower (float64 otherwise),
``n' = n + eps`` and ``b' = b + eps`` where ``b`` is 0 (the dtype's eps); the thresholds compared in
that same dtype; an infinity or NaN at the same place on both sides counts as 0 on both. The
relative error is computed in a function compiled without fast-math flags, so ``(n + eps) − (b +
eps)`` cannot be regrouped into ``n − b``. Sums run in float64 per block of :data:`BLOCK` elements,
then across blocks (the error of one long running sum grows with its length).

The machine code is cached as :mod:`studio.tools.accuracy.fused`'s is (importing that module sets
``NUMBA_CACHE_DIR`` for a read-only install).
"""

from __future__ import annotations

import numpy as np

from studio.tools.accuracy import fused  # noqa: F401 - sets NUMBA_CACHE_DIR before numba compiles

import numba  # noqa: E402,I001

BLOCK = 4096
# Slots of the result array (float64).
DOT, NN, BB, DD, MAX_ABS, MAX_REL, UNDER_1, UNDER_5, MISPLACED = range(9)

_strict = numba.njit(cache=True, nogil=True, fastmath=False)
_summing = numba.njit(cache=True, nogil=True, fastmath={"reassoc"})


@_strict
def _relative(n, b, eps):
    """``|(n' − b') / b'|`` in the dtype of ``n`` and ``b`` (both float32, or both float64)."""
    if b == 0:
        n = n + eps
        b = b + eps
    return abs((n - b) / b)


@_summing
def _kernel(n, b, one, eps, t1, t5, out):
    """Every figure of ``n``, ``b`` (1-d, float32 or float64 each) into ``out`` (the slots above).

    ``one`` is 1 in the relative error's dtype (float32 or float64); ``eps``, ``t1`` and ``t5``
    (msprobe's eps and the 0.001 / 0.005 thresholds) are in that dtype."""
    size = n.size
    dot = nn = bb = dd = 0.0
    under1 = under5 = misplaced = 0
    mad = mrel = np.int64(0)
    for start in range(0, size, BLOCK):
        stop = min(start + BLOCK, size)
        bdot = bnn = bbb = bdd = 0.0
        for i in range(start, stop):
            x = n[i] * one  # exact: into the relative error's dtype, never narrower than the data
            y = b[i] * one
            if not (np.isfinite(x) and np.isfinite(y)):
                if (np.isinf(x) and np.isinf(y)) or (np.isnan(x) and np.isnan(y)):
                    x = one - one  # the same place on both sides: 0 on both (typed as ``one``)
                    y = one - one
                else:
                    misplaced += 1
            X = np.float64(x)
            Y = np.float64(y)
            d = X - Y
            bdot += X * Y
            bnn += X * X
            bbb += Y * Y
            bdd += d * d
            # |d| and the relative error are >= 0 (or NaN): their bits order as they do, and NaN's
            # bits above every number's, so NaN wins the max as it does numpy's
            mad = max(mad, np.float64(abs(d)).view(np.int64))
            r = _relative(x, y, eps)
            under1 += r < t1
            under5 += r < t5
            mrel = max(mrel, np.float64(r).view(np.int64))
        dot += bdot
        nn += bnn
        bb += bbb
        dd += bdd
    out[DOT] = dot
    out[NN] = nn
    out[BB] = bb
    out[DD] = dd
    out[MAX_ABS] = np.int64(mad).view(np.float64)
    out[MAX_REL] = np.int64(mrel).view(np.float64)
    out[UNDER_1] = under1
    out[UNDER_5] = under5
    out[MISPLACED] = misplaced


def _kernel_dtype(a: np.ndarray) -> np.ndarray:
    """float32 and float64 as they are; float16 as float32 and integers and booleans as float64
    (both exact, and what msprobe's arithmetic casts them to)."""
    if a.dtype in (np.float32, np.float64):
        return a.reshape(-1)
    return a.reshape(-1).astype(np.float32 if a.dtype == np.float16 else np.float64)


def figures(n: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """The running figures of a pair of same-shape tensors (at least 1-d): ``dot``, ``nn``, ``bb``
    (Σnb, Σn², Σb² in float64), ``dd`` (Σ(n − b)²), ``max_abs``, ``max_rel``, ``under_1``,
    ``under_5`` (how many relative errors are under 0.001 / 0.005) and ``misplaced`` (elements
    where only one side, or not the same kind, is inf or NaN)."""
    low = {np.dtype(np.float16), np.dtype(np.float32)}
    kind = np.float32 if n.dtype in low and b.dtype in low else np.float64
    out = np.zeros(9)
    _kernel(_kernel_dtype(n), _kernel_dtype(b), kind(1), kind(np.finfo(kind).eps), kind(0.001), kind(0.005), out)
    return {"dot": out[DOT], "nn": out[NN], "bb": out[BB], "dd": out[DD], "max_abs": out[MAX_ABS],
            "max_rel": out[MAX_REL], "under_1": int(out[UNDER_1]), "under_5": int(out[UNDER_5]),
            "misplaced": int(out[MISPLACED])}


def warm_up() -> None:
    """Compile (or load from the cache) the kernel for the dtype pairs tensor dumps hold."""
    for x, y in ((np.float32, np.float32), (np.float32, np.float64), (np.float64, np.float32),
                 (np.float64, np.float64)):
        figures(np.arange(1, 9, dtype=x), np.arange(0, 8, dtype=y))
