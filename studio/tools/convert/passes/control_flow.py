"""Fold ``If`` nodes whose condition is known once the input shapes are fixed.

Exporters guard shape-dependent code with ``If`` (PyTorch's ``if x.shape[0] == 1: squeeze``): the
condition is ``Equal(Gather(Shape(t)), 1)``. With dynamic inputs both branches are plausible; once
``--input_shape`` fixes the sizes, the branch that is never taken no longer type-checks, and ONNX
Runtime refuses the whole model ("LSTM: First input tensor must have rank 3"). ATC and graph
simplifiers resolve such conditions at compile time; so does this pass: a condition computable
from constants and static shapes is evaluated, and the ``If`` is replaced by the taken branch.
Conditions that depend on input values (a sample rate, a flag) stay as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from studio.tools.convert.passes.context import Fusion

if TYPE_CHECKING:
    import onnx

_NOT_EVALUATED = {"If", "Loop", "Scan", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                  "Multinomial", "Bernoulli"}
MAX_ELEMENTS = 1 << 12  # a condition's inputs are small index tensors; anything bigger is not folded
MAX_ROUNDS = 64


def fold_static_ifs(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[Fusion]]:
    """Inline every If (at any depth) whose condition is a compile-time constant; returns the model."""
    import onnx

    fusions: list[Fusion] = []
    for _ in range(MAX_ROUNDS):
        try:
            inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        except Exception:  # noqa: BLE001 - without shapes nothing is folded; the model stays as it was
            return model, fusions
        scope = _Scope(inferred)
        done = _fold_one(model.graph, scope)
        if done is None:
            break
        fusions.append(done)
    return model, fusions


class _Scope:
    """Everything known at compile time about the model's tensors, all sub-graphs included."""

    def __init__(self, model: onnx.ModelProto) -> None:
        from onnx import AttributeProto, numpy_helper

        self.shapes: dict[str, list[int]] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.producers: dict[str, onnx.NodeProto | None] = {}  # None: produced twice (ambiguous)
        self.cache: dict[str, np.ndarray | None] = {}

        def visit(graph) -> None:
            for value in list(graph.input) + list(graph.value_info) + list(graph.output):
                dims = value.type.tensor_type.shape.dim
                if value.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") and d.dim_value >= 0
                                                                    for d in dims):
                    self.shapes[value.name] = [d.dim_value for d in dims]
            for init in graph.initializer:
                if int(np.prod(init.dims, dtype=np.int64)) <= MAX_ELEMENTS:
                    self.constants[init.name] = numpy_helper.to_array(init)
            for node in graph.node:
                for out in node.output:
                    if out:
                        self.producers[out] = None if out in self.producers else node
                for attr in node.attribute:
                    for body in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
                        visit(body)

        visit(model.graph)

    def value(self, name: str, depth: int = 0) -> np.ndarray | None:
        """The compile-time value of ``name``, or None."""
        if name in self.constants:
            return self.constants[name]
        if name in self.cache:
            return self.cache[name]
        self.cache[name] = None  # guards against cycles while evaluating
        result = self._evaluate(name, depth) if depth < 40 else None
        self.cache[name] = result
        return result

    def _evaluate(self, name: str, depth: int) -> np.ndarray | None:
        node = self.producers.get(name)
        if node is None or node.op_type in _NOT_EVALUATED or node.domain not in ("", "ai.onnx"):
            return None
        if node.op_type == "Shape" and node.input[0] in self.shapes:
            dims = np.array(self.shapes[node.input[0]], np.int64)
            start = next((a.i for a in node.attribute if a.name == "start"), 0)
            end = next((a.i for a in node.attribute if a.name == "end"), None)
            return dims[start:end]
        if node.op_type == "Size" and node.input[0] in self.shapes:
            return np.array(int(np.prod(self.shapes[node.input[0]], dtype=np.int64)), np.int64)
        feeds = {}
        for inp in node.input:
            if not inp:
                continue
            value = self.value(inp, depth + 1)
            if value is None or value.size > MAX_ELEMENTS:
                return None
            feeds[inp] = value
        try:
            from onnx.reference import ReferenceEvaluator

            outputs = ReferenceEvaluator(node).run(None, feeds)
        except Exception:  # noqa: BLE001 - an op the evaluator lacks is simply not folded
            return None
        for out, value in zip(node.output, outputs):
            if out and out != name:
                self.cache[out] = np.asarray(value)
        return np.asarray(outputs[list(node.output).index(name)])


def _fold_one(graph, scope: _Scope) -> Fusion | None:
    """Inline the first foldable If found in ``graph`` or its bodies; None when there is none."""
    from onnx import AttributeProto

    for index, node in enumerate(graph.node):
        if node.op_type == "If" and node.domain in ("", "ai.onnx"):
            cond = scope.value(node.input[0])
            if cond is not None and cond.size == 1:
                taken = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
                branch = next(a.g for a in node.attribute if a.name == taken)
                if _inline(graph, index, node, branch):
                    return Fusion("IfFolding", [node.name], None,
                                  f"condition {node.input[0]} is {bool(cond.reshape(-1)[0])} for the fixed input "
                                  f"shapes: {taken} inlined")
        for attr in node.attribute:
            for body in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
                found = _fold_one(body, scope)
                if found is not None:
                    return found
    return None


def _inline(graph, index: int, node, branch) -> bool:
    """Replace ``graph.node[index]`` (an If) by ``branch``'s nodes; False when names would clash."""
    import onnx
    from onnx import helper

    outer = {o for n in graph.node for o in n.output} | {i.name for i in graph.initializer} | \
            {v.name for v in graph.input}
    inner = {o for n in branch.node for o in n.output if o} | {i.name for i in branch.initializer}
    produced = {o for n in branch.node for o in n.output if o}
    if inner & outer:
        return False
    rename = {}
    extra = []
    for body_out, if_out in zip(branch.output, node.output):
        if not if_out:
            continue
        if body_out.name in produced and body_out.name not in rename:
            rename[body_out.name] = if_out
        else:  # the branch passes an outer tensor (or one output twice) straight through
            extra.append(helper.make_node("Identity", [body_out.name], [if_out], name=f"{node.name}/{if_out}/pass"))
    nodes = []
    for inner_node in branch.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(inner_node)
        copy.output[:] = [rename.get(o, o) for o in copy.output]
        copy.input[:] = [rename.get(i, i) for i in copy.input]
        _rename_in_bodies(copy, rename)
        nodes.append(copy)
    graph.initializer.extend(branch.initializer)
    kept = list(graph.node)
    del graph.node[:]
    graph.node.extend(kept[:index] + nodes + extra + kept[index + 1:])
    return True


def _rename_in_bodies(node, rename: dict[str, str]) -> None:
    """Nested bodies that read a renamed branch output read the If's output instead."""
    from onnx import AttributeProto

    if not rename:
        return
    for attr in node.attribute:
        for body in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
            for inner in body.node:
                inner.input[:] = [rename.get(i, i) for i in inner.input]
                _rename_in_bodies(inner, rename)
            for out in body.output:
                if out.name in rename:
                    out.name = rename[out.name]
