"""Numbers for people: as many decimals as the size of a number earns, and SI prefixes for big counts.

``number(115727.5)`` is "115,728", not "115,727.500": a value's last digits mean nothing once it
is in the thousands. ``si(3_413_377_024)`` is "3.41 G", for counts like MACs next to the exact one.
"""

from __future__ import annotations

import math

_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def decimals_for(value: float) -> int:
    """3 decimals below 10, 2 below 100, 1 below 1,000, none from there on."""
    size = abs(value)
    return 3 if size < 10 else 2 if size < 100 else 1 if size < 1000 else 0


def number(value: float) -> str:
    """``value`` with thousands separators and :func:`decimals_for` decimals ("—" for NaN)."""
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:,.{decimals_for(value)}f}"


def si(value: float, unit: str = "") -> str:
    """``value`` with an SI prefix and three significant digits: 3.41 G, 12.5 M, 950 (then ``unit``)."""
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            scaled = value / scale
            return f"{scaled:.{max(0, 2 - int(math.floor(math.log10(abs(scaled)))))}f} {prefix}{unit}"
    return f"{value:g} {unit}".rstrip() if unit else f"{value:g}"
