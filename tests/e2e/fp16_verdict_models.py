"""Small models of the three FP16 verdict traps, written the way exporters write them.

* :func:`masked_attention` — one self-attention block with a BERT padding mask built as Hugging
  Face builds it: ``(1 - mask) * finfo(float32).min`` added to the scores, then Softmax.
* :func:`tiny_logits` — a linear head whose weights are ~1e-13 (logits ~1e-13: all 0 in FP16).
* the audio front-end of the demo (:func:`studio.tools.demo.journeys.build_fp16_frontend`), whose
  1e-10 log floor underflows on silent frames.

The corpus (tests/corpus) checks the same verdicts on real exported architectures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEQ, WIDTH = 8, 16
FLOAT_MIN = float(np.finfo(np.float32).min)


def masked_attention(path: Path) -> Path:
    """x [1, 8, 16], attention_mask [1, 8] (int64) -> out [1, 8, 16]."""
    rng = np.random.default_rng(3)

    def weight(name: str, shape, scale: float = 0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [weight("wq", (WIDTH, WIDTH)), weight("wk", (WIDTH, WIDTH)), weight("wv", (WIDTH, WIDTH)),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(FLOAT_MIN, np.float32), "mask_min"),
             numpy_helper.from_array(np.array(4.0, np.float32), "scale"),
             numpy_helper.from_array(np.array([1], np.int64), "axis1")]
    nodes = [
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], "mask/cast", to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "mask_f"], ["inverted"], "mask/sub"),
        helper.make_node("Mul", ["inverted", "mask_min"], ["extended"], "mask/mul"),
        helper.make_node("Unsqueeze", ["extended", "axis1"], ["extended_3d"], "mask/unsqueeze"),
        helper.make_node("MatMul", ["x", "wq"], ["q"], "attn/q"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], "attn/k"),
        helper.make_node("MatMul", ["x", "wv"], ["v"], "attn/v"),
        helper.make_node("Transpose", ["k"], ["kt"], "attn/kt", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["raw_scores"], "attn/scores"),
        helper.make_node("Div", ["raw_scores", "scale"], ["scores"], "attn/scale"),
        helper.make_node("Add", ["scores", "extended_3d"], ["masked_scores"], "attn/add_mask"),
        helper.make_node("Softmax", ["masked_scores"], ["probs"], "attn/softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["out"], "attn/context"),
    ]
    graph = helper.make_graph(nodes, "masked_attention",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, SEQ, WIDTH]),
                               helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, SEQ])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, SEQ, WIDTH])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def padding_mask(padded: int = 3) -> np.ndarray:
    """Ones with the last ``padded`` tokens masked (0)."""
    mask = np.ones((1, SEQ), np.int64)
    mask[:, SEQ - padded:] = 0
    return mask


def tiny_logits(path: Path, scale: float = 1e-13) -> Path:
    """x [1, 16] -> logits [1, 4] = x @ W + b with W, b ~ ``scale``."""
    rng = np.random.default_rng(4)
    w = (rng.standard_normal((WIDTH, 4)) * scale).astype(np.float32)
    b = (rng.standard_normal(4) * scale).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["mm"], "head/matmul"),
         helper.make_node("Add", ["mm", "b"], ["logits"], "head/add")], "tiny_logits",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def audio_frontend(folder: Path) -> tuple[Path, Path]:
    """(the demo's audio front-end, frames with a silent last quarter as .npy)."""
    from studio.tools.demo.journeys import build_fp16_frontend, frames_with_silence

    model, frames = folder / "frontend.onnx", folder / "silence.npy"
    onnx.save(build_fp16_frontend(), model)
    np.save(frames, frames_with_silence())
    return model, frames


def ort_outputs(path: Path, feeds: dict) -> list[np.ndarray]:
    """The model's outputs from ONNX Runtime (the independent reference)."""
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
