"""Metric values against hand-computed cases, msaccucmp's special cases, and chunking."""

from __future__ import annotations

import math

import numpy as np
import pytest

from studio.tools.accuracy.metrics import EPS, Thresholds, compare_arrays


def test_hand_computed_values():
    y = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)   # golden
    x = np.array([1.0, 2.0, 3.0, 5.0], dtype=np.float32)   # target
    m = compare_arrays(y, x)
    assert m.cosine == pytest.approx(34 / math.sqrt(39 * 30))  # Σxy=34, Σx²=39, Σy²=30
    assert m.max_abs_err == pytest.approx(1.0)
    assert m.mean_abs_err == pytest.approx(0.25)
    assert m.rmse == pytest.approx(0.5)
    assert m.max_rel_err == pytest.approx(0.25)
    assert m.acc_rel_err == pytest.approx(0.25)
    assert m.mean_rel_err == pytest.approx(0.0625)
    assert m.rel_euclidean == pytest.approx(math.sqrt(1 / 30))
    assert (m.golden_mean, m.target_mean) == (pytest.approx(2.5), pytest.approx(2.75))
    assert m.golden_std == pytest.approx(np.std(y, dtype=np.float64))
    # KL: p from golden min-max normalised [0,1/3,2/3,1] (0 clamped to eps), q from target [0,.25,.5,1].
    p = np.maximum(np.array([0, 1 / 3, 2 / 3, 1.0]), EPS)
    q = np.maximum(np.array([0, 0.25, 0.5, 1.0]), EPS)
    p, q = p / p.sum(), q / q.sum()
    assert m.kl_div == pytest.approx(float(np.sum(p * np.log(p / q))), rel=1e-6)
    assert m.reason == ""


def test_identical_tensors_are_perfect():
    y = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    m = compare_arrays(y, y.copy())
    assert m.cosine == pytest.approx(1.0)
    assert (m.max_abs_err, m.rmse, m.rel_euclidean, m.kl_div) == (0.0, 0.0, 0.0, 0.0)
    assert not Thresholds().violations(m)


def test_zero_golden_elements_do_not_count_in_relative_errors():
    y = np.array([0.0, 2.0], dtype=np.float32)
    x = np.array([5.0, 3.0], dtype=np.float32)
    m = compare_arrays(y, x)
    assert m.max_rel_err == pytest.approx(0.5)
    assert m.acc_rel_err == pytest.approx(0.5)
    assert m.mean_rel_err == pytest.approx(0.25)


def test_both_sides_all_zero_gives_cosine_one_and_zero_distance():
    z = np.zeros(16, dtype=np.float32)
    m = compare_arrays(z, z)
    assert m.cosine == 1.0
    assert m.rel_euclidean == 0.0
    assert m.kl_div == 0.0


def test_one_side_all_zero_gives_nan_cosine_with_a_reason():
    m = compare_arrays(np.zeros(8, np.float32), np.ones(8, np.float32))
    assert math.isnan(m.cosine)
    assert "All the data is zero in golden" in m.reason
    assert m.rel_euclidean == 0.0  # msaccucmp: ‖golden‖ <= eps -> 0
    assert "cosine" in Thresholds().violations(m)


def test_constant_tensors_skip_normalisation_and_agree():
    c = np.full(100, 3.0, dtype=np.float32)
    m = compare_arrays(c, c.copy())
    assert m.cosine == pytest.approx(1.0)
    assert m.kl_div == 0.0
    assert m.golden_std == 0.0


def test_scalar_counts_as_cosine_one_with_message():
    m = compare_arrays(np.float32(2.0), np.float32(3.0))
    assert m.cosine == 1.0 and "scalar" in m.reason
    assert m.max_abs_err == pytest.approx(1.0)


def test_nan_and_inf_at_the_same_positions_fail_and_the_metrics_cover_the_finite_pairs():
    y = np.array([1.0, np.nan, np.inf, 2.0], dtype=np.float32)
    x = np.array([1.0, np.nan, np.inf, 2.5], dtype=np.float32)
    m = compare_arrays(y, x)
    assert m.max_abs_err == pytest.approx(0.5) and m.mean_abs_err == pytest.approx(0.25)  # over 2 pairs, not 4
    assert (m.target_nonfinite, m.golden_nonfinite, m.target_only_nonfinite, m.finite_pairs) == (2, 2, 0, 2)
    assert "same positions" in m.reason and "metrics over the 2 pair(s) finite on both sides" in m.reason
    assert Thresholds().violations(m)[0] == "nonfinite"


