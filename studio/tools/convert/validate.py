"""Run the original and the converted model on the same input and compare every output.

The input is seeded random data, or a picture. Where AIPP was inserted, the converted model gets
the raw uint8 image and the original model gets the same image pre-processed with the NumPy
reference (:meth:`~studio.tools.convert.aipp.AippOp.apply`), exactly what the NPU pipeline does.
Results print their numbers and are truthy when every output passes (Polygraphy's habit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from studio.errors import UserError

if TYPE_CHECKING:
    import onnx

    from studio.tools.convert.aipp_insert import AippInsertion

_NP_TYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64}


@dataclass
class OutputComparison:
    """One output: cosine similarity, max absolute and relative error, and the verdict."""

    name: str
    cosine: float
    max_abs_error: float
    max_rel_error: float
    mean_abs_error: float
    threshold: float

    @property
    def passed(self) -> bool:
        return self.cosine >= self.threshold

    def to_dict(self) -> dict:
        return {"output": self.name, "cosine": self.cosine, "max_abs_error": self.max_abs_error,
                "max_rel_error": self.max_rel_error, "mean_abs_error": self.mean_abs_error,
                "threshold": self.threshold, "passed": self.passed}


@dataclass
class Validation:
    """Per-output comparisons plus what was fed; ``bool(v)`` is True when all outputs pass."""

    outputs: list[OutputComparison] = field(default_factory=list)
    input_source: str = "seeded random"

    def __bool__(self) -> bool:
        return bool(self.outputs) and all(o.passed for o in self.outputs)

    def __str__(self) -> str:
        lines = [f"validation on {self.input_source}:"]
        for o in self.outputs:
            lines.append(f"  {o.name}: cosine {o.cosine:.6f}, max abs error {o.max_abs_error:.3g}, "
                         f"max rel error {o.max_rel_error:.3g} -> {'ok' if o.passed else 'FAIL'}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"input": self.input_source, "passed": bool(self), "outputs": [o.to_dict() for o in self.outputs]}


def compare_arrays(name: str, ref: np.ndarray, got: np.ndarray, threshold: float = 0.999) -> OutputComparison:
    """Cosine similarity and errors between two arrays (compared in float64)."""
    a = np.asarray(ref, np.float64).ravel()
    b = np.asarray(got, np.float64).ravel()
    if a.shape != b.shape:
        raise UserError(f"Output {name!r} changed shape: {np.shape(ref)} -> {np.shape(got)}", name,
                        "The conversion altered the output; check --input_shape and --out_nodes.")
    norm = np.linalg.norm(a) * np.linalg.norm(b)
    cosine = float(a @ b / norm) if norm else (1.0 if np.array_equal(a, b) else 0.0)
    diff = np.abs(a - b)
    rel = diff / np.maximum(np.abs(a), 1e-6)
    return OutputComparison(name, cosine, float(diff.max(initial=0)), float(rel.max(initial=0)),
                            float(diff.mean()) if diff.size else 0.0, threshold)


def _session(model: onnx.ModelProto | Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    data = model if isinstance(model, (str, Path)) else model.SerializeToString()
    return ort.InferenceSession(str(data) if isinstance(data, Path) else data, options,
                                providers=["CPUExecutionProvider"])


def raw_from_image(path: Path, insertion: AippInsertion) -> np.ndarray:
    """Load a picture and lay it out as the raw input AIPP expects (resized to the source size)."""
    import cv2

    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise UserError("Cannot read the validation image", path, "Give a PNG or JPEG file.")
    n, *_ = insertion.raw_shape
    fmt = insertion.op.input_format
    h = insertion.raw_shape[1] * 2 // 3 if fmt == "YUV420SP_U8" else insertion.raw_shape[1]
    w = insertion.raw_shape[2]
    image = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA)
    from studio.tools.convert.preview import raw_from_rgb

    raw = raw_from_rgb(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), insertion.op)[0]
    return np.repeat(raw[None], n, axis=0)


def make_feeds(original: onnx.ModelProto, converted: onnx.ModelProto, insertions: list[AippInsertion],
               seed: int = 0, image: Path | None = None) -> tuple[dict, dict, str]:
    """(feeds for the original, feeds for the converted, description of the input)."""
    rng = np.random.default_rng(seed)
    by_name = {ins.input_name: ins for ins in insertions}
    inits = {i.name for i in converted.graph.initializer}
    orig_types = {v.name: v.type.tensor_type.elem_type for v in original.graph.input}
    feeds_orig, feeds_conv = {}, {}
    source = "seeded random input (seed %d)" % seed if image is None else f"image {Path(image).name}"
    for value in converted.graph.input:
        if value.name in inits:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        ins = by_name.get(value.name)
        if ins is not None:
            raw = raw_from_image(image, ins) if image else rng.integers(0, 256, shape, dtype=np.uint8)
            feeds_conv[value.name] = raw
            pre = ins.op.apply(raw)
            if ins.layout == "NCHW":
                pre = pre.transpose(0, 3, 1, 2)
            feeds_orig[value.name] = np.ascontiguousarray(pre).astype(_NP_TYPES.get(orig_types.get(value.name), np.float32))
            continue
        dtype = _NP_TYPES.get(value.type.tensor_type.elem_type, np.float32)
        if np.issubdtype(dtype, np.floating):
            data = rng.standard_normal(shape).astype(np.float32)
        elif dtype == np.bool_:
            data = rng.integers(0, 2, shape).astype(bool)
        else:
            data = rng.integers(0, 10, shape).astype(dtype)
        feeds_conv[value.name] = data.astype(dtype)
        feeds_orig[value.name] = data.astype(_NP_TYPES.get(orig_types.get(value.name), dtype))
    return feeds_orig, feeds_conv, source


def validate(original: onnx.ModelProto, converted: onnx.ModelProto, insertions: list[AippInsertion] | None = None,
             seed: int = 0, image: Path | None = None, threshold: float = 0.999) -> Validation:
    """Run both models with ONNX Runtime on the same input and compare outputs by name."""
    feeds_orig, feeds_conv, source = make_feeds(original, converted, insertions or [], seed, image)
    try:
        ref_session, conv_session = _session(original), _session(converted)
        ref_names = [o.name for o in ref_session.get_outputs()]
        conv_names = [o.name for o in conv_session.get_outputs()]
        ref = dict(zip(ref_names, ref_session.run(None, feeds_orig)))
        got = dict(zip(conv_names, conv_session.run(None, feeds_conv)))
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        raise UserError(f"ONNX Runtime could not run the models for validation: {exc}", "validation",
                        "Check the model runs in ONNX Runtime (studio convert without --validate, then open it).") from exc
    result = Validation(input_source=source)
    for name in conv_names:
        if name in ref:
            result.outputs.append(compare_arrays(name, ref[name], got[name], threshold))
    return result
