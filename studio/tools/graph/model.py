"""The format-neutral graph model every reader produces and every view consumes.

A :class:`Model` holds named :class:`Graph` objects (the main graph first), model-level metadata
and the problems found while reading (``warnings``: failed shape inference, unknown partitions).
A :class:`Graph` holds :class:`Node` objects in file order, :class:`Value` descriptions of the
tensors that flow between them, and :class:`Tensor` summaries of the weights. Edges are derived
once, as numpy arrays of node indices, so big graphs stay cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

STATS_MAX_ELEMENTS = 8_388_608  # like Netron: statistics only for tensors up to 8 Mi elements


@dataclass
class Value:
    """A tensor flowing along edges: name, shape (ints, or strings for symbolic dims), dtype, format."""

    name: str
    shape: tuple | None = None
    dtype: str | None = None
    format: str | None = None
    runtime: bool = False  # the shape was recorded by a run (trusted over the declared one)

    def shape_text(self) -> str:
        """``[1,3,224,224]``, ``[N,?]`` or ``?`` when unknown."""
        if self.shape is None:
            return "?"
        return "[" + ",".join("?" if d is None or d == -1 else str(d) for d in self.shape) + "]"

    def type_text(self) -> str:
        """``float32[1,3,224,224]`` (with the format when one is known)."""
        text = f"{self.dtype or '?'}{self.shape_text()}"
        text = f"{text} {self.format}" if self.format else text
        return f"{text} (runtime)" if self.runtime else text


@dataclass
class Tensor:
    """A weight (initializer / OM Const): its description, and its data loaded only on demand."""

    name: str
    shape: tuple = ()
    dtype: str = "?"
    location: str | None = None  # external data file, when the data lives outside the model
    loader: Callable[[], np.ndarray] | None = field(default=None, repr=False)
    problem: str | None = None  # e.g. "external data file weights.bin not found"
    origin: str | None = None  # the Constant node that held it, when the file has no initializer for it

    @property
    def size(self) -> int:
        """Number of elements (0 when the shape is unknown)."""
        if not all(isinstance(d, int) and d >= 0 for d in self.shape):
            return 0
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    def statistics(self) -> dict[str, Any]:
        """min, max, mean, std and sparsity, computed now (not at load time)."""
        if self.problem:
            return {"error": self.problem}
        if self.loader is None:
            return {"error": "no data stored in the model"}
        if self.size > STATS_MAX_ELEMENTS:
            return {"error": f"too large for statistics ({self.size:,} elements)"}
        try:
            data = np.asarray(self.loader())
        except Exception as exc:  # noqa: BLE001 - a bad tensor must not break the view
            return {"error": f"cannot read data: {exc}"}
        if data.size == 0:
            return {"elements": 0}
        if data.dtype.kind not in "fiub":
            return {"elements": int(data.size)}
        values = data.astype(np.float64, copy=False).ravel()
        finite = values[np.isfinite(values)]
        stats = {"elements": int(values.size), "sparsity": float(np.mean(values == 0))}
        if finite.size:
            stats.update(min=float(finite.min()), max=float(finite.max()),
                         mean=float(finite.mean()), std=float(finite.std()))
        if finite.size != values.size:
            stats["non_finite"] = int(values.size - finite.size)
        return stats


@dataclass
class Node:
    """One operator. ``inputs``/``outputs`` are value names ("" for an unused optional slot)."""

    name: str
    type: str
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attributes: dict[str, Any] = field(default_factory=dict)
    subgraphs: dict[str, Graph] = field(default_factory=dict)  # attribute or slot name -> graph
    control_inputs: list[str] = field(default_factory=list)  # names of nodes this one waits for
    implicit_inputs: list[str] = field(default_factory=list)  # outer values its subgraphs read (ONNX)
    domain: str = ""

    @property
    def label(self) -> str:
        """The text a view shows: the op type (names go in the tooltip and side panel)."""
        return self.type


@dataclass
class Graph:
    """One graph (main graph, If/Loop body, OM subgraph, ONNX function body)."""

    name: str
    nodes: list[Node] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    values: dict[str, Value] = field(default_factory=dict)
    initializers: dict[str, Tensor] = field(default_factory=dict)
    # (name, op type) of Constant / ConstantOfShape nodes drawn as weights of their consumers
    folded: list[tuple[str, str]] = field(default_factory=list)
    # weights of enclosing graphs that this (sub)graph reads by name: weights here too, not inputs
    outer: dict[str, Tensor] = field(default_factory=dict)
    _edges: tuple | None = field(default=None, repr=False)
    _index: dict | None = field(default=None, repr=False)

    @property
    def file_nodes(self) -> int:
        """Nodes as the file counts them: drawn nodes plus the constant nodes folded into weights."""
        return len(self.nodes) + len(self.folded)

    def weight(self, name: str) -> Tensor | None:
        """The weight called ``name``: this graph's own, or an enclosing graph's that a body reads."""
        return self.initializers.get(name) or self.outer.get(name)

    def value(self, name: str) -> Value:
        """The description of a value (an empty one when the file says nothing about it)."""
        return self.values.get(name) or Value(name)

    def node_index(self) -> dict[str, int]:
        """Node name -> index (first wins for duplicate names)."""
        if self._index is None:
            index: dict[str, int] = {}
            for i, node in enumerate(self.nodes):
                index.setdefault(node.name, i)
            self._index = index
        return self._index

    def producers(self) -> dict[str, int]:
        """Value name -> index of the node producing it."""
        out: dict[str, int] = {}
        for i, node in enumerate(self.nodes):
            for name in node.outputs:
                if name:
                    out[name] = i
        return out

    def edges(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(src, dst, value name) for every data and control dependency between nodes.

        Control edges carry the value name "" (OM ``src:-1``). Computed once and cached.
        """
        if self._edges is None:
            producers = self.producers()
            index = self.node_index()
            src, dst, names = [], [], []
            for j, node in enumerate(self.nodes):
                for name in (*node.inputs, *node.implicit_inputs):
                    i = producers.get(name)
                    if i is not None:
                        src.append(i), dst.append(j), names.append(name)
                for ctrl in node.control_inputs:
                    i = index.get(ctrl)
                    if i is not None:
                        src.append(i), dst.append(j), names.append("")
            self._edges = (np.asarray(src, dtype=np.int32), np.asarray(dst, dtype=np.int32), names)
        return self._edges

    def free_values(self) -> set[str]:
        """Values this graph (and its subgraphs) read but neither define nor receive as inputs."""
        defined = set(self.inputs) | set(self.initializers) | set(self.outer)
        used: set[str] = set()
        for node in self.nodes:
            defined.update(node.outputs)
            used.update(n for n in node.inputs if n)
            for sub in node.subgraphs.values():
                used.update(sub.free_values())
        return used - defined

    def apply_runtime_shapes(self, shapes: dict[str, tuple], dtypes: dict[str, str] | None = None) -> int:
        """Trust shapes a run recorded (tensor name -> shape) over declared or inferred ones.

        Returns how many values changed. Names the graph does not know are ignored.
        """
        changed = 0
        known = set(self.values) | {o for n in self.nodes for o in n.outputs} | set(self.inputs)
        for name, shape in shapes.items():
            if name not in known:
                continue
            value = self.values.get(name) or Value(name)
            new_shape = tuple(int(d) for d in shape)
            dtype = (dtypes or {}).get(name, value.dtype)
            if value.shape != new_shape or value.dtype != dtype or not value.runtime:
                changed += 1
            self.values[name] = Value(name, new_shape, dtype, value.format, runtime=True)
        return changed

    def parameters(self) -> int:
        """Total number of weight elements (initializers and folded constant nodes)."""
        return sum(t.size for t in self.initializers.values())

    def walk(self):
        """This graph and every nested subgraph, depth first, each once."""
        seen: set[int] = set()
        stack = [self]
        while stack:
            graph = stack.pop()
            if id(graph) in seen:
                continue
            seen.add(id(graph))
            yield graph
            for node in reversed(graph.nodes):
                stack.extend(reversed(list(node.subgraphs.values())))


@dataclass
class Model:
    """What a reader returns: graphs (main first), metadata, and the problems it met."""

    path: Path
    format: str  # "onnx", "om", "om_json"
    graphs: list[Graph] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    opsets: dict[str, int] = field(default_factory=dict)
    functions: dict[str, Graph] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    shape_source: Any = None  # a graph.shapes.ShapeSource once shapes were given or recorded by a run
    findings: list[Any] = field(default_factory=list)  # a checker's findings with their places (pipelines)

    @property
    def main(self) -> Graph:
        """The main graph (the first one)."""
        return self.graphs[0]

    def all_graphs(self) -> list[Graph]:
        """Every graph once: top-level graphs and all their nested subgraphs."""
        out, seen = [], set()
        for top in self.graphs:
            for graph in top.walk():
                if id(graph) not in seen:
                    seen.add(id(graph))
                    out.append(graph)
        return out
