"""Small graph queries the pattern rules share."""

from __future__ import annotations


def consumers(graph) -> dict[str, list[int]]:
    """Value name -> indices of the nodes reading it."""
    out: dict[str, list[int]] = {}
    for i, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name:
                out.setdefault(name, []).append(i)
    return out


def only_reader(graph, readers: dict[str, list[int]], value: str, op_type: str | tuple) -> int | None:
    """The single node reading ``value`` when it has type ``op_type`` and the value is no graph output."""
    found = readers.get(value, [])
    types = (op_type,) if isinstance(op_type, str) else op_type
    if len(found) != 1 or value in graph.outputs or graph.nodes[found[0]].type not in types:
        return None
    return found[0]


def is_const(graph, name: str) -> bool:
    """True for an initializer (a weight the converter can fold into another)."""
    return name in graph.initializers


def batch_of(graph) -> int | None:
    """The leading dimension of the first input, when it is a number."""
    for name in graph.inputs:
        if name in graph.initializers:
            continue
        shape = graph.value(name).shape
        if shape and isinstance(shape[0], int) and shape[0] > 0:
            return shape[0]
        return None
    return None
