"""Compiled kernels for :mod:`studio.tools.accuracy.metrics`: every sum, min and max in one loop.

numpy needs one call (one walk over a cache block) per sum, min, max and element-wise step: about
twenty for pass 1 and fourteen for KL. These numba kernels walk the data once per pass, all
arithmetic in float64, and hand back the same sums as the numpy path (``metrics._pass1`` and
``metrics._kl_sums``), which stays as the fallback where numba cannot be imported.

Vectorised without giving up IEEE arithmetic: the one fast-math flag is ``reassoc``, which lets
LLVM split each running sum into SIMD partial sums (as numpy's pairwise sums do). No ``nnan``,
``ninf`` or ``contract``: NaN and inf keep their meaning and no FMA changes a rounding. Where a
term must not be regrouped with the sum it joins (KL's ``P·log(P/Q) − P + Q``, whose parts cancel)
it is computed in a function compiled without any flag. Minima and maxima are taken over the
float's bits as integers (an order-preserving key), since LLVM vectorises integer min/max but not a
float compare-and-select without ``nnan`` (measured over 4M float32 in cache: every sum, min and
max of pass 1 in 0.9 ms with the keys; one sum and one float max alone took 2.8 ms).

Precision: sums run in float64 over blocks of :data:`BLOCK` elements, then across blocks. Means and
spreads merge block by block (Chan et al.); where a block's mean dominates its spread
(Σv² − (Σv)²/n keeps under 1e-3 of Σv²) that block is walked again, centred, while it is in cache.

KL needs ``np.log``: numba's log is scalar libm (6.6x numpy's SIMD log over 64K float64), so per cache block
one kernel writes ``P/Q`` (float64), numpy takes its log in place (SIMD), and a second
kernel adds up ``P·log(P/Q) − P + Q`` with ``P`` and ``Q`` recomputed from the data in cache.

The machine code is cached (``cache=True``) beside this file when its folder is writable, else in
Studio's cache folder: only the first comparison after an install or an update compiles.
"""

from __future__ import annotations

import math

import numpy as np

from studio.core.compiled import keep_numba_cache_with_studio

keep_numba_cache_with_studio(__file__)

import numba  # noqa: E402 - after NUMBA_CACHE_DIR: numba reads it on import

BLOCK = 4096  # elements per block of pass 1: its float64 sums, then Chan's merge
EPS = float(np.finfo(np.float32).eps)
_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)
_HUGE = np.int64(0x7FFFFFFFFFFFFFFF)  # keys: larger than any float's
_TINY = np.int64(-0x7FFFFFFFFFFFFFFF - 1)

# Slots of the pass-1 state array (float64), updated in place call after call.
N, MEAN_X, M2_X, SUM_X, MEAN_Y, M2_Y, SUM_Y, SDD, SAD, MAD, SREL, MREL, XMIN, XMAX, YMIN, YMAX = range(16)
# Slots of the KL state array.
SP, SQ, D = range(3)

_strict = numba.njit(cache=True, nogil=True, fastmath=False)
_summing = numba.njit(cache=True, nogil=True, fastmath={"reassoc"})


@_strict
def _key(v):
    """An int64 that orders as the float64 ``v`` does (negative floats: magnitude bits flipped)."""
    k = np.float64(v).view(np.int64)
    return k ^ ((k >> 63) & _SIGN)


@_strict
def _unkey(k):
    return np.int64(k ^ ((k >> 63) & _SIGN)).view(np.float64)


@_summing
def _centred_m2(v, mean):
    m2 = 0.0
    for i in range(v.size):
        c = np.float64(v[i]) - mean
        m2 += c * c
    return m2


@_strict
def _merge(st, nb, s1, s2, v, mean_at, m2_at, sum_at):
    """Chan's merge of one block's Σv and Σv² into the running count, mean and centred moment."""
    mean_b = s1 / nb
    m2_b = s2 - s1 * mean_b
    if not m2_b > 1e-3 * s2:  # the mean dominates and the difference cancels: centre the block
        m2_b = _centred_m2(v, mean_b)
    n = st[N]
    delta = mean_b - st[mean_at]
    total = n + nb
    st[m2_at] += m2_b + delta * delta * n * nb / total
    st[mean_at] += delta * nb / total
    st[sum_at] += s1


