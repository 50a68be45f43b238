"""The model-level roofline: FLOPs and bytes per op from shapes, one roof per device.

Per node: FLOPs are ``2 x MACs`` for Conv / ConvTranspose / MatMul / Gemm, recurrent layers,
attention and Einsum (MACs from the graph engine's :func:`studio.tools.graph.macs.node_macs`),
one per window element for pooling and per input element for reductions, and ``k x output
elements`` for element-wise ops (``k`` from :data:`OPS_PER_ELEMENT`, 1 when not listed). Ops with
no formula have no point (as unknown shapes). Bytes are
every input (weights included) plus every output, dtype-aware: a no-reuse lower bound of the
traffic. Intensity ``I = FLOPs / bytes``; the roof at ``I`` is ``min(peak, I x bandwidth)``.

The memory roof is the device's bandwidth at the op's working set when the device has a measured
curve (this computer: caches make small working sets faster, see :mod:`.microbench`), else its
one bandwidth figure. Ops that only re-label a tensor (Reshape, Flatten, Squeeze, Unsqueeze,
Identity: views in ONNX Runtime and on the NPU) move no data and are left out.

With a measured time, an op reaching at least 80 % of its roof is *compute-bound* (right of the
ridge) or *memory-bound* (left of it); below 80 % it is *latency-bound* (launch, scheduling,
poor tiling) — the rule CANN's msprof op roofline uses. An op measured more than 20 % *above*
its roof is ``above-roof``: the roof is wrong for that run (peaks measured under other load, a
device table figure too low), so no bound is claimed for it and :func:`roof_check` says by how
much. Without a time an op is only placed in its region (``compute-region`` / ``memory-region``).
"""

from __future__ import annotations

from studio.tools.advisor.devices import Device
from studio.tools.advisor.model import RooflinePoint
from studio.tools.graph.macs_formulas import known as _known
from studio.tools.graph.macs_formulas import prod as _numel

BOUND_RATIO = 0.8
ABOVE_RATIO = 1.2  # measured noise tolerated above a roof before the roof is called wrong
COMPUTE, MEMORY, LATENCY, ABOVE = "compute-bound", "memory-bound", "latency-bound", "above-roof"
DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "bfloat16": 2, "float64": 8, "double": 8, "int8": 1,
               "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "bool": 1}
# Arithmetic operations per output element of element-wise and reduction-like ops (an estimate:
# transcendental functions count as a few operations, as vector units evaluate them).
OPS_PER_ELEMENT = {"Relu": 1, "LeakyRelu": 2, "PRelu": 2, "Add": 1, "Sub": 1, "Mul": 1, "Div": 1,
                   "Sigmoid": 4, "Tanh": 4, "Softplus": 3, "Exp": 1, "Log": 1, "Sqrt": 1, "Erf": 4,
                   "Gelu": 8, "Mish": 8, "HardSwish": 4, "Clip": 1, "BatchNormalization": 2,
                   "InstanceNormalization": 5, "LayerNormalization": 5, "Softmax": 5, "Pow": 1}
_ZERO = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Constant", "Concat", "Split",
         "Slice", "Transpose", "Gather", "Cast", "Expand", "Resize", "Pad", "TransData"}
_VIEWS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Constant"}  # no data moved
_CONV_LIKE = {"Conv", "ConvTranspose", "MatMul", "Gemm", "Conv2D", "MatMulV2", "BatchMatMul", "FullyConnection"}
_ONE_PER_MAC = {"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "ReduceMean",
                "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "CumSum", "LRN", "QLinearAveragePool",
                "QLinearGlobalAveragePool", "Pooling"}


def _bytes_of(graph, name: str) -> int | None:
    tensor = graph.initializers.get(name)
    if tensor is not None:
        shape, dtype = tensor.shape, tensor.dtype
    else:
        value = graph.value(name)
        shape, dtype = value.shape, value.dtype
    if not _known(shape):
        return None
    return _numel(shape) * DTYPE_BYTES.get((dtype or "float32").lower(), 4)


def node_work(graph, index: int) -> tuple[float, float] | None:
    """(FLOPs, bytes) of one node, or None when its shapes are unknown."""
    from studio.tools.graph.macs import is_per_element, node_macs

    node = graph.nodes[index]
    outs = [o for o in node.outputs if o]
    moved = [_bytes_of(graph, n) for n in [*[i for i in node.inputs if i], *outs]]
    if not outs or any(b is None for b in moved):
        return None
    traffic = float(sum(moved))
    if node.type in _VIEWS:
        return 0.0, 0.0
    if node.type in _ZERO:
        return 0.0, traffic
    macs = node_macs(graph, index)
    if macs is None:
        return None
    if node.type in _CONV_LIKE or not is_per_element(node.type):
        # a multiply-accumulate is two operations; pooling and reductions already count their
        # window / input in node_macs (one operation each)
        return (1.0 if node.type in _ONE_PER_MAC else 2.0) * macs, traffic
    return float(macs * OPS_PER_ELEMENT.get(node.type, 1)), traffic


