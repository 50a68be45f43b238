"""Fold per-channel affine ops into the Conv before them (BatchNormalization, Add, Mul).

These are the rewrites ATC calls ConvBatchnormFusionPass, AABiasaddConvFusion and
ConvScaleFusionPass, and ONNX Runtime ConvBNFusion / ConvAddFusion / ConvMulFusion. They apply
only where the result is exactly the same function: constant weights, a Conv output read by that
one op alone and not a graph output, and a per-output-channel constant.
"""

from __future__ import annotations

import numpy as np

from studio.tools.convert.passes.context import Fusion, PassContext


def _single_reader(ctx: PassContext, conv, op_type: str):
    """The one node reading the Conv's output, if it is ``op_type``; else None."""
    if conv.op_type != "Conv" or conv.domain not in ("", "ai.onnx") or ctx.is_graph_output(conv.output[0]):
        return None
    readers = ctx.consumers(conv.output[0])
    if len(readers) != 1 or readers[0].op_type != op_type:
        return None
    return readers[0]


def _conv_params(ctx: PassContext, conv) -> tuple[np.ndarray, np.ndarray] | None:
    weight = ctx.constant(conv.input[1])
    if weight is None or weight.dtype.kind != "f":
        return None
    bias = ctx.constant(conv.input[2]) if len(conv.input) > 2 and conv.input[2] else np.zeros(weight.shape[0], weight.dtype)
    if bias is None:
        return None
    return weight, bias


def _store(ctx: PassContext, conv, weight: np.ndarray, bias: np.ndarray, absorbed, pass_name: str, detail: str) -> Fusion:
    """Write the new weights under fresh names (shared weights stay intact) and rewire."""
    w_name = ctx.new_constant_name(f"{conv.name}/weight_fused")
    b_name = ctx.new_constant_name(f"{conv.name}/bias_fused")
    for source in conv.input[1:3]:
        if source and source in ctx.const_origins:  # the weights' origins now travel with the new ones
            ctx.const_origins[w_name] = ctx.const_origins.get(w_name, []) + ctx.const_origins[source]
    ctx.set_constant(w_name, weight.astype(weight.dtype, copy=False))
    ctx.set_constant(b_name, bias.astype(weight.dtype, copy=False))
    del conv.input[1:]
    conv.input.extend([w_name, b_name])
    for inp in absorbed.input[1:]:
        if inp in ctx.const_origins:
            ctx.const_origins[w_name] = ctx.const_origins.get(w_name, []) + ctx.const_origins[inp]
    # The Conv now produces what the absorbed op produced (keeps graph output names intact).
    old_out = conv.output[0]
    conv.output[0] = absorbed.output[0]
    ctx.absorb(conv.name, absorbed)
    ctx.remove_node(absorbed)
    del old_out
    return Fusion(pass_name, [conv.name, absorbed.name], conv.name, detail)


def fuse_conv_bn(ctx: PassContext) -> list[Fusion]:
    """Conv + BatchNormalization (inference, constant statistics) -> Conv with new W and b."""
    fusions = []
    for conv in list(ctx.model.graph.node):
        bn = _single_reader(ctx, conv, "BatchNormalization")
        params = _conv_params(ctx, conv) if bn is not None else None
        if params is None or len(bn.output) > 1 and any(bn.output[1:]):
            continue  # training-mode BN (extra outputs) is not a constant affine map
        stats = [ctx.constant(name) for name in bn.input[1:5]]
        if any(s is None for s in stats):
            continue
        scale, beta, mean, var = (s.astype(np.float64) for s in stats)
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        weight, bias = params
        factor = scale / np.sqrt(var + eps)
        new_w = weight.astype(np.float64) * factor.reshape(-1, *([1] * (weight.ndim - 1)))
        new_b = (bias.astype(np.float64) - mean) * factor + beta
        fusions.append(_store(ctx, conv, new_w.astype(weight.dtype), new_b.astype(weight.dtype), bn,
                              "ConvBnFusion", f"{bn.name} folded into {conv.name}"))
    ctx.remove_unused_initializers()
    return fusions


