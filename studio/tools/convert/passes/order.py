"""Put a graph's nodes in topological order, as the ONNX format requires and ONNX Runtime tolerates.

Some exporters (paddle2onnx, for one) write a node before the node that produces its input. ONNX
Runtime sorts the graph when it loads it, so such a model runs; but the ONNX checker refuses it, and
so would every tool after us. The sort is stable: nodes keep their written order wherever it is
already valid, so a sorted graph comes out unchanged.
"""

from __future__ import annotations

import heapq


def _body_reads(node) -> set[str]:
    """Every tensor name read inside ``node``'s sub-graphs, at any depth (outer-scope reads included)."""
    from onnx import AttributeProto

    names: set[str] = set()
    for attr in node.attribute:
        for body in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
            for inner in body.node:
                names.update(inner.input)
                names |= _body_reads(inner)
    return names


def is_sorted(graph) -> bool:
    """True when every node reads only graph inputs, initializers or outputs of earlier nodes."""
    known = {v.name for v in graph.input} | {i.name for i in graph.initializer} | {""}
    produced_later = {name for node in graph.node for name in node.output}
    for node in graph.node:
        for name in list(node.input) + sorted(_body_reads(node)):
            if name not in known and name in produced_later:
                return False
        known.update(node.output)
    return True


def sort_nodes(graph) -> bool:
    """Sort ``graph.node`` in place (stable Kahn's algorithm); return True if the order changed.

    A cycle leaves the graph as it is (the checker then names the node); sub-graph bodies are not
    reordered, only their reads of outer tensors count as dependencies of the node that owns them.
    """
    if is_sorted(graph):
        return False
    nodes = list(graph.node)
    producer = {name: index for index, node in enumerate(nodes) for name in node.output if name}
    needs: list[set[int]] = []
    users: list[list[int]] = [[] for _ in nodes]
    for index, node in enumerate(nodes):
        deps = {producer[name] for name in set(node.input) | _body_reads(node)
                if name in producer and producer[name] != index}
        needs.append(deps)
        for dep in deps:
            users[dep].append(index)
    waiting = [len(deps) for deps in needs]
    ready = [index for index, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)  # the smallest written index first keeps the order stable
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for user in users[index]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) != len(nodes):
        return False  # a cycle: not ours to guess
    sorted_nodes = [nodes[i] for i in order]
    del graph.node[:]
    graph.node.extend(sorted_nodes)
    return True
