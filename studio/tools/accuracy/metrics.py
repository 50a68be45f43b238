"""Per-tensor accuracy metrics with msaccucmp's definitions, computed in (almost) one memory pass.

``x`` is the target (NPU / FP16 / converted) tensor, ``y`` the golden one, both flattened.

=========================  ==============================================================
cosine                     ``Σxy / (‖x‖‖y‖)``, capped at 1; both all zero → 1; one → NaN (fails)
max_abs_err / mean_abs_err ``max|x−y|`` / ``mean|x−y|``
rmse                       ``sqrt(mean((x−y)²))``
max/mean/acc_rel_err       over ``|x/y − 1|`` where ``|y| > eps``, 0 elsewhere (max, mean, sum)
rel_euclidean              ``sqrt(Σ(x−y)² / Σy²)``; an all-zero golden → 0 (msaccucmp)
kl_div                     min-max normalise each side, clamp at float32 eps, normalise to
                           sum 1, ``Σ p·log(p/q)`` with p from y (golden), q from x; ``|kl| < eps`` → 0
mean / std                 of both sides (float64)
=========================  ==============================================================

Zero means all zero, not small: msaccucmp calls any tensor whose norm is below float32's eps
(1.2e-7, absolute) zero, so logits of 5e-14 against an all-zero FP16 output read "cosine 1". Here a
non-zero reference against an all-zero target has an undefined cosine (a failure) and a relative
Euclidean distance of 1: a total loss, at any scale.

NaN / inf are counted first (``target_nonfinite``, ``golden_nonfinite``, and
``target_only_nonfinite`` where only the target lost its finite value) and fail the row
(:meth:`Thresholds.violations` names ``nonfinite``); every metric is then taken over the pairs
finite on both sides (``finite_pairs``) and ``reason`` says so. Counting them as 0 (msprobe's
habit) would call two all-NaN tensors equal: cosine 1, error 0.

Speed: the data is walked twice. Pass 1 gathers every sum, min and max; pass 2 (KL) needs each
side's min and max, so it walks the data once more. Where numba imports (a dependency; imported on
the first comparison, not with this module), each pass is one compiled loop in float64
(:mod:`studio.tools.accuracy.fused`): 5.5x the memory pass ``np.add(a, b, out=c)`` over 4M-element
float32 pairs, against 12.1x for the numpy path below (12 interleaved rounds, ranges 5.0–5.9x and
11.2–12.8x), and it meets a float64 reference to 1e-9 where the numpy path meets it to 1e-5.
``STUDIO_METRICS_NUMPY=1`` forces the numpy path.

The numpy path works in cache-sized blocks. Element-wise work is done in
float32 for float32/float16 data (float64 otherwise), into buffers reused block after block. Sums
(:func:`_sum`): einsum's own SIMD loop over rows of :data:`ROW` elements (a sum of products needs
no temporary), the row sums added in float64 — as precise as numpy's pairwise summation on these
sizes (measured: 2e-9 against 2e-8 relative on 32768 squares) at half its time; KL uses a form
without cancellation (see :func:`_kl`). Clamping is done against a buffer of eps, not a scalar
(``np.maximum`` with a scalar took 4x as long as with an array, numpy 2.4). No BLAS call is made: numpy's BLAS threads fight ONNX
Runtime's spinning threads in one process (measured: 100x slower in the research notes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from studio.core.compiled import CompiledKernels
from studio.core.thresholds import DEFAULTS as LIMIT_DEFAULTS

EPS = float(np.finfo(np.float32).eps)
FP16_MAX = 65504.0
CHUNK = 1 << 16  # elements per block: the work blocks (256 KiB in float32) stay in L2; fewer, longer
                 # numpy calls (measured 11.0x the memory pass against 12.3x with 1 << 15)
ROW = 512  # elements per einsum row sum; CHUNK is a multiple of it

METRIC_NAMES = ("cosine", "max_abs_err", "mean_abs_err", "rmse", "max_rel_err", "mean_rel_err",
                "acc_rel_err", "rel_euclidean", "kl_div")


@dataclass
class Thresholds:
    """Pass limits (msit's "normal accuracy" reference, declared in :mod:`studio.core.thresholds`):
    a row passes when none is violated."""

    cosine: float = LIMIT_DEFAULTS["cosine"]
    rel_euclidean: float = LIMIT_DEFAULTS["rel_euclidean"]
    kl_div: float = LIMIT_DEFAULTS["kl_div"]
    rmse: float = LIMIT_DEFAULTS["rmse"]
    mean_rel_err: float = LIMIT_DEFAULTS["mean_rel_err"]

    @classmethod
    def of(cls, values: dict | None) -> Thresholds:
        """From a ``{name: limit}`` dict (missing names at their defaults)."""
        return cls(**{k: v for k, v in (values or {}).items() if k in LIMIT_DEFAULTS and v is not None})

    def as_dict(self) -> dict[str, float]:
        """``{name: limit}`` in print order."""
        return {name: getattr(self, name) for name in LIMIT_DEFAULTS}

    def __post_init__(self) -> None:
        from studio.core.errors import UserError

        if not (-1.0 <= self.cosine <= 1.0):  # also refuses NaN
            raise UserError(f"Cosine threshold {self.cosine} is outside -1..1", "--cosine",
                            "Give a cosine similarity between -1 and 1, e.g. --cosine 0.99.")
        for name in ("rel_euclidean", "kl_div", "rmse", "mean_rel_err"):
            value = getattr(self, name)
            if not (value >= 0):
                raise UserError(f"Threshold {name} = {value} must be >= 0", name, "Give a number >= 0.")

    def violations(self, m: Metrics) -> list[str]:
        """Names of the metrics of ``m`` that break a limit (NaN cosine counts as a break).

        Two empty tensors agree: nothing to violate.
        """
        if m.empty:
            return []
        bad = []
        if m.target_nonfinite or m.golden_nonfinite:
            bad.append("nonfinite")  # counted before any metric: an inf/NaN is never a pass
        if not (m.cosine > self.cosine):
            bad.append("cosine")
        for name in ("rel_euclidean", "kl_div", "rmse", "mean_rel_err"):
            value = getattr(m, name)
            if not math.isnan(value) and value >= getattr(self, name):
                bad.append(name)
        return bad


@dataclass
class Metrics:
    """Every metric of one tensor pair, plus the statistics the advisor and the views need."""

    size: int = 0
    cosine: float = math.nan
    max_abs_err: float = math.nan
    mean_abs_err: float = math.nan
    rmse: float = math.nan
    max_rel_err: float = math.nan
    mean_rel_err: float = math.nan
    acc_rel_err: float = math.nan
    rel_euclidean: float = math.nan
    kl_div: float = math.nan
    golden_mean: float = math.nan
    golden_std: float = math.nan
    target_mean: float = math.nan
    target_std: float = math.nan
    golden_absmax: float = math.nan
    target_absmax: float = math.nan
    target_nonfinite: int = 0
    golden_nonfinite: int = 0
    target_only_nonfinite: int = 0  # inf/NaN in the target where the golden value is finite
    finite_pairs: int | None = None  # elements finite on both sides, which the metrics cover (None: not known)
    rel_err_near_zero: dict | None = None  # how much of the relative error near-zero golden values make
    reasons: list[str] = field(default_factory=list)
    empty: bool = False  # both tensors hold no element: equal, nothing measured

    @property
    def reason(self) -> str:
        """Why some metric is NaN or special-cased (msaccucmp's CompareFailReason), or ''."""
        return "; ".join(self.reasons)


def compare_arrays(golden: np.ndarray, target: np.ndarray, chunk: int = CHUNK, cancel=None) -> Metrics:
    """All metrics of ``target`` against ``golden`` (any shapes with the same element count).

    ``cancel``: a CancelToken checked every 64 blocks, so a huge tensor can be abandoned.
    """
    y = np.ascontiguousarray(golden).reshape(-1)
    x = np.ascontiguousarray(target).reshape(-1)
    m = Metrics(size=int(y.size))
    if x.size != y.size:
        m.reasons.append(f"element counts differ: golden {y.size}, target {x.size}")
        return m
    if y.size == 0:
        m.empty = True
        m.reasons.append("This is empty data (both tensors hold 0 elements)")
        return m
    # float32 / float16 data is worked on in float32 (cache blocks of half the size of float64);
    # everything else (float64, integers) in float64, so no value loses digits.
    work = np.float32 if {x.dtype, y.dtype} <= {np.dtype(np.float32), np.dtype(np.float16)} else np.float64
    if not (np.issubdtype(x.dtype, np.number) or x.dtype == bool) or not (
            np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        m.reasons.append(f"cannot compare dtypes {y.dtype} and {x.dtype}")
        return m
    fused = compiled()
    with np.errstate(all="ignore"):  # inf - inf and friends are handled below, not warned about
        sums = fused.pass1(x, y, chunk, cancel) if fused else _pass1(x, y, work, chunk, cancel)
        if not all(math.isfinite(v) for v in sums.values()):
            if not (np.isfinite(x).all() and np.isfinite(y).all()):
                # Some element is NaN or inf: compare the finite parts when both sides agree.
                return _compare_nonfinite(x, y, m, chunk)
            if not fused:  # finite data whose squares overflow float32 (|v| > 1.8e19): redo in float64
                work = np.float64
                sums = _pass1(x, y, work, chunk, cancel)
    with np.errstate(all="ignore"):
        _finish(m, x, y, sums, work, chunk, fused)
    m.finite_pairs = int(y.size)
    return m


NUMPY_ONLY_ENV = "STUDIO_METRICS_NUMPY"  # set (to 1) to skip the compiled kernels
# The compiled kernels (:mod:`studio.tools.accuracy.fused`), or None: numba missing or broken, or
# ``STUDIO_METRICS_NUMPY=1``. Imported on the first comparison, not with this module.
compiled = CompiledKernels("studio.tools.accuracy.fused", NUMPY_ONLY_ENV, "accuracy metrics")


NEAR_ZERO = 1e-3  # "near zero": below this fraction of the golden tensor's |max|


def near_zero_share(golden: np.ndarray, target: np.ndarray) -> dict | None:
    """How much of the relative error comes from golden values near zero (|g| < 1e-3 |max g|).

    ``|t/g - 1|`` weighs an element of 1e-6 like one of 1: where the golden tensor crosses zero, a
    tiny absolute error there fails the mean relative error of a tensor whose cosine is 0.99999.
    Returns ``{"elements", "share", "below", "without"}`` (``without``: the mean relative error of
    the other elements), or None when near-zero elements make less than half of it.
    """
    y = np.asarray(golden, dtype=np.float64).reshape(-1)
    x = np.asarray(target, dtype=np.float64).reshape(-1)
    with np.errstate(all="ignore"):
        keep = np.isfinite(x) & np.isfinite(y)
        y, x = y[keep], x[keep]
        ay = np.abs(y)
        rel = np.where(ay > EPS, np.abs(x - y) / np.where(ay > EPS, ay, 1.0), 0.0)  # as the metric: 0 at |y| <= eps
        total = float(rel.sum())
        if not y.size or not total > 0:
            return None
        below = NEAR_ZERO * float(ay.max())
        near = ay < below
        share = float(rel[near].sum()) / total
    if share < 0.5:
        return None
    others = int(np.count_nonzero(~near))
    return {"elements": int(np.count_nonzero(near & (rel > 0))), "share": share, "below": below,
            "without": float(rel[~near].sum()) / others if others else 0.0}


def _pass1(x: np.ndarray, y: np.ndarray, work, chunk: int, cancel=None) -> dict[str, float]:
    """Every sum, min and max in one walk over cache-sized blocks.

    Within a block, sums are numpy's pairwise sums in the work dtype (relative error about
    log2(block) * eps); blocks accumulate in float64. The std uses each block's centred second
    moment merged with Chan et al.'s formula, so a large mean does not cancel a small spread.
    """
    n = x.size
    s = dict(sdd=0.0, sad=0.0, mad=0.0,
             srel=0.0, mrel=0.0, xmin=math.inf, xmax=-math.inf, ymin=math.inf, ymax=-math.inf)
    size = min(chunk, n)
    xb = np.empty(size, dtype=work) if x.dtype != work else None
    yb = np.empty(size, dtype=work) if y.dtype != work else None
    db, ab, tb = (np.empty(size, dtype=work) for _ in range(3))
    small = np.empty(size, dtype=bool)
    mx, my = _Moments(), _Moments()
    for start in range(0, n, chunk):
        if cancel is not None and start % (chunk * 64) == 0:
            cancel.raise_if_cancelled()
        stop = min(start + chunk, n)
        m = stop - start
        d, ay, t, tiny = db[:m], ab[:m], tb[:m], small[:m]
        xc, yc = x[start:stop], y[start:stop]
        if xb is not None:  # one cast per block, into a buffer that stays in cache
            xb[:m] = xc
            xc = xb[:m]
        if yb is not None:
            yb[:m] = yc
            yc = yb[:m]
        sx, sy = _sum(xc), _sum(yc)
        np.subtract(xc, yc, out=d)
        s["sdd"] += _sum(d, d)
        np.abs(d, out=d)
        s["sad"] += _sum(d)
        s["mad"] = max(s["mad"], float(d.max()))
        # |x/y - 1| == |x-y| / |y| where |y| > eps, else 0: divide everywhere, then zero the few
        # elements at |y| <= eps (a masked divide or copyto(where=) took 2 to 4 times as long).
        np.abs(yc, out=ay)
        np.divide(d, ay, out=d)
        if ay.min() <= EPS:
            d[np.less_equal(ay, work(EPS), out=tiny)] = 0
        s["srel"] += _sum(d)
        s["mrel"] = max(s["mrel"], float(d.max()))
        s["xmin"] = min(s["xmin"], float(xc.min()))
        s["xmax"] = max(s["xmax"], float(xc.max()))
        s["ymin"] = min(s["ymin"], float(yc.min()))
        s["ymax"] = max(s["ymax"], float(yc.max()))
        mx.add_block(xc, sx, t)
        my.add_block(yc, sy, t)
    s["sx"], s["sy"] = mx.total, my.total
    s["vx"], s["vy"] = mx.variance, my.variance
    # Σx² = M2 + n·mean² (a sum of non-negative parts, no cancellation), and
    # Σxy = (Σx² + Σy² − Σ(x−y)²) / 2: the moments already walked the data.
    s["sxx"] = mx.m2 + mx.n * mx.mean * mx.mean
    s["syy"] = my.m2 + my.n * my.mean * my.mean
    s["sxy"] = (s["sxx"] + s["syy"] - s["sdd"]) / 2
    return s


class _Moments:
    """Count, mean and centred second moment merged block by block (Chan, Golub & LeVeque)."""

    def __init__(self) -> None:
        self.n, self.mean, self.m2, self.total = 0, 0.0, 0.0, 0.0

    def add_block(self, block: np.ndarray, block_sum: float, scratch: np.ndarray) -> None:
        count = block.size
        mean = block_sum / count
        squares = _sum(block, block)
        m2 = squares - block_sum * mean
        if not m2 > 0.1 * squares:  # the mean dominates and the difference cancels: centre the block first
            np.subtract(block, block.dtype.type(mean), out=scratch)
            m2 = _sum(scratch, scratch)
        delta = mean - self.mean
        total = self.n + count
        self.m2 += m2 + delta * delta * self.n * count / total
        self.mean += delta * count / total
        self.n = total
        self.total += block_sum

    @property
    def variance(self) -> float:
        return self.m2 / self.n if self.n else math.nan


def _finish(m: Metrics, x: np.ndarray, y: np.ndarray, s: dict, work, chunk: int, fused=None) -> None:
    n = x.size
    x_zero = s["xmin"] == 0 and s["xmax"] == 0  # exactly zero: a scale, not a threshold, decides
    y_zero = s["ymin"] == 0 and s["ymax"] == 0
    sxx, syy, sxy, sdd = s["sxx"], s["syy"], s["sxy"], s["sdd"]
    if (not x_zero and sxx <= 0) or (not y_zero and syy <= 0) or (sxx + syy > 0 and abs(sxy) < 1e-6 * (sxx + syy)):
        # Squares of tiny values (|v| < 1e-19) flush to 0 in float32, and Σxy taken from
        # (Σx² + Σy² − Σ(x−y)²)/2 cancels when the sides differ in scale (a mask of -3.4e38 against
        # -65504): take the sums again, directly and scaled.
        sxx, syy, sxy, sdd = _scaled_sums(x, y, chunk)
    nx, ny = math.sqrt(sxx), math.sqrt(syy)
    if x_zero and y_zero:
        m.cosine = 1.0  # both all zero: equal
    elif x_zero or y_zero:
        # A non-zero reference against an all-zero target is a total loss, whatever its scale
        # (logits of 5e-14 are all 0 in FP16): the cosine is undefined and fails.
        m.cosine = math.nan
        side = "target" if x_zero else "golden"
        m.reasons.append(f"Cannot compare by Cosine Similarity. All the data is zero in {side}.")
    elif n == 1:
        m.cosine = 1.0
        m.reasons.append("This tensor is scalar.")
    else:
        m.cosine = min(sxy / (nx * ny), 1.0)
    m.max_abs_err = s["mad"]
    m.mean_abs_err = s["sad"] / n
    m.rmse = math.sqrt(s["sdd"] / n)
    m.max_rel_err = s["mrel"]
    m.acc_rel_err = s["srel"]
    m.mean_rel_err = s["srel"] / n
    # Relative to the reference's own size: an all-zero target loses all of a non-zero one (1.0).
    # An all-zero reference gives 0, as msaccucmp does (the undefined cosine fails such a row).
    m.rel_euclidean = 0.0 if y_zero else math.sqrt(sdd) / ny
    m.golden_mean, m.target_mean = s["sy"] / n, s["sx"] / n
    m.golden_std = math.sqrt(max(s["vy"], 0.0))
    m.target_std = math.sqrt(max(s["vx"], 0.0))
    m.golden_absmax = max(abs(s["ymin"]), abs(s["ymax"]))
    m.target_absmax = max(abs(s["xmin"]), abs(s["xmax"]))
    m.kl_div = _kl(x, y, s, work, chunk, fused)


def _scaled_sums(x: np.ndarray, y: np.ndarray, chunk: int) -> tuple[float, float, float, float]:
    """(Σx², Σy², Σxy, Σ(x−y)²) in float64 with each side divided by its |max| first (so no square
    flushes to 0 or overflows), then scaled back — the rare path of :func:`_finish`."""
    ax = float(np.max(np.abs(x))) or 1.0
    ay = float(np.max(np.abs(y))) or 1.0
    sxx = syy = sxy = sdd = 0.0
    for start in range(0, x.size, chunk):
        xc = x[start:start + chunk].astype(np.float64) / ax
        yc = y[start:start + chunk].astype(np.float64) / ay
        sxx += float(np.einsum("i,i->", xc, xc))
        syy += float(np.einsum("i,i->", yc, yc))
        sxy += float(np.einsum("i,i->", xc, yc))
        d = x[start:start + chunk].astype(np.float64) - y[start:start + chunk].astype(np.float64)
        sdd += float(np.einsum("i,i->", d, d))
    return sxx * ax * ax, syy * ay * ay, sxy * ax * ay, sdd


def _kl(x: np.ndarray, y: np.ndarray, s: dict, work, chunk: int, fused=None) -> float:
    """KL(p‖q), p from golden y, q from target x — pass 2 over the data.

    P, Q are the clamped min-max normalised values, SP = ΣP, SQ = ΣQ, p = P/SP, q = Q/SQ. The
    textbook Σ p·log(p/q) cancels two nearly equal terms when p ≈ q; instead, with
    D = Σ [P·log(P/Q) − P + Q] (every term ≥ 0) and u = (SQ − SP)/SP:

        KL = D/SP + log1p(u) − u

    so block sums (:func:`_sum`: row sums in the work dtype, float64 across rows) keep KL's relative
    precision near float32's even when KL is tiny.
    """
    yoff, yscale = _normaliser(s["ymin"], s["ymax"])
    xoff, xscale = _normaliser(s["xmin"], s["xmax"])
    if fused:
        sp, sq, d_sum = fused.kl_sums(x, y, yoff, yscale, xoff, xscale, chunk)
    else:
        sp, sq, d_sum = _kl_sums(x, y, yoff, yscale, xoff, xscale, work, chunk)
    # u from the two sums: its rounding (~1e-8) moves log1p(u) - u by about u·1e-8, far below KL
    u = (sq - sp) / sp
    # log1p(u) keeps KL's precision when the sums are close; when they are far apart (Q's mass is
    # a sliver of P's) the block sums of Q - P can round u to -1, so take log(SQ/SP) instead.
    kl = d_sum / sp + (math.log1p(u) if u > -0.5 else math.log(sq / sp)) - u
    return 0.0 if abs(kl) < EPS else kl


def _kl_sums(x: np.ndarray, y: np.ndarray, yoff: float, yscale: float, xoff: float, xscale: float, work,
             chunk: int) -> tuple[float, float, float]:
    """(ΣP, ΣQ, Σ[P·log(P/Q) − P + Q]) of :func:`_kl` with numpy, block by block."""
    sp = sq = d_sum = 0.0
    n = x.size
    p_buf = np.empty(min(chunk, n), dtype=work)
    q_buf, t_buf = np.empty_like(p_buf), np.empty_like(p_buf)
    eps_buf = np.full_like(p_buf, EPS)  # np.maximum against an array: see the module docstring
    for start in range(0, n, chunk):
        yc, xc = y[start:start + chunk], x[start:start + chunk]
        p, q, t, eps = p_buf[:yc.size], q_buf[:xc.size], t_buf[:xc.size], eps_buf[:xc.size]
        # Subtract the minimum first: v - min is exact for nearby values, v*s - min*s is not.
        # The offsets are data values (exact in the work dtype): subtracting them in the work dtype
        # rounds as float64-then-cast does, and a float64 scalar into float32 output took 5x as long.
        np.subtract(yc, work(yoff), out=p, casting="unsafe")
        p *= work(yscale)
        np.maximum(p, eps, out=p)
        np.subtract(xc, work(xoff), out=q, casting="unsafe")
        q *= work(xscale)
        np.maximum(q, eps, out=q)
        sp += _sum(p)
        sq += _sum(q)
        np.subtract(q, p, out=t)            # Q − P
        np.divide(p, q, out=q)
        np.log(q, out=q)
        q *= p                              # P·log(P/Q)
        q += t
        d_sum += _sum(q)
    return sp, sq, d_sum


def _sum(a: np.ndarray, b: np.ndarray | None = None) -> float:
    """Σa (or Σab) of a block: einsum's row sums over rows of ROW elements (its SIMD loop keeps
    several partial sums, so a row's rounding stays near eps), added up in float64."""
    k = a.size - a.size % ROW
    total = 0.0
    if k:
        rows = a[:k].reshape(-1, ROW)
        sums = np.einsum("ij->i", rows) if b is None else np.einsum("ij,ij->i", rows, b[:k].reshape(-1, ROW))
        total = float(np.add.reduce(sums, dtype=np.float64))
    if k < a.size:
        tail = a[k:].astype(np.float64)
        total += float(np.add.reduce(tail if b is None else tail * b[k:]))
    return total


def _normaliser(lo: float, hi: float) -> tuple[float, float]:
    # A constant side is not normalised (msaccucmp skips a zero range).
    return (lo, 1.0 / (hi - lo)) if hi > lo else (0.0, 1.0)


def _compare_nonfinite(x: np.ndarray, y: np.ndarray, m: Metrics, chunk: int) -> Metrics:
    """Count the inf/NaN of each side, then measure the pairs finite on both sides."""
    fx, fy = np.isfinite(x), np.isfinite(y)
    both = fx & fy
    pairs = int(np.count_nonzero(both))
    if pairs:
        inner = compare_arrays(y[both], x[both], chunk)
        inner.reasons = [r for r in inner.reasons if not r.startswith("This tensor is scalar")]
    else:
        inner = Metrics()
    inner.size, inner.finite_pairs = m.size, pairs
    inner.target_nonfinite = int(x.size - np.count_nonzero(fx))
    inner.golden_nonfinite = int(y.size - np.count_nonzero(fy))
    inner.target_only_nonfinite = int(np.count_nonzero(fy & ~fx))
    inner.target_absmax = _absmax(x, fx, inner.target_nonfinite)
    inner.golden_absmax = _absmax(y, fy, inner.golden_nonfinite)
    same = np.array_equal(fx, fy) and np.array_equal(x[~fx], y[~fy], equal_nan=True)
    bad = int(x.size - pairs)
    where = ("at the same positions with the same values" if same
             else "at different positions or with different values")
    measured = (f"metrics over the {pairs} pair(s) finite on both sides" if pairs
                else "no pair is finite on both sides: nothing measured")
    inner.reasons.insert(0, f"{bad} of {m.size} element(s) not finite (target {_nonfinite_text(x, fx)}; golden "
                            f"{_nonfinite_text(y, fy)}; {where}): {measured}")
    return inner


def _nonfinite_text(a: np.ndarray, finite: np.ndarray) -> str:
    """``3 NaN, 1 inf`` (or ``none``) for one side."""
    bad = a[~finite]
    nan = int(np.count_nonzero(np.isnan(bad)))
    parts = [f"{nan} NaN"] if nan else []
    if bad.size - nan:
        parts.append(f"{bad.size - nan} inf")
    return ", ".join(parts) or "none"


def _absmax(a: np.ndarray, finite: np.ndarray, nonfinite: int) -> float:
    """|max| of a tensor: inf when it holds ±inf, NaN only when it holds nothing but NaN."""
    if nonfinite and np.isinf(a).any():
        return math.inf
    values = a[finite]
    return float(np.abs(values).max()) if values.size else math.nan
