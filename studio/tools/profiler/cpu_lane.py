"""The process's CPU % lane of a local profile, at what its counters can resolve.

The kernel counts a process's CPU time in clock ticks (``SC_CLK_TCK``, 100 a second: 10 ms). A
sample every 5 ms, as a percentage of the time since the previous one, is then 0 % or 200 % per
tick that happened to land in it: a 2-core machine's lane peaked at 385 %. So the sampler records
the cumulative CPU time, and the lane is its rate over windows of at least :data:`TICKS` ticks
(and :data:`MIN_WINDOW_S`), where one tick more or less moves the value by a tenth of a core at
most; the value is never more than 100 % per core, nor below 0.
"""

from __future__ import annotations

import os

TICKS = 10
MIN_WINDOW_S = 0.1


def clock_tick_s() -> float:
    """The kernel's CPU-time step, in seconds (10 ms where it cannot be read)."""
    try:
        return 1.0 / os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):
        return 0.01


def window_s(tick_s: float | None = None) -> float:
    """The lane's window: :data:`TICKS` clock ticks, at least :data:`MIN_WINDOW_S`."""
    return max(MIN_WINDOW_S, TICKS * (tick_s if tick_s is not None else clock_tick_s()))


def cpu_lane(samples: list[tuple[int, float]], cores: int | None = None, tick_s: float | None = None
             ) -> list[tuple[int, float]]:
    """(time ns, CPU %) points of the lane from (time ns, cumulative CPU seconds) samples: each
    point holds from its time to the next, the rate over a window of :func:`window_s` or more
    (a run shorter than one window gets one point over all of it), clipped to [0, 100 x cores]."""
    cores = cores or os.cpu_count() or 1
    width_ns = window_s(tick_s) * 1e9
    points: list[tuple[int, float]] = []
    if len(samples) < 2:
        return points
    start = 0
    for j in range(1, len(samples)):
        if samples[j][0] - samples[start][0] >= width_ns or (j == len(samples) - 1 and not points):
            (t0, c0), (t1, c1) = samples[start], samples[j]
            if t1 > t0:
                rate = (c1 - c0) / ((t1 - t0) / 1e9) * 100.0
                points.append((t0, min(100.0 * cores, max(0.0, rate))))
            start = j
    points.append((samples[-1][0], points[-1][1]))  # the last value holds to the end of the sampling
    return points
