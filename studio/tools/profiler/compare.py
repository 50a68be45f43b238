"""Baseline comparison: two profiles, per-op and per-API deltas sorted by impact.

A :class:`Comparison` prints its table and is truthy when the new profile is not slower in total
(like Polygraphy's comparison results). ``speedup`` is baseline total / new total per row (> 1
means the new profile is faster); rows present on one side only have ``None`` there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from studio.tools.profiler import stats
from studio.tools.profiler.model import Trace


@dataclass
class DeltaRow:
    """One op (or API) in both profiles; times in microseconds."""

    name: str
    base_count: int
    new_count: int
    base_total_us: float
    new_total_us: float
    base_avg_us: float
    new_avg_us: float
    delta_us: float
    delta_pct: float | None
    speedup: float | None


@dataclass
class Comparison:
    """Per-op and per-API deltas of ``new`` against ``base``."""

    base: str
    new: str
    ops: list[DeltaRow] = field(default_factory=list)
    apis: list[DeltaRow] = field(default_factory=list)
    base_total_us: float = 0.0
    new_total_us: float = 0.0

    def __bool__(self) -> bool:
        return self.new_total_us <= self.base_total_us

    @property
    def speedup(self) -> float | None:
        """Baseline total / new total over all slices."""
        return self.base_total_us / self.new_total_us if self.new_total_us else None

    def as_dict(self) -> dict:
        """Plain data for ``--json``."""
        return {"base": self.base, "new": self.new, "base_total_us": self.base_total_us,
                "new_total_us": self.new_total_us, "speedup": self.speedup,
                "ops": [asdict(r) for r in self.ops], "apis": [asdict(r) for r in self.apis]}

    def __str__(self) -> str:
        lines = [f"baseline: {self.base}", f"new:      {self.new}",
                 f"total: {self.base_total_us:,.1f} us -> {self.new_total_us:,.1f} us"
                 + (f" (speed-up x{self.speedup:.3f})" if self.speedup else "")]
        for title, rows in (("per op", self.ops), ("per API", self.apis)):
            if rows:
                lines.append(f"\n{title} (sorted by impact):")
                lines.append(format_rows(rows[:30]))
        return "\n".join(lines)


def compare(base: Trace, new: Trace) -> Comparison:
    """Compare two traces by slice name and by API."""
    base_ops = {s.name: (s.count, s.total_us) for s in stats.by_name(base)}
    new_ops = {s.name: (s.count, s.total_us) for s in stats.by_name(new)}
    result = Comparison(base.source, new.source, _deltas(base_ops, new_ops))
    result.base_total_us = sum(t for _, t in base_ops.values())
    result.new_total_us = sum(t for _, t in new_ops.values())
    base_api = {f"{r['level']}@{r['name']}" if r["level"] else r["name"]: (r["count"], r["total_us"])
                for r in stats.api_rows(base)}
    new_api = {f"{r['level']}@{r['name']}" if r["level"] else r["name"]: (r["count"], r["total_us"])
               for r in stats.api_rows(new)}
    if base_api and new_api:
        result.apis = _deltas(base_api, new_api)
    return result


def _deltas(base: dict[str, tuple[int, float]], new: dict[str, tuple[int, float]]) -> list[DeltaRow]:
    rows = []
    for name in set(base) | set(new):
        bc, bt = base.get(name, (0, 0.0))
        nc, nt = new.get(name, (0, 0.0))
        rows.append(DeltaRow(
            name, bc, nc, bt, nt, bt / bc if bc else 0.0, nt / nc if nc else 0.0, nt - bt,
            (nt - bt) / bt * 100.0 if bt else None, bt / nt if bt and nt else None))
    rows.sort(key=lambda r: (-abs(r.delta_us), r.name))
    return rows


def format_rows(rows: list[DeltaRow]) -> str:
    """A fixed-width text table of delta rows."""
    width = min(48, max([len(r.name) for r in rows] + [4]))
    out = [f"{'name':<{width}} {'count':>11} {'base us':>11} {'new us':>11} {'delta us':>11} {'delta %':>8} {'x':>7}"]
    for r in rows:
        name = r.name if len(r.name) <= width else r.name[:width - 1] + "…"
        pct = f"{r.delta_pct:+.1f}" if r.delta_pct is not None else "new"
        speed = f"{r.speedup:.2f}" if r.speedup else "-"
        out.append(f"{name:<{width}} {r.base_count:>5}/{r.new_count:<5} {r.base_total_us:>11.1f} "
                   f"{r.new_total_us:>11.1f} {r.delta_us:>+11.1f} {pct:>8} {speed:>7}")
    return "\n".join(out)
