"""One benchmark's numbers, whichever tool measured them.

The JSON form has the same keys for every tool (``mean_ms``, ``p50_ms``, ``p99_ms``, ``min_ms``,
``max_ms``, ``throughput``) so a local ONNX Runtime run and an NPU run line up. A tool that does
not report a figure leaves it ``None`` (``null`` in JSON, "n/a" in text) and says why in
``notes``; a figure Studio computed rather than read (msame's throughput) is named there too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from studio.core.serial import from_json, to_json

KEYS = ("mean_ms", "p50_ms", "p99_ms", "min_ms", "max_ms", "throughput")


@dataclass
class LatencyStats:
    """min / max / mean / median / p99 of one measured quantity (milliseconds)."""

    mean: float | None = None
    median: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, values_ms: list[float]) -> LatencyStats:
        """Statistics of raw samples (linear-interpolated percentiles, as numpy computes them)."""
        lat = np.asarray(values_ms, dtype=np.float64)
        if not lat.size:
            return cls()
        return cls(float(lat.mean()), float(np.percentile(lat, 50)), float(np.percentile(lat, 99)),
                   float(lat.min()), float(lat.max()))


@dataclass
class BenchResult:
    """A benchmark of one model with one tool, here or on a host."""

    tool: str  # "onnxruntime", "msame", "ais_bench"
    model: str
    where: str = "local"  # "local" or the host's name
    device: str = ""
    loops: int = 0
    warmup: int = 0
    batch: int = 1
    compute: LatencyStats = field(default_factory=LatencyStats)
    throughput: float | None = None  # inferences (samples) per second
    h2d: LatencyStats | None = None  # host-to-device copy (ais_bench --display_all_summary)
    d2h: LatencyStats | None = None
    latencies_ms: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the user should act on (a cast input, a wrong shape)
    command: str = ""
    folder: object = None  # where write_bench_folder put it, once written

    def __json__(self) -> dict:
        """The ``--json`` form (:func:`studio.core.serial.to_json`): the common keys first, then the details."""
        c = self.compute
        data = {"mean_ms": c.mean, "p50_ms": c.median, "p99_ms": c.p99, "min_ms": c.min, "max_ms": c.max,
                "throughput": self.throughput, "tool": self.tool, "model": self.model, "where": self.where,
                "device": self.device, "loops": self.loops, "warmup": self.warmup, "batch": self.batch}
        for name, stats in (("h2d", self.h2d), ("d2h", self.d2h)):
            if stats is not None:
                data[f"{name}_ms"] = stats
        if self.latencies_ms:
            data["latencies_ms"] = list(self.latencies_ms)
        data["notes"] = list(self.notes)
        if self.warnings:
            data["warnings"] = list(self.warnings)
        if self.command:
            data["command"] = self.command
        return data

    @classmethod
    def __from_json__(cls, data: dict) -> BenchResult:
        """The result a ``--json`` output or a benchmark folder's summary holds (not its folder)."""
        compute = LatencyStats(*(data.get(key) for key in ("mean_ms", "p50_ms", "p99_ms", "min_ms", "max_ms")))
        return cls(data["tool"], data["model"], data.get("where", "local"), data.get("device", ""),
                   data.get("loops", 0), data.get("warmup", 0), data.get("batch", 1), compute, data.get("throughput"),
                   from_json(LatencyStats | None, data.get("h2d_ms")), from_json(LatencyStats | None, data.get("d2h_ms")),
                   list(data.get("latencies_ms", [])), list(data.get("notes", [])), list(data.get("warnings", [])),
                   data.get("command", ""))


    def facts(self) -> dict[str, str]:
        """Label -> text, for the profiler's Summary next to a profile's own facts."""
        c = self.compute
        out = {"benchmark": f"{self.tool} on {self.where}" + (f" (device {self.device})" if self.device else ""),
               "model": self.model,
               "loops": f"{self.loops}" + (f" (+{self.warmup} warm-ups)" if self.warmup else ""),
               "latency mean / p50 / p99": " / ".join(_ms(v) for v in (c.mean, c.median, c.p99)),
               "latency min / max": " / ".join(_ms(v) for v in (c.min, c.max)),
               "throughput": f"{self.throughput:.1f} inferences/s" if self.throughput is not None else "n/a"}
        for name, stats in (("host to device", self.h2d), ("device to host", self.d2h)):
            if stats is not None:
                out[f"{name} mean"] = _ms(stats.mean)
        if self.notes:
            out["notes"] = "; ".join(self.notes)
        for index, warning in enumerate(self.warnings):
            out["warning" + (f" {index + 1}" if len(self.warnings) > 1 else "")] = warning
        return out

    def report(self) -> str:
        """Human-readable lines for the CLI."""
        return "\n".join(f"{k}: {v}" for k, v in self.facts().items())


def compare_rows(base: BenchResult | dict, new: BenchResult | dict) -> list[dict]:
    """Per-figure rows of ``new`` against ``base`` (for the profiler's Compare tab); either side is a
    result or its JSON form (as a benchmark folder stores it).

    ``speedup`` is base / new for times and new / base for throughput (> 1: ``new`` is faster).
    """
    base = base if isinstance(base, dict) else to_json(base)
    new = new if isinstance(new, dict) else to_json(new)
    rows = []
    for key in KEYS:
        b, n = base.get(key), new.get(key)
        speed = None
        if b and n:
            speed = n / b if key == "throughput" else b / n
        rows.append({"figure": key, "base": b, "new": n, "speedup": speed})
    return rows


def sample_change(base: BenchResult | dict, new: BenchResult | dict):
    """The latency of ``new`` against ``base`` from their per-loop times (an
    :class:`studio.core.ab.Change`: ratio of medians with a confidence interval), or None when a side
    has fewer than two. The two ran apart (on two devices, or one after the other), so the
    interval covers the spread inside each run, not a change of load between them."""
    from studio.core import ab

    base = base if isinstance(base, dict) else to_json(base)
    new = new if isinstance(new, dict) else to_json(new)
    b, n = base.get("latencies_ms") or [], new.get("latencies_ms") or []
    if len(b) < 2 or len(n) < 2:
        return None
    return ab.compare_samples(b, n, method="per-loop times of the two benchmarks")


def _ms(value: float | None) -> str:
    return f"{value:.3f} ms" if value is not None else "n/a"
