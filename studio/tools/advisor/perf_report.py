"""The Model Performance Report: latency and throughput, time by op category, top ops,
utilisation estimates and one verdict line.

Utilisation is an estimate and says so: the model's FLOPs (from shapes) over the step time,
against the device's peak; the same for bytes against its bandwidth.
"""

from __future__ import annotations

from studio.tools.advisor.model import HIGH, MEASURED, MEDIUM, Finding


def performance(ctx, device, findings: list[Finding]) -> dict:
    """The report's ``performance`` section."""
    from studio.tools.graph.categories import CATEGORY_LABELS, category

    out: dict = {}
    ops = ctx.ops
    step = ctx.step_ms
    if ops is not None:
        out["latency_ms"] = {k: round(v, 4) for k, v in ops.latency.items()}
        out["step_source"] = ops.step_source
        out["device_ms"] = round(ops.device_ms, 4)
        out["op_time_source"] = ops.source
        if ops.profiled_step_ms and ops.step_ms and ops.profiled_step_ms != ops.step_ms:
            out["profiled_step_ms"] = round(ops.profiled_step_ms, 4)
        # Only an overhead measured with repeats (the profile's alternating rounds, with an interval)
        # is stated: the ratio of one profiled phase to one bare phase swings from -78 % to 5.7x
        # with the machine's load.
        if ops.overhead_change:
            out["profiler_overhead"] = ops.overhead if ops.overhead is None else round(ops.overhead, 4)
            out["profiler_overhead_change"] = ops.overhead_change
        out["op_time_scale"] = round(ops.scale, 6)
        out["op_time_note"] = ("self time per op: median run x runs per step, outlier runs apart"
                               + (f"; scaled by {ops.scale:.3f} to the step" if ops.scale != 1.0 else ""))
        if ops.outliers:
            out["outliers"] = [{"name": op.name, "op_type": op.op_type, "runs": op.outliers,
                                "ms": round(op.outlier_us / 1000.0, 4), "median_us": round(op.median_us, 3)}
                               for op in ops.outliers[:20]]
    if step:
        out["step_ms"] = round(step, 4)
        batch = _batch(ctx)
        out["batch"] = batch
        out["throughput_per_s"] = round((batch or 1) * 1000.0 / step, 3)
        if "step_source" not in out or not out["step_source"]:
            out["step_source"] = f"benchmark result {ctx.bench_path.name if ctx.bench_path else ''}".strip()
    if ops is not None and ops.ops:
        by_cat: dict[str, float] = {}
        for op in ops.ops:
            label = CATEGORY_LABELS.get(category(op.op_type), "Other")
            by_cat[label] = by_cat.get(label, 0.0) + op.per_step_us / 1000.0
        total = sum(by_cat.values()) or 1.0
        out["time_by_category"] = [{"category": k, "ms": round(v, 4), "share": round(v / total, 4)}
                                   for k, v in sorted(by_cat.items(), key=lambda kv: -kv[1])]
        out["top_ops"] = [{"name": op.name, "op_type": op.op_type, "ms": round(op.per_step_us / 1000.0, 4),
                           "share": round(op.per_step_us / 1000.0 / total, 4), "count_per_step":
                           round(op.count / max(1, ops.steps), 2), "median_us": round(op.median_us, 3),
                           "outliers": op.outliers} for op in ops.ops[:10]]
    points = ctx.roofline
    if points:
        flops = sum(p.flops for p in points)
        nbytes = sum(p.bytes for p in points)
        out["model_flops"] = flops
        out["model_bytes"] = nbytes
        if step and device is not None:
            out["compute_utilisation"] = round(flops / (step / 1000.0) / device.peak(None), 6)
            out["bandwidth_utilisation"] = round(nbytes / (step / 1000.0) / device.bandwidth, 6)
            out["utilisation_note"] = ("estimate: model FLOPs and no-reuse bytes from shapes over the step time, "
                                       f"against {device.name}'s peaks")
        measured = [p for p in points if p.time_us]
        if measured:
            total_t = sum(p.time_us for p in measured)
            shares: dict[str, float] = {}
            for p in measured:
                shares[p.bound] = shares.get(p.bound, 0.0) + p.time_us / total_t
            out["time_by_bound"] = {k: round(v, 4) for k, v in sorted(shares.items(), key=lambda kv: -kv[1])}
    out["verdict"] = verdict(out, findings)
    return out


def _batch(ctx) -> int | None:
    from studio.tools.advisor.rules._graph import batch_of

    return batch_of(ctx.model.main) if ctx.model is not None else None


def verdict(perf: dict, findings: list[Finding]) -> str:
    """One line: good or not, the step time, what bounds it, the biggest win — measured, or an
    estimate said to be one."""
    high = [f for f in findings if f.severity == HIGH]
    medium = [f for f in findings if f.severity == MEDIUM]
    parts = ["Needs work" if high else "Worth a look" if medium else
             "Good" if findings or perf.get("step_ms") else "No data to judge"]
    if perf.get("step_ms"):
        parts.append(f"{perf['step_ms']:.3f} ms per inference ({perf.get('throughput_per_s', 0):.1f}/s)")
    bounds = perf.get("time_by_bound")
    if bounds:
        parts.append(bound_phrase(bounds))
    measured = sorted([f for f in findings if f.gain_ms and f.gain_basis == MEASURED], key=lambda f: -f.gain_ms)
    estimated = sorted([f for f in findings if f.gain_ms and f.gain_basis != MEASURED], key=lambda f: -f.gain_ms)
    if measured:
        parts.append(f"biggest win: {measured[0].title} (saves {measured[0].gain_ms:.2f} ms per step, measured A/B)")
    elif estimated:
        parts.append(f"largest estimate: {estimated[0].title} (up to {estimated[0].gain_ms:.2f} ms per step, "
                     "not measured)")
    elif high or medium:
        parts.append(f"first: {(high or medium)[0].title}")
    return "; ".join(parts)


def bound_phrase(bounds: dict[str, float]) -> str:
    """What bounds the op time, from the measured points' shares; ops above their roof claim no bound."""
    from studio.tools.advisor.roofline import ABOVE

    above = bounds.get(ABOVE, 0.0)
    real = {k: v for k, v in bounds.items() if k != ABOVE}
    if not real or above >= 0.5:
        return f"roofline inconclusive: {above:.0%} of op time ran above the measured roofs"
    kind, share = max(real.items(), key=lambda kv: kv[1])
    return f"{share:.0%} of op time {kind}" + (f" ({above:.0%} above the roof: unclassified)" if above >= 0.005 else "")
