"""msprobe's six tensor metrics for one pair of dumped tensors, with msprobe's own edge cases.

``msprobe compare`` of two tensor dumps (mindstudio-probe 26.2) computes, per argument, on the
target tensor ``n`` and the golden tensor ``b`` (both squeezed: ``[4, 1]`` compares as ``[4]``,
``[1]`` as a 0-d tensor; bfloat16 read as float32):

* **Cosine**: ``n·b / (|n| |b|)`` in float64; 1.0 when both norms are 0 (below float64's eps),
  ``Nan`` when only one is; rounded to 12 decimals, and to 6 above 0.9999;
* **EucDist**: ``|n - b|₂`` in float64;
* **MaxAbsErr**: ``max |n - b|``;
* **MaxRelativeErr**: ``max |(n - b) / b|``, computed in float32 (float64 when an input is), with
  the dtype's eps added to both sides where ``b`` is 0;
* **One Thousandth / Five Thousandths Err Ratio**: the share of elements whose relative error
  (as above) is under 0.001 / 0.005.

Before that, a chain of checks decides what can be computed: an empty target tensor gives
``unsupported`` everywhere, shapes that differ ``shape unmatched``, infinities or NaNs at
different places ``N/A`` (at the same places they count as 0); a 0-d tensor has only MaxAbsErr
and MaxRelativeErr (the others ``unsupported``), and so does a 1-element one for Cosine. A
dtype that differs is noted and the metrics computed anyway. The cells are exactly msprobe's:
a float or one of its markers.

Where numba imports (the ``[fast]`` extra), a tensor of one dimension or more is measured by one
compiled walk over both tensors (:mod:`studio.tools.accuracy.msprobe_fused`) with the same
arithmetic; the numpy code below is the fallback (and what ``STUDIO_METRICS_NUMPY=1`` runs).
"""

from __future__ import annotations

import numpy as np

from studio.core.compiled import CompiledKernels
from studio.tools.accuracy.metrics import NUMPY_ONLY_ENV

COLUMNS = ("Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
           "Five Thousandths Err Ratio")
UNSUPPORTED, SHAPE_UNMATCHED, NAN, N_A = "unsupported", "shape unmatched", "Nan", "N/A"
_FLOAT_EPS = np.finfo(float).eps
_FLOAT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.longdouble))


def tensor_metrics(target: np.ndarray, golden: np.ndarray) -> tuple[dict[str, float | str], list[str]]:
    """The six cells (by :data:`COLUMNS`) for a pair of squeezed tensors, and the notes on what was not computed."""
    n, b = target, golden
    if n.size == 0:
        return _all(UNSUPPORTED), ["empty tensor"]
    if n.shape != b.shape:
        return _all(SHAPE_UNMATCHED), [f"shapes differ once squeezed: {list(n.shape)} target, {list(b.shape)} golden"]
    notes = []
    kernel = compiled()
    if n.shape and kernel is not None:
        return _fused_cells(kernel, n, b, notes)
    if not n.shape:
        notes.append("0-d tensor: only MaxAbsErr and MaxRelativeErr")
    else:
        same = _zero_matching_nonfinite(n, b)
        if same is False:
            return _all(N_A), ["inf or NaN at different places on the two sides"]
        n, b = same
        _dtype_note(n, b, notes)
    cells = {"Cosine": _cosine(n, b), "EucDist": _euclidean(n, b), "MaxAbsErr": _max_abs(n, b),
             "MaxRelativeErr": _max_relative(n, b),
             "One Thousandth Err Ratio": _ratio(n, b, 0.001), "Five Thousandths Err Ratio": _ratio(n, b, 0.005)}
    return cells, notes


def _dtype_note(n: np.ndarray, b: np.ndarray, notes: list[str]) -> None:
    if n.dtype != b.dtype:
        notes.append(f"dtypes differ ({n.dtype} target, {b.dtype} golden)")


def _fused_cells(kernel, n: np.ndarray, b: np.ndarray, notes: list[str]):
    """The six cells from the compiled kernel's one walk (a tensor of at least one dimension)."""
    with np.errstate(all="ignore"):
        f = kernel.figures(n, b)
    if f["misplaced"]:
        return _all(N_A), ["inf or NaN at different places on the two sides"]
    _dtype_note(n, b, notes)
    cosine = UNSUPPORTED if n.size == 1 else _cosine_of(f["dot"], np.sqrt(f["nn"]), np.sqrt(f["bb"]))
    return {"Cosine": cosine, "EucDist": float(np.sqrt(f["dd"])), "MaxAbsErr": _cell(f["max_abs"]),
            "MaxRelativeErr": _cell(f["max_rel"]), "One Thousandth Err Ratio": _format(f["under_1"] / n.size),
            "Five Thousandths Err Ratio": _format(f["under_5"] / n.size)}, notes


