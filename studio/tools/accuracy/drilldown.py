"""Single-op drill-down data: histograms of both tensors and of the error, worst elements, a 2-D slice.

Computed as a job off the GUI thread; the view only draws the small arrays returned here.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

import numpy as np

from studio.core.jobs import CancelToken, Progress
from studio.tools.accuracy.dumpset import load_locator

BINS = 64
HEAT_MAX = 256  # heat maps are reduced to at most this many pixels per side


@dataclass
class Drilldown:
    """What the drill-down view shows for one row."""

    name: str
    golden_shape: tuple[int, ...]
    target_shape: tuple[int, ...]
    edges: np.ndarray                # shared bin edges of both value histograms
    golden_hist: np.ndarray
    target_hist: np.ndarray
    error_edges: np.ndarray
    error_hist: np.ndarray           # of target - golden
    worst: list[dict] = field(default_factory=list)  # index (tuple), golden, target, abs_err, rel_err
    heat: np.ndarray | None = None   # |target - golden| over a 2-D slice (reduced)
    heat_label: str = ""


def _finite(a: np.ndarray) -> np.ndarray:
    return a[np.isfinite(a)]


def _slice_2d(err: np.ndarray) -> tuple[np.ndarray, str]:
    """The last two axes at index 0 of every leading axis, reduced by max-pooling to HEAT_MAX."""
    if err.ndim == 0:
        return err.reshape(1, 1), "scalar"
    if err.ndim == 1:
        side = int(np.ceil(np.sqrt(err.size)))
        padded = np.full(side * side, np.nan)
        padded[:err.size] = err
        plane, label = padded.reshape(side, side), f"1-D tensor folded into {side}×{side}"
    else:
        lead = (0,) * (err.ndim - 2)
        plane = err[lead]
        label = f"slice [{', '.join(['0'] * (err.ndim - 2) + [':', ':'])}] of {list(err.shape)}"
    h, w = plane.shape
    fy, fx = max(1, -(-h // HEAT_MAX)), max(1, -(-w // HEAT_MAX))
    if fy > 1 or fx > 1:
        ph, pw = -(-h // fy) * fy, -(-w // fx) * fx
        padded = np.full((ph, pw), np.nan)
        padded[:h, :w] = plane
        with np.errstate(all="ignore"):
            plane = np.nanmax(padded.reshape(ph // fy, fy, pw // fx, fx), axis=(1, 3))
        label += f", max over {fy}×{fx} blocks"
    return plane, label


def compute_drilldown(name: str, golden_file: str, target_file: str, top_k: int = 20,
                      cancel: CancelToken | None = None) -> Generator[Progress, None, Drilldown]:
    """Job: load both tensors of a row and summarise them for the view."""
    yield Progress(None, f"loading {name}")
    golden = np.asarray(load_locator(golden_file))
    target = np.asarray(load_locator(target_file))
    if cancel is not None:
        cancel.raise_if_cancelled()
    g = golden.astype(np.float64).reshape(-1)
    t = target.astype(np.float64).reshape(-1)
    both = np.concatenate([_finite(g), _finite(t)])
    lo, hi = (float(both.min()), float(both.max())) if both.size else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, BINS + 1)
    golden_hist = np.histogram(_finite(g), edges)[0]
    target_hist = np.histogram(_finite(t), edges)[0]
    yield Progress(0.5, f"errors of {name}")
    worst, heat, label = [], None, ""
    if g.size == t.size:
        with np.errstate(all="ignore"):
            err = t - g
            abs_err = np.abs(err)
        finite_err = _finite(err)
        e_lo, e_hi = (float(finite_err.min()), float(finite_err.max())) if finite_err.size else (-1.0, 1.0)
        if e_hi <= e_lo:
            e_lo, e_hi = e_lo - 0.5, e_hi + 0.5
        error_edges = np.linspace(e_lo, e_hi, BINS + 1)
        error_hist = np.histogram(finite_err, error_edges)[0]
        ranking = np.where(np.isnan(abs_err), np.inf, abs_err)  # NaN counts as the worst error
        k = min(top_k, ranking.size)
        top = np.argpartition(-ranking, k - 1)[:k] if k else np.array([], dtype=int)
        top = top[np.argsort(-ranking[top], kind="stable")]
        shape = golden.shape if golden.size == g.size else target.shape
        for flat in top:
            rel = abs_err[flat] / abs(g[flat]) if g[flat] != 0 else float("inf")
            worst.append({"index": tuple(int(i) for i in np.unravel_index(int(flat), shape)) if shape else (),
                          "golden": float(g[flat]), "target": float(t[flat]),
                          "abs_err": float(abs_err[flat]), "rel_err": float(rel)})
        heat, label = _slice_2d(abs_err.reshape(shape) if shape else abs_err.reshape(()))
    else:
        error_edges, error_hist = np.array([0.0, 1.0]), np.array([0])
        label = f"element counts differ ({g.size} vs {t.size})"
    yield Progress(1.0, f"{name} ready")
    return Drilldown(name, tuple(golden.shape), tuple(target.shape), edges, golden_hist, target_hist,
                     error_edges, error_hist, worst, heat, label)
