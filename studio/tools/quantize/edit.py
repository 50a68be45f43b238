"""Rollback candidates made by editing the fully quantised QDQ graph instead of quantising again.

``quantize_static`` with ``nodes_to_exclude`` re-reads, shape-infers and rewrites the whole model
for every candidate (a tenth of a second and more on a U-Net, hundreds of times in a search).
With the ranges fixed by the one calibration, what it produces is predictable from the fully
quantised model, following ONNX Runtime's QDQ rules for the compute layers (Conv, ConvTranspose,
Gemm, MatMul):

* a layer it quantises puts a QuantizeLinear/DequantizeLinear pair on each of its activation
  inputs and on its output, and every reader of such a tensor (float layers too) reads the pair's
  DequantizeLinear; a pair stays in a candidate while any layer still quantised touches its tensor;
* a layer's weight (and bias) becomes an integer initializer read through a DequantizeLinear; a
  layer rolled back reads its original float initializers again.

The same scales and zero points (they come from the same ranges), so a candidate's outputs are the
ones ``quantize_static`` gives with the same exclusions (tests compare them with numpy). Anything
outside these rules (a weight shared between layers, a QOperator model, a layer missing from the
quantised graph) makes :meth:`Editor.model` return None, and the caller quantises again.
"""

from __future__ import annotations

from dataclasses import dataclass

EDITABLE_OPS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})


@dataclass
class _Pair:
    """One activation's QuantizeLinear -> DequantizeLinear pair in the quantised graph."""

    quant: int           # index of the QuantizeLinear node
    dequant: int         # index of the DequantizeLinear node
    tensor: str          # the tensor's name in the original model
    q_input: str         # what the QuantizeLinear reads (the tensor, or its producer's renamed output)
    dq_output: str       # what the readers read


class Editor:
    """Builds any keep-set's model from the original (float) and the fully quantised ModelProto."""

    def __init__(self, original, full, candidates: list[str]):
        self.original, self.full = original, full
        self.candidates = list(candidates)
        self._weights = {t.name: t for t in original.graph.initializer}
        self._weights.update({n.output[0]: n for n in original.graph.node
                              if n.op_type == "Constant" and n.output})
        self._ok = self._index()

    def _index(self) -> bool:
        full, original = self.full.graph, self.original.graph
        made_by = {o: i for i, n in enumerate(full.node) for o in n.output}
        self._at = {n.name: i for i, n in enumerate(full.node) if n.name}
        self._source = {n.name: n for n in original.node if n.name}
        if any(name not in self._at or name not in self._source or self._source[name].op_type not in EDITABLE_OPS
               for name in self.candidates):
            return False
        graph_outputs = {o.name for o in full.output}
        self._pairs: list[_Pair] = []
        for index, node in enumerate(full.node):
            if node.op_type != "DequantizeLinear" or node.input[0] not in made_by:
                continue
            quant = made_by[node.input[0]]
            if full.node[quant].op_type != "QuantizeLinear":
                continue
            q_input, dq_output = full.node[quant].input[0], node.output[0]
            tensor = dq_output if dq_output in graph_outputs else q_input
            self._pairs.append(_Pair(quant, index, tensor, q_input, dq_output))
        # which candidate layers touch each activation (original names): its float inputs and outputs
        self._touch: dict[str, set[str]] = {}
        readers: dict[str, int] = {}
        for node in original.node:
            for name in node.input:
                readers[name] = readers.get(name, 0) + 1
        for name in self.candidates:
            node = self._source[name]
            for tensor in [*node.input, *node.output]:
                if tensor and tensor not in self._weights:
                    self._touch.setdefault(tensor, set()).add(name)
        # each layer's weight inputs: (position, original name, the DequantizeLinear feeding it or None)
        self._weight_inputs: dict[str, list[tuple[int, str, int | None]]] = {}
        for name in self.candidates:
            node, now = self._source[name], full.node[self._at[name]]
            slots = []
            for position, tensor in enumerate(node.input):
                if tensor not in self._weights:
                    continue
                if readers.get(tensor, 0) > 1:
                    return False  # a weight shared between layers: ORT's handling is not one rule
                feeding = made_by.get(now.input[position]) if position < len(now.input) else None
                if feeding is not None and full.node[feeding].op_type != "DequantizeLinear":
                    return False
                slots.append((position, tensor, feeding))
            self._weight_inputs[name] = slots
        return True

    def model(self, keep):
        """The ModelProto with only ``keep`` (candidate names) quantised; None when the graph is
        outside the rules above (quantise again instead)."""
        import onnx

        if not self._ok:
            return None
        keep = set(keep)
        full = self.full.graph
        drop: set[int] = set()
        rename: dict[str, str] = {}
        for pair in self._pairs:
            if self._touch.get(pair.tensor, set()) & keep:
                continue
            drop.update((pair.quant, pair.dequant))
            if pair.dq_output == pair.tensor:      # a graph output: its producer writes it again
                rename[pair.q_input] = pair.tensor
            else:
                rename[pair.dq_output] = pair.tensor
        restored: dict[int, dict[int, str]] = {}
        for name in self.candidates:
            if name in keep:
                continue
            for position, tensor, feeding in self._weight_inputs[name]:
                if feeding is not None:
                    drop.add(feeding)
                restored.setdefault(self._at[name], {})[position] = tensor
        out = onnx.ModelProto()
        out.CopyFrom(self.full)
        graph = out.graph
        nodes = []
        for index, node in enumerate(graph.node):
            if index in drop:
                continue
            for position, tensor in enumerate(node.input):
                node.input[position] = restored.get(index, {}).get(position, rename.get(tensor, tensor))
            for position, tensor in enumerate(node.output):
                node.output[position] = rename.get(tensor, tensor)
            nodes.append(node)
        used = {tensor for node in nodes for tensor in node.input}
        have = {t.name for t in graph.initializer}
        produced = {o for node in nodes for o in node.output}
        constants = [self._weights[t] for t in sorted(used - have - produced) if t in self._weights]
        kept_inits = [t for t in graph.initializer if t.name in used]
        del graph.node[:]
        for weight in constants:     # the rolled-back layers' float weights, as the original holds them
            if isinstance(weight, onnx.NodeProto):
                nodes.insert(0, weight)
        graph.node.extend(nodes)
        del graph.initializer[:]
        graph.initializer.extend(kept_inits)
        graph.initializer.extend(w for w in constants if isinstance(w, onnx.TensorProto))
        names = used | produced | {i.name for i in graph.input}
        infos = [v for v in graph.value_info if v.name in names]
        del graph.value_info[:]
        graph.value_info.extend(infos)
        return out


def same_graph(a, b) -> bool:
    """Whether two ModelProtos hold the same graph: the same nodes and initializers (in any order),
    inputs and outputs. Then ONNX Runtime computes the same outputs for both: an edited candidate
    that equals ``quantize_static``'s build need not be run again."""
    def parts(model):
        graph = model.graph
        return (sorted(n.SerializeToString(deterministic=True) for n in graph.node),
                sorted(t.SerializeToString(deterministic=True) for t in graph.initializer),
                [v.SerializeToString(deterministic=True) for v in graph.input],
                [v.SerializeToString(deterministic=True) for v in graph.output],
                sorted(o.SerializeToString(deterministic=True) for o in model.opset_import))
    return parts(a) == parts(b)
