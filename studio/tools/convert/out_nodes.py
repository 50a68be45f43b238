"""``--out_nodes`` locally: make the named tensors the graph outputs and drop what no longer feeds them.

ATC's syntax is ``"node:0;node2:1"`` (node name and output index); ONNX output tensor names are
accepted too, as ATC does for ONNX models. Names may hold ``;`` and ``:`` (tf2onnx's
``model_1/conv/BiasAdd;model_1/conv/Conv2D:0``): an entry that starts with a name of the model is
that name, and the text is split only at a ``;`` after it.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

from studio.core.errors import UserError

if TYPE_CHECKING:
    import onnx


def resolve_out_nodes(model: onnx.ModelProto, spec: str) -> list[str]:
    """The tensor names ``spec`` points at, or a UserError naming the unknown entry (E10016)."""
    by_node = {n.name: list(n.output) for n in model.graph.node}
    tensors = {o for n in model.graph.node for o in n.output} | {v.name for v in model.graph.input}
    result = []
    for entry in _entries(spec.strip().strip('"'), set(by_node) | tensors):
        name, sep, index = entry.rpartition(":")
        if sep and index.isdigit() and name in by_node:
            outputs = by_node[name]
            if int(index) >= len(outputs):
                raise UserError(f"Node {name!r} has {len(outputs)} output(s); --out_nodes asks for output {index}",
                                "--out_nodes", f"Use an index below {len(outputs)}.")
            result.append(outputs[int(index)])
        elif entry in tensors:
            result.append(entry)
        else:
            close = difflib.get_close_matches(entry.rpartition(":")[0] or entry, list(by_node) + sorted(tensors), n=3)
            raise UserError(f"{entry!r} in --out_nodes is not a node output or tensor of the model (E10016)",
                            "--out_nodes", (f"Close names: {', '.join(close)}. " if close else "")
                            + "Write node:index (e.g. head/conv:0) or an ONNX tensor name.")
    return result


_AFTER_NAME = re.compile(r"(:\d+)?\s*(;|$)")  # an optional output index, then the entry's end


def _entries(spec: str, names: set[str]) -> list[str]:
    """``spec`` split at the ``;`` between entries: at each point the longest name of the model
    (with an optional ``:index``) that ends at a ``;`` or the end, else the text up to the next ``;``."""
    ordered = sorted(names, key=len, reverse=True)
    entries, at = [], 0
    while at < len(spec):
        if spec[at] in "; ":
            at += 1
            continue
        for name in ordered:
            if spec.startswith(name, at):
                match = _AFTER_NAME.match(spec, at + len(name))
                if match:
                    entries.append(spec[at:match.start(2)].strip())
                    at = match.end()
                    break
        else:
            end = spec.find(";", at)
            end = len(spec) if end < 0 else end
            entries.append(spec[at:end].strip())
            at = end + 1
    return [e for e in entries if e]


def cut_outputs(model: onnx.ModelProto, spec: str) -> onnx.ModelProto:
    """A model whose outputs are the ``--out_nodes`` tensors, without the nodes that fed only the rest."""
    import onnx

    outputs = resolve_out_nodes(model, spec)
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input)}
    needed, frontier = set(), list(outputs)
    producers = {o: n for n in model.graph.node for o in n.output}
    while frontier:
        tensor = frontier.pop()
        node = producers.get(tensor)
        if node is None or node.name in needed:
            continue
        needed.add(node.name)
        frontier.extend(i for i in node.input if i)
    keep = [n for n in model.graph.node if n.name in needed]
    del model.graph.node[:]
    model.graph.node.extend(keep)
    new_outputs = []
    for name in outputs:
        value = onnx.ValueInfoProto()
        if name in known:
            value.CopyFrom(known[name])
        else:
            value.name = name
        new_outputs.append(value)
    del model.graph.output[:]
    model.graph.output.extend(new_outputs)
    used = {i for n in keep for i in n.input}
    inits = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(inits)
    return model