@_summing
def _pass1_kernel(x, y, lo, hi, st):
    """Pass 1 over ``x[lo:hi]``, ``y[lo:hi]`` (float32 or float64, one dtype), into ``st``."""
    for start in range(lo, hi, BLOCK):
        xs = x[start:min(start + BLOCK, hi)]  # indices from 0 up: no negative-index check in the loop
        ys = y[start:min(start + BLOCK, hi)]
        sx = sy = sxx = syy = sdd = sad = srel = 0.0
        mad = mrel = np.int64(0)
        xlo = ylo = _HUGE
        xhi = yhi = _TINY
        for i in range(xs.size):
            X = np.float64(xs[i])
            Y = np.float64(ys[i])
            d = X - Y
            ad = abs(d)
            ay = abs(Y)
            r = ad / ay if ay > EPS else 0.0
            sx += X
            sy += Y
            sxx += X * X
            syy += Y * Y
            sdd += d * d
            sad += ad
            srel += r
            # |d| and r are >= 0 (or NaN, which the sums report): their bits order as they do
            mad = max(mad, np.float64(ad).view(np.int64))
            mrel = max(mrel, np.float64(r).view(np.int64))
            kx = _key(X)
            ky = _key(Y)
            xlo = min(xlo, kx)
            xhi = max(xhi, kx)
            ylo = min(ylo, ky)
            yhi = max(yhi, ky)
        nb = xs.size
        _merge(st, nb, sx, sxx, xs, MEAN_X, M2_X, SUM_X)
        _merge(st, nb, sy, syy, ys, MEAN_Y, M2_Y, SUM_Y)
        st[N] += nb
        st[SDD] += sdd
        st[SAD] += sad
        st[SREL] += srel
        st[MAD] = max(st[MAD], np.int64(mad).view(np.float64))
        st[MREL] = max(st[MREL], np.int64(mrel).view(np.float64))
        st[XMIN] = min(st[XMIN], _unkey(xlo))
        st[XMAX] = max(st[XMAX], _unkey(xhi))
        st[YMIN] = min(st[YMIN], _unkey(ylo))
        st[YMAX] = max(st[YMAX], _unkey(yhi))


@_strict
def _pq(a, off, scale):
    """One side's min-max normalised value, clamped at float32 eps (as ``metrics._kl_sums``)."""
    v = (np.float64(a) - off) * scale
    return v if v > EPS else EPS


@_summing
def _kl_ratio(x, y, lo, hi, yoff, yscale, xoff, xscale, r, st):
    """ΣP and ΣQ of ``[lo, hi)`` into ``st``; P/Q into ``r`` (for numpy's log)."""
    xs = x[lo:hi]
    ys = y[lo:hi]
    sp = sq = 0.0
    for i in range(xs.size):
        p = _pq(ys[i], yoff, yscale)
        q = _pq(xs[i], xoff, xscale)
        r[i] = p / q
        sp += p
        sq += q
    st[SP] += sp
    st[SQ] += sq


@_strict
def _kl_term(p, q, log_ratio):
    """P·log(P/Q) − P + Q, every term >= 0: compiled without reassociation, so the sum it joins
    cannot regroup its parts (which cancel when P ≈ Q)."""
    return p * np.float64(log_ratio) + (q - p)


@_summing
def _kl_terms(x, y, lo, hi, yoff, yscale, xoff, xscale, r, st):
    """Σ[P·log(P/Q) − P + Q] of ``[lo, hi)`` into ``st``, ``r`` holding log(P/Q)."""
    xs = x[lo:hi]
    ys = y[lo:hi]
    total = 0.0
    for i in range(xs.size):
        total += _kl_term(_pq(ys[i], yoff, yscale), _pq(xs[i], xoff, xscale), r[i])
    st[D] += total


def new_state() -> np.ndarray:
    """A pass-1 state array (slots ``N`` … ``YMAX``) before any data: zero sums, empty extremes."""
    st = np.zeros(16)
    st[XMIN] = st[YMIN] = math.inf
    st[XMAX] = st[YMAX] = -math.inf
    return st


