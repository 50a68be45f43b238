"""Remove Identity nodes and inference-time Dropout (ONNX Runtime's EliminateIdentity/Dropout)."""

from __future__ import annotations

from studio.tools.convert.passes.context import Fusion, PassContext


def eliminate_identity(ctx: PassContext) -> list[Fusion]:
    """Readers of an Identity (or a Dropout's first output) read its input instead.

    A node whose output is a graph output is kept: removing it would rename the output.
    The removed node's origins go to its input's producer, so the mapping loses nothing.
    """
    fusions = []
    producers = {o: n for n in ctx.model.graph.node for o in n.output}
    for node in list(ctx.model.graph.node):
        if node.op_type not in ("Identity", "Dropout") or node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Dropout" and (len(node.output) > 1 and node.output[1]
                                         and ctx.consumers(node.output[1])):
            continue  # the mask is used: not a pure pass-through
        if any(ctx.is_graph_output(o) for o in node.output):
            continue
        source = node.input[0]
        ctx.rename_input(node.output[0], source)
        producer = producers.get(source)
        if producer is not None:
            ctx.absorb(producer.name, node)
        else:  # reads a graph input or a constant: credit the readers instead
            origins = ctx.origins.pop(node.name, [node.name])
            ctx.const_origins.setdefault(source, [])
            ctx.const_origins[source] = ctx.const_origins[source] + [o for o in origins if o not in ctx.const_origins[source]]
        ctx.remove_node(node)
        fusions.append(Fusion("IdentityElimination", [node.name], producer.name if producer else None,
                              f"{node.op_type} removed"))
    return fusions
