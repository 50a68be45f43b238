"""msprobe's six tensor metrics: the compiled one-walk kernel and the numpy fallback, both against msprobe.

msprobe's own metric functions (mindstudio-probe, a test dependency) are called in this process on
the same arrays, after its own inf/NaN handling: each cell of both paths must equal theirs to 1e-6,
and the two paths must agree with each other (counts and maxima exactly).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from numba_helpers import run_without_numba
from studio.tools.accuracy import msprobe_metrics
from studio.tools.accuracy.metrics import NUMPY_ONLY_ENV
from studio.tools.accuracy.msprobe_metrics import COLUMNS, tensor_metrics

HAVE_NUMBA = importlib.util.find_spec("numba") is not None


def _near_threshold(rng) -> tuple[np.ndarray, np.ndarray]:
    """Targets 0.5 % off their golden value: for about one in a thousand, whether the relative error
    is taken in float32 or float64 changes which side of 0.005 it falls (checked in the test)."""
    g = rng.uniform(0.5, 3e4, 200_000).astype(np.float32)
    return (g.astype(np.float64) * 1.005).astype(np.float32), g


def _cases():
    rng = np.random.default_rng(7)
    g = rng.standard_normal(50_000).astype(np.float32)
    t = (g * (1 + rng.standard_normal(g.size).astype(np.float32) * np.float32(2e-3))).astype(np.float32)
    yield "float32", t, g
    zeros = g.copy()
    zeros[::5] = 0  # eps added on both sides where the golden value is 0
    yield "zeros in golden", t, zeros
    t_inf, g_inf = t.copy(), g.copy()
    t_inf[::97], g_inf[::97] = np.inf, -np.inf
    t_inf[3::211], g_inf[3::211] = np.nan, np.nan
    yield "inf and nan at the same places", t_inf, g_inf
    yield "near the thresholds", *_near_threshold(rng)
    yield "float16 target", t.astype(np.float16), g
    yield "float64", t.astype(np.float64) * 1e3, g.astype(np.float64) * 1e3
    yield "float32 vs float64", t, g.astype(np.float64)
    yield "2-d", t[:40_000].reshape(200, 200), g[:40_000].reshape(200, 200)
    yield "all zero", np.zeros(300, np.float32), np.zeros(300, np.float32)
    yield "ints", np.arange(-500, 1500, dtype=np.int64) + 1, np.arange(-500, 1500, dtype=np.int64)
    yield "one element (0-d once squeezed)", np.array([2.5], np.float32), np.array([2.0], np.float32)


CASES = list(_cases())
IDS = [c[0] for c in CASES]


def _msprobe_cells(n: np.ndarray, b: np.ndarray) -> dict:
    """msprobe's own metric functions on the pair, after its own inf/NaN handling."""
    npy_compare = pytest.importorskip("msprobe.core.compare.npy_compare")
    from msprobe.core.common.const import CompareConst

    n, b = npy_compare.handle_inf_nan(n, b)
    values, _ = npy_compare.compare_ops_apply(n, b, False, "", column_names=CompareConst.ALL_COMPARE_INDEX)
    return dict(zip(CompareConst.ALL_COMPARE_INDEX, values))


def _both(n, b, monkeypatch):
    """Both paths' cells of the pair, squeezed as Studio's reader (and msprobe's) hands it over."""
    n, b = np.squeeze(n), np.squeeze(b)
    fast = tensor_metrics(n, b)
    monkeypatch.setenv(NUMPY_ONLY_ENV, "1")
    assert msprobe_metrics.compiled() is None
    slow = tensor_metrics(n, b)
    monkeypatch.delenv(NUMPY_ONLY_ENV)
    return fast, slow


def _close(mine, theirs, rel=1e-6) -> bool:
    if isinstance(mine, str) or isinstance(theirs, str):
        return str(mine) == str(theirs)
    return abs(float(mine) - float(theirs)) <= rel * max(1.0, abs(float(theirs)))


@pytest.mark.parametrize(("target", "golden"), [c[1:] for c in CASES], ids=IDS)
def test_kernel_and_fallback_equal_msprobes_metrics(target, golden, monkeypatch):
    if HAVE_NUMBA:
        assert msprobe_metrics.compiled() is not None, "numba is installed: the compiled kernel must load"
    (fast, fast_notes), (slow, slow_notes) = _both(target, golden, monkeypatch)
    theirs = _msprobe_cells(np.squeeze(target), np.squeeze(golden))
    for column in COLUMNS:
        assert _close(fast[column], theirs[column]), (column, fast[column], theirs[column])
        assert _close(slow[column], theirs[column]), (column, slow[column], theirs[column])
        if column in ("EucDist", "Cosine"):  # float64 sums in another order
            assert _close(fast[column], slow[column], rel=1e-12), column
        else:  # maxima and counts: exactly
            assert fast[column] == slow[column], column
    assert fast_notes == slow_notes


def test_near_threshold_case_tells_float32_from_float64_arithmetic():
    """The near-threshold case's count under 0.005 differs between float32 and float64 relative
    errors, so the test above would catch a kernel that took them in float64."""
    target, golden = _near_threshold(np.random.default_rng(7))
    r32 = np.abs((target - golden) / golden)
    r64 = np.abs((target.astype(np.float64) - golden) / golden)
    under32, under64 = np.sum(r32 < np.float32(0.005)), np.sum(r64 < 0.005)
    assert under32 != under64
    cells, _ = tensor_metrics(target, golden)
    assert cells["Five Thousandths Err Ratio"] == pytest.approx(under32 / r32.size, abs=1e-12)
    assert cells["One Thousandth Err Ratio"] == 0.0


@pytest.mark.parametrize("where", ["target", "golden"])
def test_inf_or_nan_on_one_side_only_is_na_on_both_paths(where, monkeypatch):
    rng = np.random.default_rng(1)
    golden = rng.standard_normal(10_000).astype(np.float32)
    target = golden.copy()
    (target if where == "target" else golden)[1234] = np.nan
    (fast, notes), (slow, _) = _both(target, golden, monkeypatch)
    assert fast == slow == {c: "N/A" for c in COLUMNS}
    assert notes == ["inf or NaN at different places on the two sides"]
    target[1234], golden[1234] = np.inf, np.nan  # inf against NaN: not the same kind either
    (fast, _), (slow, _) = _both(target, golden, monkeypatch)
    assert fast == slow == {c: "N/A" for c in COLUMNS}


def test_without_numba_the_numpy_path_measures(tmp_path):
    """numba cannot be imported (the [fast] extra not installed): the metrics come from numpy."""
    code = ("import numpy as np; "
            "from studio.tools.accuracy import msprobe_metrics as m; "
            "g = np.linspace(1, 2, 1000, dtype=np.float32); t = g * np.float32(1.002); "
            "cells, _ = m.tensor_metrics(t, g); "
            "print(m.compiled() is None, cells['One Thousandth Err Ratio'], cells['Five Thousandths Err Ratio'])")
    assert run_without_numba(code, timeout=120) == ["True", "0.0", "1.0"]
