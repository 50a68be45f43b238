"""What a shape-recording run feeds each input: values the model accepts, read off the graph.

Random integers in [0, 10) break a BERT: its ``token_type_ids`` index a table of 2 rows and
ONNX Runtime stops at the first out-of-range Gather. An integer input that indexes a table (a
``Gather`` whose data is a weight, or a weight dequantized by Cast / Mul / DequantizeLinear,
reached directly or through Cast / Reshape / Unsqueeze / Squeeze / Flatten / Identity) is fed
uniform values in ``[0, rows)`` of the smallest such table; an integer or boolean input named like
a mask (``attention_mask``) is fed ones; everything else is
:func:`studio.core.model_inputs.random_array` as before. Each choice is described, so the output
can say what the run was fed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from studio.core.model_inputs import random_array

_PASS_THROUGH = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}
_DEQUANTIZE = {"Cast", "DequantizeLinear", "Mul", "Div", "Add", "Sub", "Identity"}  # keep a weight's shape
_MAX_DEPTH = 4


def table_rows(proto: Any) -> dict[str, tuple[int, str]]:
    """Graph input -> (rows of the smallest table it indexes, that table's name)."""
    graph = proto.graph
    tables = {t.name: tuple(t.dims) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value":
                    tables[node.output[0]] = tuple(attr.t.dims)
    readers: dict[str, list] = {}
    producers = {}
    for node in graph.node:
        for slot, name in enumerate(node.input):
            readers.setdefault(name, []).append((node, slot))
        for name in node.output:
            producers[name] = node

    def table(name: str, depth: int = 0) -> tuple[tuple, str] | None:
        """(dims, weight name) of the weight a Gather's data comes from (INT8 weights are dequantized
        by Cast / Mul / DequantizeLinear before the Gather)."""
        if name in tables:
            return tables[name], name
        node = producers.get(name)
        if node is None or depth >= _MAX_DEPTH or node.op_type not in _DEQUANTIZE:
            return None
        found = [t for t in (table(i, depth + 1) for i in node.input if i) if t is not None and t[0]]
        return max(found, key=lambda t: len(t[0])) if found else None  # the weight, not its scale

    out: dict[str, tuple[int, str]] = {}
    for inp in graph.input:
        if inp.name in tables:
            continue
        frontier, best = [inp.name], None
        for _ in range(_MAX_DEPTH):
            after = []
            for name in frontier:
                for node, slot in readers.get(name, ()):
                    found = table(node.input[0]) if node.op_type == "Gather" and slot == 1 else None
                    if found is not None:
                        dims, weight = found
                        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                        if dims and -len(dims) <= axis < len(dims):
                            rows = int(dims[axis])
                            if best is None or rows < best[0]:
                                best = (rows, weight)
                    elif node.op_type in _PASS_THROUGH and slot == 0:
                        after.extend(o for o in node.output if o)
            frontier = after
        if best is not None:
            out[inp.name] = best
    return out


def feed(name: str, shape: list[int], dtype: Any, rng: np.random.Generator,
         table: tuple[int, str] | None) -> tuple[np.ndarray, str]:
    """(array, what it holds) for input ``name``: ``table`` is its entry of :func:`table_rows`."""
    kind = np.dtype(dtype).kind
    if kind in "iu" and table is not None and table[0] > 0:
        rows, weight = table
        array = rng.integers(0, rows, tuple(shape)).astype(dtype)
        return array, f"random ids in [0, {rows - 1}] (the rows of {weight!r}, the table it indexes)"
    if kind in "iub" and "mask" in name.lower():
        return np.ones(tuple(shape), dtype), "ones (a mask: every position attended)"
    array = random_array(name, shape, dtype, rng)
    if kind in "fc":
        return array, "standard normal floats"
    if kind == "b":
        return array, "random booleans"
    return array, "random integers in [0, 9] (indexes no table the graph shows)"
