"""FP16 facts about an ONNX graph that the converter and the accuracy tools must agree on.

**Attention masks.** Transformer exports mask padding and future tokens with the most negative
float32 (``torch.finfo(float32).min`` = -3.4e38, or -1e9, -1e4): ``scores + (1 - mask) * min`` or
``Where(causal, scores, min)``, then Softmax. In FP16 that constant is beyond the range (-65504)
and becomes -inf; so do the masked scores. That is harmless where they only reach a Softmax (or a
max): exp(-inf) = 0 exactly as exp(-3.4e38) = 0 in FP32. It is not harmless once the -inf meets a
0 (``0 * -inf`` = NaN) — which is why converters clamp such constants to the FP16 range
(onnxconverter-common clips every constant to ±65504; ATC saturates).

:func:`mask_tensors` finds these paths: from each float constant holding a value at or below
:data:`LARGE_NEGATIVE` forward through ops that carry a mask unchanged (adds, selects, casts,
reshapes, ...) to a Softmax-style normalisation. A constant is a mask only when *every* path from
it ends there; one path into anything else (a model output, a Log, a MatMul) and it is an ordinary
constant, judged as such. The result holds the constant and every tensor on its paths up to (not
including) the normalisation's output, which is judged like any other tensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

FP16_MAX = 65504.0                     # largest finite float16
# A constant at or below this is a masking value: -2**15 is far beyond any score a Softmax sees and
# still catches a mask constant that a converter already clamped to -65504.
LARGE_NEGATIVE = -32768.0

# Ops through which a mask value reaches the Softmax unchanged (or only selected, moved, copied).
# Sub and Div carry it only in their first input (x - mask flips its sign; mask / x may too).
MASK_CARRIERS = frozenset({
    "Add", "Mul", "Where", "Cast", "CastLike", "Reshape", "Unsqueeze", "Squeeze", "Expand", "Transpose",
    "Identity", "Concat", "Slice", "Gather", "GatherElements", "Tile", "Max", "Min", "Trilu", "Flatten",
    "Sub", "Div", "Clip", "Pad", "Split"})
FIRST_INPUT_ONLY = frozenset({"Sub", "Div"})
# Where the path may end: a masked -inf becomes 0 (Softmax) or loses to a finite value (max).
NORMALISERS = frozenset({"Softmax", "ReduceMax", "ArgMax", "TopK", "MaxPool", "GlobalMaxPool"})


def clamp_to_fp16(values: np.ndarray) -> np.ndarray:
    """``values`` in float16 with finite values beyond ±65504 clamped to ±65504 (not ±inf), as
    converters store constants; inf and NaN stay what they are."""
    values = np.asarray(values)
    with np.errstate(invalid="ignore"):
        clipped = np.where(np.isfinite(values), np.clip(values, -FP16_MAX, FP16_MAX), values)
    return clipped.astype(np.float16)


def _constant_values(graph) -> dict[str, np.ndarray]:
    """Float constants of ``graph`` by tensor name: initializers, Constant and ConstantOfShape values."""
    from onnx import TensorProto, numpy_helper

    floats = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16)
    found: dict[str, np.ndarray] = {}
    for init in graph.initializer:
        if init.data_type in floats and not _external(init):
            found[init.name] = numpy_helper.to_array(init)
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or node.op_type not in ("Constant", "ConstantOfShape"):
            continue
        for attr in node.attribute:
            if attr.name == "value" and attr.t.data_type in floats and node.output:
                found[node.output[0]] = numpy_helper.to_array(attr.t)
            elif attr.name == "value_float" and node.output:
                found[node.output[0]] = np.array(attr.f, np.float32)
            elif attr.name == "value_floats" and node.output:
                found[node.output[0]] = np.asarray(attr.floats, np.float32)
    return found


def _external(init) -> bool:
    from onnx import TensorProto

    return init.data_location == TensorProto.EXTERNAL


def mask_tensors(model: onnx.ModelProto | onnx.GraphProto) -> set[str]:
    """Names of the tensors on attention-mask paths of the main graph (see the module docstring)."""
    graph = model.graph if hasattr(model, "graph") else model
    consumers: dict[str, list] = {}
    for node in graph.node:
        for slot, name in enumerate(node.input):
            if name:
                consumers.setdefault(name, []).append((node, slot))
    outputs = {o.name for o in graph.output}
    found: set[str] = set()
    with np.errstate(invalid="ignore"):
        sources = [name for name, values in _constant_values(graph).items()
                   if values.size and name in consumers and bool(np.any(values <= LARGE_NEGATIVE))]
    for source in sources:
        path = _mask_path(source, consumers, outputs)
        if path:
            found |= path
    return found


def _mask_path(source: str, consumers: dict, outputs: set[str], limit: int = 100_000) -> set[str] | None:
    """Every tensor from ``source`` forward to the normalisers, or None when a path goes elsewhere."""
    seen = {source}
    todo = [source]
    ended = False
    while todo:
        name = todo.pop()
        if name in outputs:
            return None  # the mask values themselves are a result: not harmless
        for node, slot in consumers.get(name, []):
            if node.domain not in ("", "ai.onnx"):
                return None
            if node.op_type in NORMALISERS:
                ended = True
                continue
            if node.op_type not in MASK_CARRIERS or (node.op_type in FIRST_INPUT_ONLY and slot != 0) \
                    or (node.op_type == "Where" and slot == 0):
                return None
            for out in node.output:
                if out and out not in seen:
                    if len(seen) >= limit:
                        return None
                    seen.add(out)
                    todo.append(out)
    return seen if ended else None


def saturated_mask_values(values: np.ndarray) -> bool:
    """True when every non-finite value of ``values`` is -inf: what a saturated mask holds (a NaN or
    a +inf is something else)."""
    values = np.asarray(values)
    if values.dtype.kind != "f":
        return False
    bad = values[~np.isfinite(values)]
    return bool(bad.size) and bool(np.all(np.isneginf(bad)))
