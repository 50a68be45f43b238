"""Constant handling: lift Constant nodes to initializers, then fold what is computable offline.

Paddle and some PyTorch exports keep weights in ``Constant`` nodes instead of initializers.
Lifting them first means every later pass (Conv+BN folding, FP16, ...) sees one kind of constant;
the lifted node names are kept as the origins of the tensors, so the node mapping still credits
them to the nodes that read them.
"""

from __future__ import annotations

from studio.tools.convert.passes.context import Fusion, PassContext

# Ops whose value is not a function of their inputs, or which carry sub-graphs; and the quantisation
# markers of QDQ models: DequantizeLinear(int8 weights) is what lets ONNX Runtime (and ATC) run the
# op with integer kernels. Folded into float weights, the model silently becomes a float model with
# other numbers (a QDQ ResNet: cosine 0.963 to the original). ONNX Runtime's own folding keeps them too.
_NOT_FOLDABLE = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                 "Bernoulli", "If", "Loop", "Scan", "SequenceConstruct", "Constant",
                 "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
MAX_FOLDED_ELEMENTS = 1 << 22  # a folded tensor bigger than this (16 MiB fp32) would bloat the file


def lift_constants(ctx: PassContext) -> list[Fusion]:
    """Turn every ``Constant`` node into an initializer of the same name."""
    fusions = []
    for node in list(ctx.model.graph.node):
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
            continue
        try:
            value = _constant_value(node)
        except (ValueError, KeyError):
            continue  # sparse or unusual constant: leave it as a node
        ctx.set_constant(node.output[0], value)
        ctx.const_origins[node.output[0]] = ctx.origins.pop(node.name, [node.name])
        ctx.remove_node(node)
        ctx.lifted += 1
        fusions.append(Fusion("LiftConstants", [node.name], None, f"Constant -> initializer {node.output[0]}"))
    return fusions


def _constant_value(node):
    import numpy as np
    from onnx import helper, numpy_helper

    for attr in node.attribute:
        if attr.name == "value":
            return numpy_helper.to_array(attr.t)
        if attr.name in ("value_float", "value_int"):
            return np.array(helper.get_attribute_value(attr),
                            np.float32 if attr.name == "value_float" else np.int64)
        if attr.name in ("value_floats", "value_ints"):
            return np.array(helper.get_attribute_value(attr),
                            np.float32 if attr.name == "value_floats" else np.int64)
    raise ValueError("unsupported Constant attribute")


def fold_constants(ctx: PassContext) -> list[Fusion]:
    """Evaluate nodes whose inputs are all constants (ONNX reference evaluator) and drop them.

    ``Shape`` of a tensor whose shape inference gave static dims folds too, which turns the
    Shape -> Gather -> Concat -> Reshape chains of exported models into constants.
    """
    import numpy as np
    from onnx.reference import ReferenceEvaluator

    fusions = []
    static_shapes = _static_shapes(ctx)
    constants = set(ctx.initializer_map())
    graph_inputs = {v.name for v in ctx.model.graph.input} - constants
    for node in list(ctx.model.graph.node):
        if node.op_type in _NOT_FOLDABLE or node.domain not in ("", "ai.onnx"):
            continue
        if any(ctx.is_graph_output(o) for o in node.output):
            continue  # a graph output must stay computed by a node
        values = None
        if node.op_type == "Shape" and node.input[0] in static_shapes and len(node.attribute) == 0:
            values = [np.array(static_shapes[node.input[0]], np.int64)]
        elif node.input and all(not i or (i in constants and i not in graph_inputs) for i in node.input):
            feeds = {i: ctx.constant(i) for i in node.input if i}
            try:
                values = ReferenceEvaluator(node).run(None, feeds)
            except Exception:  # noqa: BLE001 - an op the evaluator lacks simply stays in the graph
                continue
        if values is None or any(getattr(v, "size", 0) > MAX_FOLDED_ELEMENTS for v in values):
            continue
        origins = list(ctx.origins.pop(node.name, [node.name]))
        for inp in node.input:
            origins += [o for o in ctx.const_origins.get(inp, []) if o not in origins]
        for out, value in zip(node.output, values):
            ctx.set_constant(out, np.asarray(value))
            ctx.const_origins[out] = origins
            constants.add(out)
        ctx.remove_node(node)
        fusions.append(Fusion("ConstantFolding", [node.name], None, f"{node.op_type} -> constant {node.output[0]}"))
    ctx.remove_unused_initializers()
    return fusions


def _static_shapes(ctx: PassContext) -> dict[str, list[int]]:
    shapes = {}
    for value in list(ctx.model.graph.value_info) + list(ctx.model.graph.input):
        dims = value.type.tensor_type.shape.dim
        if value.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            shapes[value.name] = [d.dim_value for d in dims]
    return shapes
