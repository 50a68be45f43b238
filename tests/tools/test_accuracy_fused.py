"""The compiled metric kernels against an independent float64 computation, and against the numpy path.

The kernels work in float64 element by element, so they meet a float64 reference far inside
float32 rounding (1e-9 here); the numpy fallback, float32 element-wise, meets it at 1e-5 (1e-4
for a spread under a mean a million times larger).
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from numba_helpers import run_without_numba
from studio.tools.accuracy import metrics
from studio.tools.accuracy.metrics import EPS, compare_arrays

NAMES = ("cosine", "max_abs_err", "mean_abs_err", "rmse", "max_rel_err", "mean_rel_err", "acc_rel_err",
         "rel_euclidean", "kl_div", "golden_mean", "golden_std", "target_mean", "target_std")


def reference(golden: np.ndarray, target: np.ndarray) -> dict:
    """Every metric in float64, one numpy pass each, over the pairs finite on both sides."""
    y = np.asarray(golden, dtype=np.float64).ravel()
    x = np.asarray(target, dtype=np.float64).ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    d = x - y
    ay = np.abs(y)
    rel = np.where(ay > EPS, np.abs(d) / np.where(ay > EPS, ay, 1.0), 0.0)
    nx, ny = math.sqrt(math.fsum(x * x)), math.sqrt(math.fsum(y * y))

    def normalised(v):
        lo, hi = v.min(), v.max()
        v = (v - lo) / (hi - lo) if hi > lo else v
        v = np.maximum(v, EPS)
        return v / math.fsum(v)

    p, q = normalised(y), normalised(x)
    kl = math.fsum(p * np.log(p / q))
    return {"cosine": min(math.fsum(x * y) / (nx * ny), 1.0), "max_abs_err": float(np.abs(d).max()),
            "mean_abs_err": math.fsum(np.abs(d)) / d.size, "rmse": math.sqrt(math.fsum(d * d) / d.size),
            "max_rel_err": float(rel.max()), "mean_rel_err": math.fsum(rel) / d.size, "acc_rel_err": math.fsum(rel),
            "rel_euclidean": math.sqrt(math.fsum(d * d)) / ny, "kl_div": 0.0 if abs(kl) < EPS else kl,
            "golden_mean": math.fsum(y) / y.size, "golden_std": float(np.std(y)),
            "target_mean": math.fsum(x) / x.size, "target_std": float(np.std(x))}


def _cases():
    rng = np.random.default_rng(11)
    n = 100_003  # not a multiple of any block: every tail runs
    g = rng.standard_normal(n).astype(np.float32)
    noisy = (g + rng.standard_normal(n).astype(np.float32) * np.float32(1e-3)).astype(np.float32)
    yield "float32", g, noisy
    yield "small kl", g, (g + rng.standard_normal(n).astype(np.float32) * np.float32(1e-5)).astype(np.float32)
    big = (g * np.float32(3e30)).astype(np.float32)  # squares overflow float32
    yield "large magnitudes", big, (big * np.float32(1.0001)).astype(np.float32)
    mean = (1000 + rng.standard_normal(n) * 1e-3).astype(np.float32)  # a mean 1e6 times the spread
    yield "large mean", mean, (mean + rng.standard_normal(n).astype(np.float32) * np.float32(1e-4)).astype(np.float32)
    yield "all equal", np.full(5000, 3.5, np.float32), np.full(5000, 3.5, np.float32)
    yield "equal but for one", np.full(5000, 3.5, np.float32), np.r_[np.full(4999, 3.5), 3.75].astype(np.float32)
    yield "fp16 target", g, g.astype(np.float16)
    yield "float64", g.astype(np.float64) * 1e3, noisy.astype(np.float64) * 1e3
    yield "float32 vs float64", g, noisy.astype(np.float64)
    yield "ints", np.arange(-500, 1500, dtype=np.int32), np.arange(-500, 1500, dtype=np.int64) + 1
    with_nan = noisy.copy()
    with_nan[::997] = np.nan
    with_nan[5::1999] = np.inf
    golden_nan = g.copy()
    golden_nan[::997] = np.nan
    yield "nan and inf", golden_nan, with_nan
    zeros = g.copy()
    zeros[::3] = 0  # relative error: |y| <= eps counts 0
    yield "zeros in golden", zeros, noisy


CASES = list(_cases())


@pytest.mark.parametrize(("golden", "target"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_compiled_kernels_meet_a_float64_reference(golden, target):
    if importlib.util.find_spec("numba") is None:
        pytest.skip("numba (the [fast] extra) is not installed: the numpy path is tested below")
    assert metrics.compiled() is not None, "numba is installed: the compiled kernels must load"
    m = compare_arrays(golden, target)
    want = reference(golden, target)
    for name in NAMES:
        assert getattr(m, name) == pytest.approx(want[name], rel=1e-9, abs=1e-12), name


@pytest.mark.parametrize(("golden", "target"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_numpy_fallback_agrees_with_the_compiled_kernels(golden, target, monkeypatch):
    fast = compare_arrays(golden, target)
    monkeypatch.setenv(metrics.NUMPY_ONLY_ENV, "1")
    assert metrics.compiled() is None
    slow = compare_arrays(golden, target)
    want = reference(golden, target)
    for name in NAMES:
        rel = 1e-4 if name.endswith("std") else 1e-5  # float32 moments: a mean 1e6 times the spread costs digits
        assert getattr(slow, name) == pytest.approx(want[name], rel=rel, abs=1e-9), name
        assert getattr(fast, name) == pytest.approx(getattr(slow, name), rel=rel, abs=1e-9), name
    for name in ("target_nonfinite", "golden_nonfinite", "target_only_nonfinite", "finite_pairs",
                 "golden_absmax", "target_absmax", "reason"):
        assert getattr(fast, name) == getattr(slow, name), name


def test_kernels_of_a_read_only_install_are_cached_in_the_user_cache(tmp_path):
    """A read-only install (no __pycache__ can be written beside the module; emulated, since root
    writes anywhere) caches the machine code with Studio's other caches, and comparing works."""
    if importlib.util.find_spec("numba") is None:
        pytest.skip("numba (the [fast] extra) is not installed: nothing is compiled to cache")
    home = tmp_path / "home"
    code = ("import os; real = os.access; "
            "os.access = lambda p, mode, **k: False if str(p).endswith('accuracy') and mode == os.W_OK "
            "else real(p, mode, **k); "
            "import numpy as np; from studio.tools.accuracy.metrics import compare_arrays, compiled; "
            "m = compare_arrays(np.arange(10, dtype=np.float32), np.arange(10, dtype=np.float32) + 1); "
            "print(compiled() is not None, m.max_abs_err, os.environ['NUMBA_CACHE_DIR'])")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["STUDIO_HOME"] = str(home)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "1.0", str(home / "cache" / "numba")]
    assert list((home / "cache" / "numba").rglob("fused*.nbi"))


def test_metrics_import_leaves_numba_for_the_first_comparison():
    code = ("import sys; import studio.tools.accuracy.metrics as m; before = 'numba' in sys.modules; "
            "import numpy as np; m.compare_arrays(np.ones(3, np.float32), np.ones(3, np.float32)); "
            "print(before, 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]


def test_without_numba_the_numpy_path_compares():
    code = ("import numpy as np; "
            "from studio.tools.accuracy.metrics import compare_arrays, compiled; "
            "m = compare_arrays(np.arange(10, dtype=np.float32), np.arange(10, dtype=np.float32) + 1); "
            "print(compiled() is None, m.max_abs_err, m.cosine > 0.99)")
    assert run_without_numba(code) == ["True", "1.0", "True"]