def _native(x: np.ndarray, y: np.ndarray) -> bool:
    """The kernels take float32 or float64 pairs of one dtype as they are; others go through a buffer."""
    return x.dtype == y.dtype and x.dtype in (np.float32, np.float64)


def _work(x: np.ndarray, y: np.ndarray):
    """The buffer dtype of a pair the kernels do not take as it is: float32 holds float16 exactly."""
    return np.float32 if {x.dtype, y.dtype} <= {np.dtype(np.float32), np.dtype(np.float16)} else np.float64


def pass1(x: np.ndarray, y: np.ndarray, chunk: int, cancel=None) -> dict[str, float]:
    """The sums of ``metrics._pass1`` (same keys), in one compiled walk."""
    n = x.size
    st = new_state()
    if _native(x, y):
        step = chunk * 16  # one call per 16 blocks: the cancel check stays as frequent as the numpy path's
        for start in range(0, n, step):
            if cancel is not None and start % (step * 4) == 0:
                cancel.raise_if_cancelled()
            _pass1_kernel(x, y, start, min(start + step, n), st)
    else:
        work = _work(x, y)
        xb, yb = np.empty(min(chunk, n), dtype=work), np.empty(min(chunk, n), dtype=work)
        for start in range(0, n, chunk):
            if cancel is not None and start % (chunk * 64) == 0:
                cancel.raise_if_cancelled()
            m = min(chunk, n - start)
            xb[:m] = x[start:start + m]
            yb[:m] = y[start:start + m]
            _pass1_kernel(xb, yb, 0, m, st)
    s = dict(sdd=st[SDD], sad=st[SAD], mad=st[MAD], srel=st[SREL], mrel=st[MREL], xmin=st[XMIN],
             xmax=st[XMAX], ymin=st[YMIN], ymax=st[YMAX], sx=st[SUM_X], sy=st[SUM_Y],
             vx=st[M2_X] / n, vy=st[M2_Y] / n)
    # As metrics._pass1: Σx² = M2 + n·mean², Σxy = (Σx² + Σy² − Σ(x−y)²) / 2.
    s["sxx"] = st[M2_X] + n * st[MEAN_X] * st[MEAN_X]
    s["syy"] = st[M2_Y] + n * st[MEAN_Y] * st[MEAN_Y]
    s["sxy"] = (s["sxx"] + s["syy"] - s["sdd"]) / 2
    return {key: float(value) for key, value in s.items()}


def kl_sums(x: np.ndarray, y: np.ndarray, yoff: float, yscale: float, xoff: float, xscale: float,
            chunk: int) -> tuple[float, float, float]:
    """(ΣP, ΣQ, Σ[P·log(P/Q) − P + Q]) of ``metrics._kl``, per cache block: two kernels and one np.log."""
    n = x.size
    st = np.zeros(3)
    size = min(chunk, n)
    ratio = np.empty(size)  # float64: a float32 log(P/Q) moved KL by 1e-6 relative on 4 elements
    native = _native(x, y)
    if not native:
        work = _work(x, y)
        xb, yb = np.empty(size, dtype=work), np.empty(size, dtype=work)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        if native:
            xs, ys, lo, hi = x, y, start, stop
        else:
            m = stop - start
            xb[:m] = x[start:stop]
            yb[:m] = y[start:stop]
            xs, ys, lo, hi = xb, yb, 0, m
        r = ratio[:hi - lo]
        _kl_ratio(xs, ys, lo, hi, yoff, yscale, xoff, xscale, r, st)
        np.log(r, out=r)
        _kl_terms(xs, ys, lo, hi, yoff, yscale, xoff, xscale, r, st)
    return float(st[SP]), float(st[SQ]), float(st[D])


def warm_up() -> None:
    """Compile (or load from the cache) the kernels for float32 and float64 data: ``make`` runs it
    after installing, so no user's first comparison waits for the compiler."""
    for dtype in (np.float32, np.float64):
        a = np.arange(1, 40, dtype=dtype)
        pass1(a, a + 1, 16)
        kl_sums(a, a + 1, 1.0, 0.1, 2.0, 0.1, 16)
