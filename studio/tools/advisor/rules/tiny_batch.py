"""Tiny batch: batch 1 where most measured time is latency-bound on the roofline.

At batch 1 small layers cannot fill the device; throughput grows with the batch until ops become
compute- or memory-bound. Fires when the model's batch is 1 and at least half of the profiled
op time (the roofline's measured points) is latency-bound.
"""

from __future__ import annotations

from studio.tools.advisor.model import Finding
from studio.tools.advisor.roofline import LATENCY
from studio.tools.advisor.rules._graph import batch_of

MIN_LATENCY_SHARE = 0.5


def check(ctx) -> list[Finding]:
    if ctx.model is None or batch_of(ctx.model.main) != 1:
        return []
    measured = [p for p in ctx.roofline if p.time_us]
    total = sum(p.time_us for p in measured)
    if not total:
        return []
    latency = sum(p.time_us for p in measured if p.bound == LATENCY)
    share = latency / total
    if share < MIN_LATENCY_SHARE:
        return []
    return [Finding(
        "tiny-batch", f"Batch 1: {share:.0%} of the op time is latency-bound", "medium", "batch",
        [f"input batch dimension is 1 ({ctx.model_path.name if ctx.model_path else 'model'}, graph)",
         f"{latency / 1000:.3f} of {total / 1000:.3f} ms measured op time reaches under 80 % of its roof "
         f"(roofline, {len(measured)} measured ops)",
         "severity medium: it costs throughput rather than step latency"],
        "If the application can wait for several inputs, convert with a larger batch (studio convert "
        "--input-shape, ATC --input_shape or --dynamic_batch_size) and compare throughput.",
        None, latency / 1000.0, [p.name for p in measured if p.bound == LATENCY][:200])]
