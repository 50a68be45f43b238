"""``--output_type FP16`` for ONNX: weights and activations in float16, with the pitfalls handled.

* Inputs and outputs keep FP32 by default (a Cast at each end), as ATC's models keep their I/O.
* If/Loop/Scan nodes stay FP32 with their bodies; outer tensors the bodies read by name keep
  their name in FP32 (bodies declare their own types, and ONNX Runtime checks them).
* A block-list (op types or node names) stays FP32, with Casts around it; ops that have no
  float16 in the ONNX spec (NonMaxSuppression, Range) are always on it.
* Resize's ``scales`` (and ``roi``) stay FP32: the spec requires float there.
* A node whose constant weights exceed the FP16 range (|w| > 65504) stays FP32 instead of
  silently becoming inf; weights that underflow to zero are counted. All of it goes in the report.
* An attention-mask constant (``finfo(float32).min`` whose every path ends in a Softmax, see
  :func:`studio.core.fp16_graph.mask_tensors`) is clamped to -65504 instead, as converters do: the
  mask then works in FP16 (exp(-65504) = 0) and its op needs no FP32 island.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np


if TYPE_CHECKING:
    import onnx

FP16_MAX = 65504.0
FP16_TINY = 2.0 ** -24  # smallest subnormal; anything smaller (and non-zero) flushes to 0
ALWAYS_FP32_OPS = {"NonMaxSuppression", "Range", "RandomNormal", "RandomUniform", "Multinomial",
                   "DynamicQuantizeLinear"}
# Quantize/DequantizeLinear take float16 only from opset 19 on (quantized models' Q/DQ pairs).
FP32_BEFORE_OPSET_19 = {"QuantizeLinear", "DequantizeLinear"}
FP32_INPUT_SLOTS = {"Resize": {1, 2}, "Upsample": {1}}


@dataclass
class Fp16Report:
    """What FP16 conversion did; its JSON form goes into the conversion report."""

    converted_initializers: int = 0
    kept_fp32: list[dict] = field(default_factory=list)  # {"node", "op", "reason"}
    fp32_inputs: list[str] = field(default_factory=list)  # "node: input" slots left in FP32
    underflow: list[dict] = field(default_factory=list)  # {"initializer", "count"}
    clamped: list[dict] = field(default_factory=list)  # {"initializer", "count", "reason"}: masks set to ±65504
    casts_inserted: int = 0
    keep_io_types: bool = True

    __json_rename__ = {"underflow": "underflow_to_zero"}  # studio.core.serial: the report's key


def convert_to_fp16(model: onnx.ModelProto, block: list[str] | None = None,
                    keep_io_types: bool = True) -> Fp16Report:
    """Rewrite ``model`` in place to float16; returns what was kept in FP32 and why."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16
    report = Fp16Report(keep_io_types=keep_io_types)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    block = set(block or [])
    graph = model.graph
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type for v in
             list(inferred.graph.value_info) + list(graph.input) + list(graph.output)}
    inits = {i.name: i for i in graph.initializer}
    types.update({name: init.data_type for name, init in inits.items()})
    floats = {name for name, t in types.items() if t == F32}
    graph_inputs = {v.name for v in graph.input if v.name not in inits}
    graph_outputs = {v.name for v in graph.output}
    # If/Loop/Scan nodes stay FP32 with their bodies, and the outer tensors their bodies read by
    # name keep that name in FP32 (an FP16 producer gets a Cast back, a weight an FP16 copy).
    holders = {node.name for node in graph.node
               if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)}
    body_refs = _body_reads(graph) & floats if holders else set()
    pinned = (graph_outputs if keep_io_types else set()) | body_refs

    # 1. Which nodes stay FP32, and why.
    from studio.core.fp16_graph import clamp_to_fp16, mask_tensors

    masks = mask_tensors(model)
    clamp: set[str] = set()  # mask constants stored clamped to the FP16 range
    fp32_nodes: set[str] = set()
    for node in graph.node:
        reason = None
        if node.op_type in block or node.name in block:
            reason = "on the FP32 block-list"
        elif node.name in holders:
            reason = f"{node.op_type} has sub-graphs: kept FP32 with its bodies"
        elif node.domain not in ("", "ai.onnx"):
            reason = f"{node.domain}.{node.op_type} is not a standard ONNX op: its float16 support is unknown"
        elif node.op_type in ALWAYS_FP32_OPS:
            reason = f"{node.op_type} has no float16 in the ONNX spec"
        elif node.op_type in FP32_BEFORE_OPSET_19 and opset < 19:
            reason = f"{node.op_type} takes float16 only from opset 19 (the model has opset {opset})"
        else:
            for inp in node.input:
                init = inits.get(inp)
                if init is not None and init.data_type == F32:
                    values = numpy_helper.to_array(init)
                    if values.size and np.abs(values).max() > FP16_MAX:
                        if inp in masks and not np.any(values > FP16_MAX):
                            if inp not in clamp:
                                clamp.add(inp)
                                report.clamped.append({
                                    "initializer": inp, "count": int(np.count_nonzero(values < -FP16_MAX)),
                                    "reason": f"attention-mask constant ({values.min():.4g}) clamped to -65504: every "
                                              "path from it ends in a Softmax, where both give 0"})
                            continue
                        reason = f"weight {inp} exceeds the FP16 range (max |w| = {np.abs(values).max():.4g})"
                        break
        if reason:
            fp32_nodes.add(node.name)
            report.kept_fp32.append({"node": node.name, "op": node.op_type, "reason": reason})

    # 2. Where each float tensor lives natively, and its name per precision.
    producer_fp = {}
    for node in graph.node:
        for out in node.output:
            producer_fp[out] = F32 if node.name in fp32_nodes else F16
    versions: dict[str, dict[int, str]] = {}
    new_nodes: list = []

    def rename_output(tensor: str, new: str) -> None:
        for node in graph.node:
            for i, out in enumerate(node.output):
                if out == tensor:
                    node.output[i] = new

    for name in floats:
        if name in inits:
            continue
        native = F32 if (name in graph_inputs and (keep_io_types or name in body_refs)) else producer_fp.get(name, F16)
        if name in pinned and native == F16:
            rename_output(name, f"{name}/fp16")
            versions[name] = {F16: f"{name}/fp16"}
        else:
            versions[name] = {native: name}

    # Weights read in FP16 anywhere are converted in place; FP32 readers of them get a copy.
    fp16_inits: set[str] = set()
    for node in graph.node:
        if node.name in fp32_nodes:
            continue
        slots = FP32_INPUT_SLOTS.get(node.op_type, set())
        fp16_inits.update(inp for i, inp in enumerate(node.input)
                          if inp in inits and inp in floats and i not in slots and inp not in body_refs)

    def get(tensor: str, want: int) -> str:
        if tensor in inits and tensor in floats:
            if want == F32 and tensor in fp16_inits:
                return _fp32_copy(tensor)
            if want == F16 and tensor in body_refs:
                return _fp16_copy(tensor)
            return tensor
        have = versions.get(tensor)
        if have is None:
            return tensor
        if want in have:
            return have[want]
        source = next(iter(have.values()))
        target = tensor if (tensor in pinned and want == F32) else f"{tensor}/{'fp32' if want == F32 else 'fp16'}"
        new_nodes.append(helper.make_node("Cast", [source], [target], name=f"{target}/cast", to=want))
        report.casts_inserted += 1
        have[want] = target
        return target

    fp32_copies: dict[str, str] = {}
    fp16_copies: dict[str, str] = {}

    def _fp16_copy(tensor: str) -> str:
        if tensor not in fp16_copies:
            values = numpy_helper.to_array(inits[tensor])
            half = clamp_to_fp16(values) if tensor in clamp else values.astype(np.float16)
            copy = numpy_helper.from_array(half, f"{tensor}/fp16")
            graph.initializer.append(copy)
            fp16_copies[tensor] = copy.name
            report.converted_initializers += 1
        return fp16_copies[tensor]

    def _fp32_copy(tensor: str) -> str:
        if tensor not in fp32_copies:
            copy = numpy_helper.from_array(numpy_helper.to_array(inits[tensor]).astype(np.float32), f"{tensor}/fp32")
            graph.initializer.append(copy)
            fp32_copies[tensor] = copy.name
        return fp32_copies[tensor]

    # 3. Walk the nodes in order, emitting the Casts each one needs just before it.
    original = list(graph.node)
    for node in original:
        want = F32 if node.name in fp32_nodes else F16
        slots = FP32_INPUT_SLOTS.get(node.op_type, set())
        for i, inp in enumerate(node.input):
            if not inp or inp not in floats:
                continue
            need = F32 if (want == F32 or i in slots) else F16
            if need == F32 and want == F16 and inp in inits:
                report.fp32_inputs.append(f"{node.name}: {inp}")
            node.input[i] = get(inp, need)
        if want == F16:
            for attr in node.attribute:
                if node.op_type == "Cast" and attr.name == "to" and attr.i == F32:
                    attr.i = F16
                elif node.op_type == "ConstantOfShape" and attr.name == "value" and attr.t.data_type == F32:
                    fill = numpy_helper.to_array(attr.t)  # a mask's fill value is clamped, not made -inf
                    attr.t.CopyFrom(numpy_helper.from_array(clamp_to_fp16(fill) if node.output[0] in masks
                                                            else fill.astype(np.float16)))
        new_nodes.append(node)
        for out in node.output:
            base = out[:-5] if out.endswith("/fp16") else out
            if base in pinned and base in floats:
                get(base, F32)

    # 4. Convert the initializers that FP16 nodes read.
    for name in fp16_inits:
        init = inits[name]
        values = numpy_helper.to_array(init)
        tiny = int(np.count_nonzero((values != 0) & (np.abs(values) < FP16_TINY)))
        if tiny:
            report.underflow.append({"initializer": name, "count": tiny})
        init.CopyFrom(numpy_helper.from_array(clamp_to_fp16(values) if name in clamp else values.astype(np.float16),
                                              name))
        report.converted_initializers += 1

    del graph.node[:]
    graph.node.extend(new_nodes)
    for value in graph.input:
        if value.name in graph_inputs and value.name in floats and not keep_io_types and value.name not in body_refs:
            value.type.tensor_type.elem_type = F16
    for value in graph.output:
        if value.name in floats:
            if not keep_io_types:
                value.type.tensor_type.elem_type = producer_fp.get(value.name, F16)
    del graph.value_info[:]
    return report


def _body_reads(graph) -> set[str]:
    """Names the sub-graph bodies of ``graph`` read from outside themselves (any depth)."""
    from onnx import AttributeProto

    reads: set[str] = set()

    def visit(body, outer_defined: set[str]) -> None:
        own = {v.name for v in body.input} | {i.name for i in body.initializer} | \
              {o for n in body.node for o in n.output}
        for node in body.node:
            reads.update(i for i in node.input if i and i not in own)
            for attr in node.attribute:
                for inner in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
                    visit(inner, outer_defined | own)
        reads.update(o.name for o in body.output if o.name not in own)

    for node in graph.node:
        for attr in node.attribute:
            for body in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
                visit(body, set())
    return reads
