"""The state passes share: the model, constant lookup, consumers, and node provenance.

Provenance: ``origins[node name]`` is the list of original node names a node stands for. A
fused node inherits the nodes it absorbed; a folded constant remembers the nodes it came from,
and any node reading it inherits them. :meth:`PassContext.node_mapping` gives the report's
``node_mapping`` (converted node -> original nodes), the contract with the accuracy analyzer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx


@dataclass
class Fusion:
    """One rewrite: which pass, which original nodes, which node remains (None when removed)."""

    pass_name: str
    nodes: list[str]
    result: str | None
    detail: str = ""

    __json_rename__ = {"pass_name": "pass"}  # studio.core.serial: the report's key


@dataclass
class PassContext:
    """A model being rewritten plus the bookkeeping every pass updates."""

    model: onnx.ModelProto
    origins: dict[str, list[str]] = field(default_factory=dict)
    const_origins: dict[str, list[str]] = field(default_factory=dict)
    lifted: int = 0
    _inits: dict | None = field(default=None, repr=False)
    subgraph_refs: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        # Tensors read inside If/Loop/Scan bodies: passes must neither rename nor drop them.
        self.subgraph_refs = _subgraph_refs(self.model.graph)
        used = set()
        for index, node in enumerate(self.model.graph.node):
            if not node.name or node.name in used:  # passes and the mapping need unique names
                node.name = f"{node.op_type}_{index}" if node.name in ("", None) else f"{node.name}_{index}"
            used.add(node.name)
            self.origins.setdefault(node.name, [node.name])

    # -- constants ----------------------------------------------------------------------------
    def initializer_map(self) -> dict[str, onnx.TensorProto]:
        """Initializers by name (kept in step with the graph by the methods below)."""
        if self._inits is None or len(self._inits) != len(self.model.graph.initializer):
            self._inits = {init.name: init for init in self.model.graph.initializer}
        return self._inits

    def constant(self, name: str) -> np.ndarray | None:
        """The value of a constant tensor (an initializer), or None when it is computed at run time."""
        from onnx import numpy_helper

        init = self.initializer_map().get(name)
        return None if init is None else numpy_helper.to_array(init)

    def set_constant(self, name: str, array: np.ndarray) -> None:
        """Add or replace an initializer."""
        from onnx import numpy_helper

        # np.ascontiguousarray would turn a 0-d scalar into shape (1,) (Paddle exports keep Clip
        # bounds and Div constants as scalars): keep the rank exactly.
        array = np.asarray(array)
        tensor = numpy_helper.from_array(array if array.flags.c_contiguous else array.copy(order="C"), name)
        # A recorded value_info for this name describes the old producer (Paddle exports: a
        # Constant inferred as rank 0 holding a [1] tensor); the initializer carries its own type,
        # and a stale entry would make the next shape inference fail with "differ in rank".
        stale = [i for i, v in enumerate(self.model.graph.value_info) if v.name == name]
        for index in reversed(stale):
            del self.model.graph.value_info[index]
        existing = self.initializer_map().get(name)
        if existing is not None:
            existing.CopyFrom(tensor)
            return
        self.model.graph.initializer.append(tensor)
        self._inits[name] = self.model.graph.initializer[-1]

    def new_constant_name(self, base: str) -> str:
        names = set(self.initializer_map()) | {o for n in self.model.graph.node for o in n.output}
        name, k = base, 1
        while name in names:
            k += 1
            name = f"{base}_{k}"
        return name

    # -- graph queries ------------------------------------------------------------------------
    def consumers(self, tensor: str) -> list[onnx.NodeProto]:
        return [n for n in self.model.graph.node if tensor in n.input]

    def is_graph_output(self, tensor: str) -> bool:
        """True for graph outputs and for tensors a sub-graph reads (both must keep their name)."""
        return tensor in self.subgraph_refs or any(o.name == tensor for o in self.model.graph.output)

    def remove_unused_initializers(self) -> None:
        """Drop initializers no node reads (and their graph-input entries, in old IR models)."""
        used = {i for n in self.model.graph.node for i in n.input} | {o.name for o in self.model.graph.output}
        used |= self.subgraph_refs
        dropped = {i.name for i in self.model.graph.initializer if i.name not in used}
        if not dropped:
            return
        keep = [i for i in self.model.graph.initializer if i.name not in dropped]
        del self.model.graph.initializer[:]
        self.model.graph.initializer.extend(keep)
        self._inits = None
        inputs = [v for v in self.model.graph.input if v.name not in dropped]
        del self.model.graph.input[:]
        self.model.graph.input.extend(inputs)

    def rename_input(self, old: str, new: str) -> None:
        """Make every reader of ``old`` read ``new`` (graph outputs keep their names)."""
        for node in self.model.graph.node:
            for i, inp in enumerate(node.input):
                if inp == old:
                    node.input[i] = new

    def absorb(self, keeper: str, removed: onnx.NodeProto) -> None:
        """``keeper`` now stands for ``removed`` as well."""
        merged = self.origins.setdefault(keeper, [keeper])
        for origin in self.origins.pop(removed.name, [removed.name]):
            if origin not in merged:
                merged.append(origin)

    def remove_node(self, node: onnx.NodeProto) -> None:
        for index, candidate in enumerate(self.model.graph.node):
            if candidate is node or candidate.name == node.name:
                del self.model.graph.node[index]
                return

    # -- the report's mapping -----------------------------------------------------------------
    def node_mapping(self) -> dict[str, list[str]]:
        """``{converted node: [original nodes]}`` for every node of the converted graph."""
        mapping = {}
        for node in self.model.graph.node:
            origins = list(self.origins.get(node.name, []))
            for inp in node.input:
                for origin in self.const_origins.get(inp, []):
                    if origin not in origins:
                        origins.append(origin)
            mapping[node.name] = origins
        return mapping


def _subgraph_refs(graph) -> set[str]:
    """Every tensor name read by a node inside any sub-graph of ``graph`` (recursively)."""
    from onnx import AttributeProto

    refs: set[str] = set()
    for node in graph.node:
        for attr in node.attribute:
            bodies = [attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs) if attr.type == AttributeProto.GRAPHS else []
            for body in bodies:
                refs |= {i for n in body.node for i in n.input if i}
                refs |= {o.name for o in body.output}
                refs |= _subgraph_refs(body)
    return refs