def _per_channel(ctx: PassContext, node, conv, channels: int) -> np.ndarray | None:
    """The constant operand of ``node`` as a per-output-channel vector, if it is one."""
    other = node.input[1] if node.input[0] == conv.output[0] else node.input[0]
    value = ctx.constant(other)
    if value is None or value.dtype.kind != "f":
        return None
    spatial = 2  # Conv output is N, C, spatial...; broadcast shapes [C,1,1] or [1,C,1,1] or scalar
    if value.size == 1:
        return np.full(channels, value.reshape(()), np.float64)
    shape = list(value.shape)
    while shape and shape[0] == 1 and len(shape) > spatial + 1:
        shape.pop(0)
    if len(shape) >= 1 and shape[0] == channels and all(d == 1 for d in shape[1:]) and len(shape) >= spatial + 1:
        return value.reshape(channels).astype(np.float64)
    return None


def fuse_conv_add(ctx: PassContext) -> list[Fusion]:
    """Conv + Add(per-channel constant) -> Conv with the constant added to its bias."""
    def add_to_bias(weight, bias, vector):
        return weight, bias + vector

    return _fuse_per_channel(ctx, "Add", add_to_bias, "ConvAddFusion", "added to the bias of")


def fuse_conv_mul(ctx: PassContext) -> list[Fusion]:
    """Conv + Mul(per-channel constant) -> Conv with scaled weights and bias."""
    def scale(weight, bias, vector):
        return weight * vector.reshape(-1, *([1] * (weight.ndim - 1))), bias * vector

    return _fuse_per_channel(ctx, "Mul", scale, "ConvMulFusion", "scaled the weights of")


def _fuse_per_channel(ctx: PassContext, op_type: str, combine, pass_name: str, verb: str) -> list[Fusion]:
    """Fold a Conv's single ``op_type`` reader with a per-channel constant into the Conv's
    weight and bias: ``combine(weight, bias, vector) -> (weight, bias)``."""
    fusions = []
    for conv in list(ctx.model.graph.node):
        follower = _single_reader(ctx, conv, op_type)
        params = _conv_params(ctx, conv) if follower is not None else None
        if params is None:
            continue
        weight, bias = params
        vector = _per_channel(ctx, follower, conv, weight.shape[0])
        if vector is None:
            continue
        new_weight, new_bias = combine(weight, bias, vector)
        fusions.append(_store(ctx, conv, new_weight.astype(weight.dtype), new_bias.astype(weight.dtype), follower,
                              pass_name, f"{follower.name} {verb} {conv.name}"))
    ctx.remove_unused_initializers()
    return fusions


def _rank(ctx: PassContext, tensor: str) -> int | None:
    for value in list(ctx.model.graph.value_info) + list(ctx.model.graph.input):
        if value.name == tensor and value.type.tensor_type.HasField("shape"):
            return len(value.type.tensor_type.shape.dim)
    return None


def fuse_matmul_add(ctx: PassContext) -> list[Fusion]:
    """MatMul(2-D x, constant W) + Add(constant bias over the last axis) -> Gemm (ORT's MatMulAddFusion).

    Only 2-D activations qualify: Gemm is defined for matrices, and a batched MatMul must stay.
    """
    from onnx import helper

    fusions = []
    for matmul in list(ctx.model.graph.node):
        if matmul.op_type != "MatMul" or matmul.domain not in ("", "ai.onnx") or ctx.is_graph_output(matmul.output[0]):
            continue
        readers = ctx.consumers(matmul.output[0])
        if len(readers) != 1 or readers[0].op_type != "Add":
            continue
        add = readers[0]
        weight = ctx.constant(matmul.input[1])
        if weight is None or weight.ndim != 2 or weight.dtype.kind != "f" or _rank(ctx, matmul.input[0]) != 2:
            continue
        other = add.input[1] if add.input[0] == matmul.output[0] else add.input[0]
        bias = ctx.constant(other)
        if bias is None or bias.dtype != weight.dtype or bias.size not in (1, weight.shape[1]) or bias.ndim > 2 \
                or (bias.ndim == 2 and bias.shape[0] != 1):
            continue
        gemm = helper.make_node("Gemm", [matmul.input[0], matmul.input[1], other], [add.output[0]], name=matmul.name)
        index = next(i for i, n in enumerate(ctx.model.graph.node) if n.name == matmul.name)
        ctx.model.graph.node[index].CopyFrom(gemm)
        ctx.absorb(matmul.name, add)
        ctx.remove_node(add)
        fusions.append(Fusion("MatMulAddFusion", [matmul.name, add.name], matmul.name,
                              f"{matmul.name} + {add.name} -> Gemm"))
    return fusions
