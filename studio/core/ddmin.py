"""Zeller's delta debugging (ddmin): the smallest subset of candidates that still passes a check.

Shared by the searches that keep the fewest ops in a higher precision: the FP16 search keeps ops
in FP32 (:mod:`studio.tools.accuracy.precision`), the INT8 search rolls ops back to float
(:mod:`studio.tools.quantize.search`). The check is the caller's (one model run each, usually);
the caller counts and caches them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from studio.core.jobs import CancelToken


def ddmin(items: Sequence[str], passes: Callable[[list[str]], bool], cancel: CancelToken | None = None) -> list[str]:
    """A subset of ``items`` that still ``passes``, 1-minimal under removal of chunks: drop halves,
    then quarters, ... while the rest passes. ``items`` itself is assumed to pass."""
    current, n = list(items), 2
    while len(current) >= 2:
        if cancel is not None:
            cancel.raise_if_cancelled()
        size = max(1, len(current) // n)
        chunks = [current[i:i + size] for i in range(0, len(current), size)]
        reduced = False
        for chunk in chunks:
            rest = [x for x in current if x not in chunk]
            if rest and passes(rest):
                current, n, reduced = rest, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    if len(current) == 1 and passes([]):
        return []
    return current
