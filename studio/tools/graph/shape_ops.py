"""numpy evaluation of the ONNX ops that compute sizes inside a graph (see :mod:`.shape_fold`).

Each takes the input values (None for an omitted optional input) and the node's attributes and
returns the output values, following the ONNX operator definitions (opsets 7 - 21: attributes
that later opsets moved to inputs are read from either). An op not listed returns None.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def evaluate(op: str, inputs: list, attrs: dict) -> list | None:
    """The outputs of ``op`` on ``inputs``, or None when the op is not one evaluated here."""
    fn = _OPS.get(op)
    if fn is None:
        return None
    out = fn(inputs, attrs)
    return out if isinstance(out, list) else [out]


def _axes(inputs: list, attrs: dict, slot: int) -> list[int] | None:
    if len(inputs) > slot and inputs[slot] is not None:
        return [int(a) for a in np.asarray(inputs[slot]).ravel()]
    axes = attrs.get("axes")
    return [int(a) for a in axes] if axes is not None else None


def _unsqueeze(inputs, attrs):
    data, axes = inputs[0], _axes(inputs, attrs, 1)
    rank = data.ndim + len(axes)
    out = data
    for axis in sorted(a % rank for a in axes):
        out = np.expand_dims(out, axis)
    return out


def _squeeze(inputs, attrs):
    data, axes = inputs[0], _axes(inputs, attrs, 1)
    if axes is None:
        return np.squeeze(data)
    return np.squeeze(data, axis=tuple(a % data.ndim for a in axes))


def _slice(inputs, attrs):
    data = inputs[0]
    if len(inputs) > 1:  # opset 10+: starts, ends, axes, steps are inputs
        starts, ends = np.asarray(inputs[1]).ravel(), np.asarray(inputs[2]).ravel()
        axes = np.asarray(inputs[3]).ravel() if len(inputs) > 3 and inputs[3] is not None else range(len(starts))
        steps = np.asarray(inputs[4]).ravel() if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
    else:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes", range(len(starts))), [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        big = np.iinfo(np.int64).max // 2  # INT64_MAX ends mean "to the end"; python slices clamp
        index[int(axis) % data.ndim] = slice(int(np.clip(start, -big, big)), int(np.clip(end, -big, big)), int(step))
    return data[tuple(index)]


def _reshape(inputs, attrs):
    data, shape = inputs[0], [int(d) for d in np.asarray(inputs[1]).ravel()]
    if not attrs.get("allowzero", 0):
        shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return data.reshape(shape)


def _flatten(inputs, attrs):
    data = np.asarray(inputs[0])
    axis = int(attrs.get("axis", 1))
    axis = axis + data.ndim if axis < 0 else axis
    return data.reshape(int(np.prod(data.shape[:axis])), -1)


def _divide(inputs, _attrs):
    a, b = np.asarray(inputs[0]), np.asarray(inputs[1])
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return (np.trunc(a / b)).astype(np.result_type(a, b))  # ONNX integer Div truncates
    return (a / b).astype(np.result_type(a, b))


def _where(inputs, _attrs):
    return np.where(inputs[0], inputs[1], inputs[2])


def _constant_of_shape(inputs, attrs):
    from onnx import numpy_helper

    shape = tuple(int(d) for d in np.asarray(inputs[0]).ravel())
    value = attrs.get("value")
    fill = numpy_helper.to_array(value).ravel() if value is not None else np.zeros(1, np.float32)
    return np.full(shape, fill[0], fill.dtype)


def _expand(inputs, _attrs):
    data, shape = inputs[0], tuple(int(d) for d in np.asarray(inputs[1]).ravel())
    return np.broadcast_to(data, np.broadcast_shapes(data.shape, shape)).copy()


def _cast(inputs, attrs):
    from onnx import helper

    return np.asarray(inputs[0]).astype(helper.tensor_dtype_to_np_dtype(int(attrs["to"])))


def _reduce(fn: Callable) -> Callable:
    def run(inputs, attrs):
        axes = _axes(inputs, attrs, 1)
        keep = bool(attrs.get("keepdims", 1))
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return inputs[0]
            axes = list(range(inputs[0].ndim))
        return fn(inputs[0], axis=tuple(a % inputs[0].ndim for a in axes), keepdims=keep)
    return run


def _binary(fn: Callable) -> Callable:
    def run(inputs, _attrs):
        a, b = np.asarray(inputs[0]), np.asarray(inputs[1])
        out = fn(a, b)
        return out if out.dtype == np.bool_ else out.astype(np.result_type(a, b))
    return run


def _variadic(fn: Callable) -> Callable:
    def run(inputs, _attrs):
        out = np.asarray(inputs[0])
        for other in inputs[1:]:
            out = fn(out, np.asarray(other))
        return out
    return run


_OPS: dict[str, Callable] = {
    "Identity": lambda i, a: np.asarray(i[0]),
    "Cast": _cast,
    "CastLike": lambda i, a: np.asarray(i[0]).astype(np.asarray(i[1]).dtype),
    "Gather": lambda i, a: np.take(i[0], np.asarray(i[1]).astype(np.int64), axis=int(a.get("axis", 0))),
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": lambda i, a: np.concatenate([np.atleast_1d(x) for x in i if x is not None], axis=int(a["axis"])),
    "Slice": _slice,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": lambda i, a: np.transpose(i[0], a.get("perm")),
    "Expand": _expand,
    "Tile": lambda i, a: np.tile(i[0], [int(r) for r in np.asarray(i[1]).ravel()]),
    "ConstantOfShape": _constant_of_shape,
    "Range": lambda i, a: np.arange(np.asarray(i[0]).item(), np.asarray(i[1]).item(), np.asarray(i[2]).item(),
                                    dtype=np.asarray(i[0]).dtype),
    "Add": _binary(np.add), "Sub": _binary(np.subtract), "Mul": _binary(np.multiply), "Div": _divide,
    "Mod": lambda i, a: (np.fmod if a.get("fmod") else np.mod)(i[0], i[1]), "Neg": lambda i, a: -np.asarray(i[0]), "Abs": lambda i, a: np.abs(i[0]),
    "Floor": lambda i, a: np.floor(i[0]), "Ceil": lambda i, a: np.ceil(i[0]), "Sqrt": lambda i, a: np.sqrt(i[0]),
    "Equal": _binary(np.equal), "Less": _binary(np.less), "Greater": _binary(np.greater),
    "LessOrEqual": _binary(np.less_equal), "GreaterOrEqual": _binary(np.greater_equal),
    "Not": lambda i, a: np.logical_not(i[0]), "And": _binary(np.logical_and), "Or": _binary(np.logical_or),
    "Where": _where,
    "Min": _variadic(np.minimum), "Max": _variadic(np.maximum),
    "ReduceProd": _reduce(np.prod), "ReduceSum": _reduce(np.sum), "ReduceMin": _reduce(np.min),
    "ReduceMax": _reduce(np.max),
}