# The compiled kernel (:mod:`studio.tools.accuracy.msprobe_fused`), or None: numba missing or broken,
# or ``STUDIO_METRICS_NUMPY=1`` (as for :func:`studio.tools.accuracy.metrics.compiled`). Imported on
# the first tensor pair, not with this module.
compiled = CompiledKernels("studio.tools.accuracy.msprobe_fused", NUMPY_ONLY_ENV, "msprobe tensor metrics")


def unsupported() -> dict[str, str]:
    """The cells of an argument with no tensor (a scalar, ``None``) or whose file could not be read."""
    return _all(UNSUPPORTED)


def _all(value: str) -> dict[str, str]:
    return {c: value for c in COLUMNS}


def _format(value) -> float:
    # msprobe rounds its cells to 12 decimals ('{:.12f}')
    return float(f"{value:.12f}")


def _zero_matching_nonfinite(n: np.ndarray, b: np.ndarray):
    """Infinities and NaNs at the same places count as 0 on both sides; elsewhere, False."""
    if not (np.issubdtype(n.dtype, np.inexact) or np.issubdtype(b.dtype, np.inexact)):
        return n, b
    nf, bf = n.astype(float), b.astype(float)
    n_inf, b_inf, n_nan, b_nan = np.isinf(nf), np.isinf(bf), np.isnan(nf), np.isnan(bf)
    if not (n_inf.any() or n_nan.any() or b_inf.any() or b_nan.any()):
        return n, b
    if not (np.array_equal(n_inf, b_inf) and np.array_equal(n_nan, b_nan)):
        return False
    n, b = n.copy(), b.copy()
    n[n_inf | n_nan] = 0
    b[b_inf | b_nan] = 0
    return n, b


def _flat(n: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not n.shape:  # a 0-d tensor stays as it is (booleans as floats)
        return (n.astype(float), b.astype(float)) if n.dtype == bool else (n, b)
    return n.reshape(-1).astype(float), b.reshape(-1).astype(float)


def _cosine(n: np.ndarray, b: np.ndarray):
    if n.ndim == 0 or b.ndim == 0 or n.size == 1 or b.size == 1:
        return UNSUPPORTED
    n, b = _flat(n, b)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        dot = np.dot(n, b)
        n_norm, b_norm = np.linalg.norm(n), np.linalg.norm(b)
    return _cosine_of(dot, n_norm, b_norm)


def _cosine_of(dot: float, n_norm: float, b_norm: float):
    """msprobe's cosine cell from the dot product and the two norms."""
    if n_norm <= _FLOAT_EPS and b_norm <= _FLOAT_EPS:
        return 1.0
    if n_norm <= _FLOAT_EPS or b_norm <= _FLOAT_EPS:
        return NAN
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cos = dot / (n_norm * b_norm)
    if np.isnan(cos):
        return NAN
    value = _format(cos)
    return round(value, 6) if value > 0.9999 else value


def _euclidean(n: np.ndarray, b: np.ndarray):
    if n.ndim == 0 or b.ndim == 0:
        return UNSUPPORTED
    n, b = _flat(n, b)
    return float(np.linalg.norm(n - b, ord=2))


def _max_abs(n: np.ndarray, b: np.ndarray):
    n, b = _flat(n, b)
    with np.errstate(invalid="ignore", over="ignore"):
        value = np.max(np.abs(n - b))
    return _cell(value)


def _cell(value) -> float | str:
    return NAN if np.isnan(value) else _format(value)


def relative_errors(n: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|(n - b) / b|`` as msprobe computes it (float32 at least; eps added on both sides where b is 0)."""
    if n.dtype not in _FLOAT_TYPES:
        n = n.astype(float)
    if b.dtype not in _FLOAT_TYPES:
        b = b.astype(float)
    kind = np.result_type(n, b, np.float32)
    n, b = n.astype(kind), b.astype(kind)  # copies
    zero = b == 0
    eps = np.finfo(kind).eps
    n[zero] += eps
    b[zero] += eps
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.abs(np.divide(n - b, b))


def _max_relative(n: np.ndarray, b: np.ndarray):
    return _cell(np.max(np.abs(relative_errors(n, b))))


def _ratio(n: np.ndarray, b: np.ndarray, threshold: float):
    if n.ndim == 0 or b.ndim == 0:
        return UNSUPPORTED
    errors = relative_errors(n, b)
    if not errors.size:
        return NAN
    return _format(np.sum(errors < threshold) / errors.size)