def test_nan_or_inf_only_on_target_fails_and_is_counted_as_the_targets_own():
    y = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    x = np.array([1.0, np.inf, 3.0], dtype=np.float32)
    m = compare_arrays(y, x)
    assert m.target_nonfinite == m.target_only_nonfinite == 1 and m.golden_nonfinite == 0
    assert m.max_abs_err == 0 and m.finite_pairs == 2
    assert "different positions" in m.reason and "target 1 inf" in m.reason
    assert Thresholds().violations(m) == ["nonfinite"]


def test_all_nan_on_both_sides_is_no_match():
    """Two all-NaN tensors used to count as 0 == 0: cosine 1, error 0, pass."""
    nan = np.full(1000, np.nan, np.float32)
    m = compare_arrays(nan, nan.copy())
    assert math.isnan(m.cosine) and math.isnan(m.max_abs_err) and m.finite_pairs == 0
    assert m.target_nonfinite == m.golden_nonfinite == 1000
    assert "1000 of 1000 element(s) not finite" in m.reason and "nothing measured" in m.reason
    assert Thresholds().violations(m)[:2] == ["nonfinite", "cosine"]


def test_element_count_mismatch_is_reported_not_raised():
    m = compare_arrays(np.ones(4, np.float32), np.ones(5, np.float32))
    assert math.isnan(m.cosine) and "element counts differ" in m.reason


def test_chunked_equals_one_block_and_float64_reference():
    rng = np.random.default_rng(3)
    y = rng.standard_normal(10_001).astype(np.float32)
    x = (y + rng.standard_normal(10_001).astype(np.float32) * 0.01).astype(np.float32)
    a, b = compare_arrays(y, x, chunk=1000), compare_arrays(y, x, chunk=1 << 20)
    y64, x64 = y.astype(np.float64), x.astype(np.float64)
    assert a.cosine == pytest.approx(np.sum(x64 * y64) / np.sqrt(np.sum(x64 ** 2) * np.sum(y64 ** 2)), abs=5e-8)  # float32 products
    assert a.rmse == pytest.approx(np.sqrt(np.mean((x64 - y64) ** 2)), rel=1e-7)
    for name in ("cosine", "max_abs_err", "mean_abs_err", "rmse", "max_rel_err", "acc_rel_err", "rel_euclidean",
                 "kl_div", "golden_std", "target_std"):
        assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-6, abs=1e-9), name


def test_std_survives_a_large_mean():
    rng = np.random.default_rng(5)
    y = (1000 + rng.standard_normal(50_000) * 0.01).astype(np.float32)
    m = compare_arrays(y, y.copy(), chunk=4096)
    assert m.golden_std == pytest.approx(np.std(y.astype(np.float64)), rel=1e-4)
    assert m.golden_mean == pytest.approx(np.mean(y.astype(np.float64)), rel=1e-7)


def test_float16_and_int_inputs_are_accepted():
    y = np.arange(10, dtype=np.int32)
    m = compare_arrays(y, y.astype(np.float16))
    assert m.cosine == pytest.approx(1.0) and m.max_abs_err == 0.0


def test_small_kl_keeps_its_precision():
    rng = np.random.default_rng(6)
    y = rng.standard_normal(100_000).astype(np.float32)
    x = (y + rng.standard_normal(100_000).astype(np.float32) * 0.01).astype(np.float32)
    y64, x64 = y.astype(np.float64), x.astype(np.float64)
    p = np.maximum((y64 - y64.min()) / (y64.max() - y64.min()), EPS)
    q = np.maximum((x64 - x64.min()) / (x64.max() - x64.min()), EPS)
    p, q = p / p.sum(), q / q.sum()
    exact = float(np.sum(p * np.log(p / q)))
    assert 1e-7 < exact < 1e-4
    assert compare_arrays(y, x, chunk=4096).kl_div == pytest.approx(exact, rel=1e-4)


def test_huge_finite_values_fall_back_to_float64():
    y = np.array([3e20, -1e21, 5e19, 2.0], dtype=np.float32)
    x = y * np.float32(1.001)
    m = compare_arrays(y, x)
    assert m.cosine == pytest.approx(1.0)
    assert m.max_rel_err == pytest.approx(0.001, rel=1e-3)
    assert m.reason == ""


def test_cancel_stops_a_long_comparison():
    from studio.core.errors import Cancelled
    from studio.core.jobs import CancelToken

    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        compare_arrays(np.ones(1000, np.float32), np.ones(1000, np.float32), chunk=10, cancel=token)


def test_kl_of_a_target_that_collapsed_to_zero_is_a_number():
    """A target whose values all underflowed to 0 (a real FP16 LayerNorm output) made KL's
    log1p(u) see u = -1 exactly after rounding: a math domain error instead of a result."""
    golden = np.random.default_rng(90).uniform(0.05, 0.4, 1024).astype(np.float32)  # crashed before
    target = np.zeros_like(golden)
    m = compare_arrays(golden, target)
    assert np.isfinite(m.kl_div) and m.kl_div > 0
