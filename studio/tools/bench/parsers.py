"""Read what msame and ais_bench (also run as ``msit benchmark``) print.

msame (Ascend ``tools/msame``) prints one ``Inference time: 105.487ms`` line per loop, then::

    Inference average time: 105.417100 ms
    Inference average time without first time: 105.422889 ms

(some builds write ``Inference average time : 2.41 ms`` with a space before the colon). The
figure "without first time" leaves out the first, cold loop, so it is the one we report as the
mean; the per-loop lines give min / max / median / p99 when they are there.

ais_bench / msit benchmark print a summary block::

    [INFO] -----------------Performance Summary------------------
    [INFO] H2D_latency (ms): min = 0.79, max = 0.79, mean = 0.79, median = 0.79, percentile(99%) = 0.79
    [INFO] NPU_compute_time (ms): min = 59.51, max = 60.21, mean = 59.75, median = 59.73, percentile(99%) = 60.15
    [INFO] D2H_latency (ms): min = ..., percentile(99%) = ...
    [INFO] throughput 1000*batchsize.mean(1)/NPU_compute_time.mean(59.75): 16.73

The H2D/D2H lines appear with ``--display_all_summary``; with several threads only ``mean = X``
is printed; with several devices one block per device. The throughput line's wording differs
between versions (``batchsize(64)`` / ``batchsize.mean(1)``), so its value is the number after
the last colon.
"""

from __future__ import annotations

import re

from studio.core.errors import UserError
from studio.tools.bench.result import BenchResult, LatencyStats

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_MSAME_LOOP = re.compile(rf"^\s*Inference time\s*:\s*({_NUMBER})\s*ms", re.M)
_MSAME_AVG = re.compile(rf"Inference average time\s*:\s*({_NUMBER})\s*ms")
_MSAME_AVG_WARM = re.compile(rf"Inference average time without first time\s*:\s*({_NUMBER})\s*ms")
_AIS_STATS = re.compile(r"(H2D_latency|NPU_compute_time|D2H_latency)\s*\(ms\)\s*:\s*(.*)$")
_AIS_FIELD = re.compile(rf"(min|max|mean|median|percentile\((\d+(?:\.\d+)?)%\))\s*=\s*({_NUMBER})")
_AIS_SUMMARY = "Performance Summary"


def parse_msame(text: str, model: str = "", where: str = "local") -> BenchResult:
    """The numbers msame printed; UserError when it printed none (it failed or was cut short)."""
    warm = _MSAME_AVG_WARM.findall(text)
    plain = [m.group(1) for m in _MSAME_AVG.finditer(text)]
    loops = [float(v) for v in _MSAME_LOOP.findall(text)]
    if not warm and not plain:
        raise UserError("msame printed no \"Inference average time\" line", model or None,
                        "Read msame's output above: the model may have failed to load or run.")
    result = BenchResult("msame", model, where, loops=len(loops))
    if warm:
        mean = float(warm[-1])
        samples = loops[1:]
        result.warmup = 1 if loops else 0
        result.notes.append("mean without the first (cold) loop, as msame reports it")
    else:
        mean = float(plain[-1])
        samples = loops
    stats = LatencyStats.of(samples) if samples else LatencyStats()
    stats.mean = mean  # msame's own figure, not recomputed from rounded per-loop lines
    result.compute = stats
    result.latencies_ms = samples
    if not samples:
        result.notes.append("msame printed no per-loop times: p50 / p99 / min / max unknown")
    if mean > 0:
        result.throughput = 1000.0 / mean
        result.notes.append("throughput computed by Studio as 1000 / mean (batch 1)")
    return result


def parse_ais_bench(text: str, model: str = "", where: str = "local") -> list[BenchResult]:
    """One result per "Performance Summary" block (one per device); UserError when there is none."""
    blocks: list[dict] = []
    current: dict | None = None
    for line in text.splitlines():
        if _AIS_SUMMARY in line:
            current = {}
            blocks.append(current)
            continue
        if current is None:
            continue
        match = _AIS_STATS.search(line)
        if match:
            current[match.group(1)] = _stats(match.group(2))
        elif re.search(r"\bthroughput\b", line, re.I) and ":" in line:
            value = re.search(_NUMBER, line.rsplit(":", 1)[1])
            if value:
                current["throughput"] = float(value.group(0))
                current["batch"] = _batch(line)
    results = []
    for block in blocks:
        if "NPU_compute_time" not in block:
            continue
        result = BenchResult("ais_bench", model, where)
        result.compute = block["NPU_compute_time"]
        result.h2d = block.get("H2D_latency")
        result.d2h = block.get("D2H_latency")
        result.throughput = block.get("throughput")
        result.batch = block.get("batch") or 1
        if result.compute.median is None:
            result.notes.append("ais_bench printed only the mean (several threads)")
        results.append(result)
    if not results:
        raise UserError("ais_bench printed no \"NPU_compute_time (ms)\" summary", model or None,
                        "Read its output above: the model may have failed to load, or the run was cut short.")
    if len(results) > 1:
        for i, result in enumerate(results):
            result.notes.append(f"summary {i + 1} of {len(results)} (one per device)")
    return results


def _stats(fields: str) -> LatencyStats:
    stats = LatencyStats()
    for name, pct, value in _AIS_FIELD.findall(fields):
        number = float(value)
        if name == "min":
            stats.min = number
        elif name == "max":
            stats.max = number
        elif name == "mean":
            stats.mean = number
        elif name == "median":
            stats.median = number
        elif pct and float(pct) == 99.0:
            stats.p99 = number
    return stats


def _batch(line: str) -> int | None:
    match = re.search(r"batchsize(?:\.mean)?\((\d+(?:\.\d+)?)\)", line)
    return int(float(match.group(1))) if match else None
