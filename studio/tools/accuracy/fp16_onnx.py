"""How the ``fp16`` target of reduce and precision (:mod:`studio.ops.fp16_target`: the model
converted to a real FP16 ONNX by Studio's converter, ``--output-type FP16`` with ``--keep-fp32`` of
a kept set, and run with ONNX Runtime, every op's output dumped) is read and judged.

ONNX Runtime's CPU provider computes most FP16 ops in FP32 behind casts and drops the cast pairs
between them, so an op reads its producer's unrounded value and a network output can stay finite
where a device overflows. The per-op dump still holds each op's FP16 output (the value a device
would hand on), so the target is judged on the dump: every dumped tensor that turns non-finite
where the FP32 one is finite is a failure, wherever it is (:func:`inner_failures`).

Tensors come back under the original model's names: a graph output's FP16 value is the one the
op wrote (``NAME/fp16``), not the cast back to FP32; the casts the converter inserts at FP32/FP16
boundaries (``NAME/fp16``, ``NAME/fp32``) come back under their own names, judged against ``NAME``.
"""

from __future__ import annotations

import numpy as np

BOUNDARY_SUFFIXES = ("/fp16", "/fp32")


def input_shape(feeds: dict[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    """The input shapes the arrays fix (the converter needs every dim sized), as a structure
    ``{name: dims}``: never joined into one string, since a name may hold ``;`` or ``:``
    (tf2onnx's ``model_1/conv/BiasAdd;model_1/conv/Conv2D:0``)."""
    return {name: tuple(int(d) for d in array.shape) for name, array in feeds.items()}


def original_names(model, dumped: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A converted model's dump under the original names: an op output renamed ``NAME/fp16`` by
    the converter (a graph output: ``NAME`` is then the cast back to FP32) is ``NAME``."""
    out = dict(dumped)
    for name in (o.name for o in model.graph.output):
        if f"{name}/fp16" in dumped:
            out[name] = dumped[f"{name}/fp16"]
    return out


def base_name(tensor: str) -> str:
    """The tensor a boundary cast copies (``x/fp16`` -> ``x``); other names unchanged."""
    for suffix in BOUNDARY_SUFFIXES:
        if tensor.endswith(suffix):
            return tensor[: -len(suffix)]
    return tensor


def inner_failures(golden: dict[str, np.ndarray], target: dict[str, np.ndarray], limit: int = 3,
                   masks: set[str] = frozenset()) -> dict[str, str]:
    """Dumped tensors non-finite on the target where the FP32 tensor they stand for is finite:
    {tensor: why}, at most ``limit`` of them (graph order is the dump's order). A saturated
    attention mask (a tensor of ``masks`` holding only -inf) is not a failure."""
    from studio.core.fp16_graph import saturated_mask_values

    found: dict[str, str] = {}
    for name, array in target.items():
        if base_name(name) in masks and saturated_mask_values(array):
            continue
        reference = golden.get(base_name(name))
        if reference is None or array.dtype.kind != "f" or reference.dtype.kind != "f" \
                or reference.shape != array.shape:
            continue
        fresh = int(np.count_nonzero(~np.isfinite(array) & np.isfinite(reference)))
        if fresh:
            found[name] = f"{fresh:,} value(s) non-finite on the target, finite in FP32"
            if len(found) >= limit:
                break
    return found
