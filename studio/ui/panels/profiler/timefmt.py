"""Times for people: nanoseconds to "12.5 ms", and ruler steps of 1, 2 or 5 units."""

from __future__ import annotations

import math

_UNITS = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")]


def nice_step(min_ns: float) -> float:
    """The smallest 1/2/5 x 10^k ns step at least ``min_ns``."""
    if min_ns <= 1:
        return 1.0
    power = 10 ** math.floor(math.log10(min_ns))
    for factor in (1, 2, 5, 10):
        if factor * power >= min_ns:
            return float(factor * power)
    return float(10 * power)


def format_duration(ns: float, step: float | None = None) -> str:
    """``ns`` in the largest unit that keeps it >= 1 (or the unit of ``step``), e.g. "1.25 ms"."""
    reference = abs(step) * 10 if step else abs(ns)  # a ruler keeps one unit: the step's, one notch up
    for scale, unit in _UNITS:
        if reference >= scale or unit == "ns":
            value = ns / scale
            if step:
                decimals = max(0, min(6, -math.floor(math.log10(step / scale)) if step / scale < 1 else 0))
            else:
                decimals = 0 if unit == "ns" else (3 if abs(value) < 10 else 2 if abs(value) < 100 else 1)
            return f"{value:.{decimals}f} {unit}"
    return f"{ns:.0f} ns"
