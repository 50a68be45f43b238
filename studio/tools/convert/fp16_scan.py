"""Find FP16 overflow inside a converted FP16 model, which ONNX Runtime's CPU run hides.

The CPU provider has few float16 kernels: it computes in FP32 and drops the FP16 rounding between
ops, so a converted model whose activations exceed ±65504 still gives finite outputs on the CPU
(measured: light_resnet50 on random input, 125 tensors beyond 65504, outputs unchanged) while an
FP16 device gives inf. Asking for every float16 tensor as an output makes ONNX Runtime produce it
in FP16, where the overflow shows as inf.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx


def fp16_overflow(converted: onnx.ModelProto, feeds: dict[str, np.ndarray], limit: int = 20) -> tuple[list[dict], int]:
    """(up to ``limit`` float16 tensors that hold inf/NaN, in execution order; how many in all).

    Tensors the FP32 original also fills with inf/NaN are not the conversion's doing, but they
    cannot be told apart here; each entry gives the producing op so the user can look. An entry on
    an attention-mask path (:func:`studio.core.fp16_graph.mask_tensors`) that holds only -inf is a
    saturated mask, harmless where it ends in Softmax: it is listed with ``"mask": True`` and not
    counted.
    """
    from studio.core.fp16_graph import mask_tensors, saturated_mask_values

    import onnx
    import onnxruntime as ort
    from onnx import TensorProto

    model = onnx.ModelProto()
    model.CopyFrom(converted)
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - without types there is nothing to scan
        return [], 0
    half = {v.name for v in inferred.graph.value_info if v.type.tensor_type.elem_type == TensorProto.FLOAT16}
    producers = {out: node for node in model.graph.node for out in node.output if out in half}
    existing = {o.name for o in model.graph.output}
    wanted = [name for name in producers if name not in existing]
    if not wanted:
        return [], 0
    model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in wanted)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        values = session.run(wanted, feeds)
    except Exception:  # noqa: BLE001 - the scan is an extra; the outputs were compared already
        return [], 0
    masks = mask_tensors(converted)
    found = []
    for name, value in zip(wanted, values):
        bad = int(value.size - np.count_nonzero(np.isfinite(value)))
        if bad:
            node = producers[name]
            mask = _base(name) in masks and saturated_mask_values(value)
            found.append({"tensor": name, "op": node.name, "op_type": node.op_type, "nonfinite": bad,
                          "size": int(value.size), "mask": mask})
    real = [f for f in found if not f["mask"]]
    return (real + [f for f in found if f["mask"]])[:limit], len(real)


def _base(tensor: str) -> str:
    """The tensor a converter's boundary cast copies (``x/fp16`` -> ``x``)."""
    for suffix in ("/fp16", "/fp32"):
        if tensor.endswith(suffix):
            return tensor[: -len(suffix)]
    return tensor