def classify(flops: float, nbytes: float, time_us: float | None, device: Device, dtype: str | None = None
             ) -> tuple[str, float, float, float | None, float | None]:
    """(bound, intensity, attainable FLOP/s, achieved FLOP/s, ratio) of one op on ``device``."""
    peak = device.peak(dtype)
    bandwidth = device.bandwidth_at(nbytes)
    intensity = flops / nbytes if nbytes else 0.0
    attainable = min(peak, intensity * bandwidth)
    right_of_ridge = intensity * bandwidth >= peak
    if not time_us or time_us <= 0:
        return ("compute-region" if right_of_ridge else "memory-region"), intensity, attainable, None, None
    seconds = time_us / 1e6
    if flops > 0:
        achieved = flops / seconds
        ratio = achieved / attainable if attainable else 0.0
    else:  # pure data movement: judge by bandwidth alone
        achieved = 0.0
        ratio = (nbytes / seconds) / bandwidth
    if ratio > ABOVE_RATIO:
        bound = ABOVE
    elif ratio >= BOUND_RATIO:
        bound = COMPUTE if right_of_ridge and flops > 0 else MEMORY
    else:
        bound = LATENCY
    return bound, intensity, attainable, achieved, ratio


def model_dtype(graph) -> str | None:
    """The dtype most weights have (what the compute runs in)."""
    counts: dict[str, int] = {}
    for tensor in graph.initializers.values():
        counts[tensor.dtype] = counts.get(tensor.dtype, 0) + tensor.size
    return max(counts, key=counts.get).lower() if counts else None


def roofline(graph, device: Device, times_us: dict[str, float] | None = None) -> list[RooflinePoint]:
    """One point per node whose shapes are known (nodes with no work and no traffic left out)."""
    times_us = times_us or {}
    dtype = model_dtype(graph)
    points = []
    for i, node in enumerate(graph.nodes):
        work = node_work(graph, i)
        if work is None:
            continue
        flops, nbytes = work
        if not nbytes:
            continue
        bound, intensity, attainable, achieved, ratio = classify(flops, nbytes, times_us.get(node.name), device, dtype)
        points.append(RooflinePoint(node.name, node.type, flops, nbytes, times_us.get(node.name), bound,
                                    intensity, attainable, achieved, ratio))
    return points


def roof_check(points: list[RooflinePoint]) -> dict:
    """How well the roofs hold the measured points: ``above`` (count), ``max_ratio`` (how many
    times the roof the worst op ran), ``above_us`` / ``measured_us`` (their time and all measured)."""
    measured = [p for p in points if p.time_us and p.ratio is not None]
    above = [p for p in measured if p.bound == ABOVE]
    return {"measured": len(measured), "above": len(above),
            "max_ratio": max((p.ratio for p in above), default=None),
            "above_us": sum(p.time_us for p in above), "measured_us": sum(p.time_us for p in measured)}


def fit_roofline(graph, device: Device, times_us: dict[str, float] | None):
    """Job: the roofline on ``device``, with this computer's roofs measured again when measured ops
    ran above the stored ones (the higher figures kept: peaks are best cases). Returns
    ``(points, device, check, notes)``; ``check`` is :func:`roof_check` of the final points."""
    from studio.core.jobs import Progress
    from studio.tools.advisor.devices import THIS_COMPUTER

    points = roofline(graph, device, times_us)
    check = roof_check(points)
    notes = []
    if check["above"] and device.name == THIS_COMPUTER:
        from studio.tools.advisor.devices import merge_roofs
        from studio.tools.advisor.microbench import measure_job
        from studio.tools.advisor.roof_cache import save_cached

        yield Progress(None, f"{check['above']} op(s) above this computer's roofs: measuring them again")
        first = check
        fresh, rows = yield from measure_job()
        device = merge_roofs(device, fresh)
        try:
            save_cached(device, rows)
        except OSError:
            pass  # a read-only cache folder: the figures still serve this report
        points = roofline(graph, device, times_us)
        check = roof_check(points)
        notes.append(f"{first['above']} op(s) ran above this computer's stored roofs (up to {first['max_ratio']:.1f}x): "
                     f"roofs measured again and the higher figures kept; {check['above']} op(s) above them now")
    if check["above"]:
        notes.append(f"{check['above']} of {check['measured']} measured op(s) ran above their roof on {device.name} "
                     f"(up to {check['max_ratio']:.1f}x the roof; {check['above_us'] / max(check['measured_us'], 1e-9):.0%} "
                     "of the measured op time): the roof is that much too low for this run, so no bound is claimed "
                     "for them" + (" — measure again on an idle machine (studio advise --remeasure-roof)"
                                   if device.name == THIS_COMPUTER else " — correct the device table"))
    return points, device, check, notes


def memory_roofs(device: dict) -> list[tuple[str, float]]:
    """The memory roofs to draw for a device (its JSON form): ``(label, bytes/s)``, the main
    bandwidth first, then each measured working-set size of its curve."""
    roofs = [(f"{float(device.get('bandwidth') or 0) / 1e9:,.0f} GB/s", float(device.get("bandwidth") or 0))]
    for size, bw in device.get("bandwidths") or []:
        if abs(bw - roofs[0][1]) > 0.02 * roofs[0][1]:
            roofs.append((f"{bw / 1e9:,.0f} GB/s at {size / 2**20:g} MiB", float(bw)))
    return [r for r in roofs if r[1] > 0]


def roof_caption(check: dict, device_name: str) -> str:
    """The sentence a chart shows under itself when measured ops ran above their roof."""
    if not check or not check.get("above"):
        return ""
    return (f"{check['above']} of {check['measured']} measured ops ran above their roof (up to "
            f"{check['max_ratio']:.1f}x): the {device_name} roof is up to {check['max_ratio']:.1f}x too low for "
            "this run; those ops are drawn as above-roof and no bound is claimed for them.")
