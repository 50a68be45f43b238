"""The statistics that say how badly a tensor takes INT8 (the ones msmodelslim's ``analyze`` ranks
layers by): kurtosis (heavy tails, outliers), standard deviation, the 0.1 %..99.9 % quantile range,
and the mean squared error of quantising it to 8 bits over its full range.

Weights are quantised symmetrically (int8, scale max|w| / 127) and activations over their observed
range (uint8, asymmetric), as ONNX Runtime's default static quantisation does; one outlier stretches
the range and every other value lands on few steps: the MSE shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TensorStats:
    """Distribution of one tensor and its 8-bit quantisation error."""

    kurtosis: float
    std: float
    quantile_range: float   # q(99.9 %) - q(0.1 %)
    mse: float              # mean squared error of the 8-bit round trip

    __json_round__ = {"kurtosis": 4}


def kurtosis(values: np.ndarray) -> float:
    """Excess kurtosis (Fisher: 0 for a normal distribution); 0 for a constant tensor."""
    x = np.asarray(values, np.float64).ravel()
    centred = x - x.mean()
    square = centred * centred        # x ** 4 goes through numpy's generic power: squaring twice is ~10x faster
    var = float(np.mean(square))
    return float(np.mean(square * square) / var ** 2 - 3.0) if var > 0 else 0.0


def int8_symmetric_mse(values: np.ndarray) -> float:
    """MSE of rounding to int8 with scale max|x| / 127 (a weight's quantisation)."""
    x = np.asarray(values, np.float64).ravel()
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    if peak == 0.0:
        return 0.0
    scale = peak / 127.0
    return float(np.mean((np.clip(np.round(x / scale), -127, 127) * scale - x) ** 2))


def uint8_range_mse(values: np.ndarray, low: float | None = None, high: float | None = None) -> float:
    """MSE of rounding to uint8 over [low, high] (0 always included, as ORT does; the tensor's own
    range when not given): an activation's quantisation."""
    x = np.asarray(values, np.float64).ravel()
    if not x.size:
        return 0.0
    low = min(0.0, float(x.min()) if low is None else low)
    high = max(0.0, float(x.max()) if high is None else high)
    if high == low:
        return 0.0
    scale = (high - low) / 255.0
    zero = np.round(-low / scale)
    q = np.clip(np.round(x / scale) + zero, 0, 255)
    return float(np.mean(((q - zero) * scale - x) ** 2))


def stats_of(values: np.ndarray, weight: bool) -> TensorStats:
    """The statistics of a weight (``weight``) or an activation tensor."""
    x = np.asarray(values, np.float64).ravel()
    if not x.size:
        return TensorStats(0.0, 0.0, 0.0, 0.0)
    low, high = np.quantile(x, [0.001, 0.999])
    mse = int8_symmetric_mse(x) if weight else uint8_range_mse(x)
    return TensorStats(kurtosis(x), float(x.std()), float(high - low), mse)
