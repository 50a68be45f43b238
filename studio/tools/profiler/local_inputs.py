"""Inputs for a local profiling run: .npy files by input name, or seeded random data of a known shape.

A dynamic dimension (``N``, ``H``, ``W``, ``?``) is never given a size Studio made up: timing a
text detector on a 1x3x1x1 image reports a few milliseconds for a model that takes hundreds at
640x640. Such an input needs ``--input-shape NAME=1,3,640,640`` (or its data, ``--input
NAME=FILE.npy``); the shapes used are recorded with the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from studio.core.errors import UserError

# ONNX TensorProto element types -> the same names ONNX Runtime reports
_ONNX_TYPES = {1: "tensor(float)", 2: "tensor(uint8)", 3: "tensor(int8)", 6: "tensor(int32)", 7: "tensor(int64)",
               9: "tensor(bool)", 10: "tensor(float16)", 11: "tensor(double)"}


@dataclass
class InputSpec:
    """One model input: its name, dims (an int, or the symbolic name / None of a dynamic dim), type."""

    name: str
    dims: list[int | str | None]
    type: str

    @property
    def dynamic_axes(self) -> list[int]:
        """Indices of the dims without a fixed size."""
        return [i for i, d in enumerate(self.dims) if not (isinstance(d, int) and d > 0)]

    def template(self) -> str:
        """``?,3,?,?``: the static sizes, ``?`` for each dynamic dim."""
        return ",".join("?" if i in self.dynamic_axes else str(d) for i, d in enumerate(self.dims))


@dataclass
class InputUsed:
    """What a run fed one input: shape, dtype and where the data came from."""

    shape: list[int]
    dtype: str
    source: str  # "file <path>", "random (shape given)", "random (static shape)"

    def describe(self) -> str:
        """``1×3×640×640 float32, seeded random (--input-shape)``."""
        shape = "×".join(str(d) for d in self.shape) or "scalar"
        return f"{shape} {self.dtype}, {self.source}"


def parse_input_specs(specs: list[str]) -> dict[str, Path]:
    """``["image=img.npy"]`` -> ``{"image": Path("img.npy")}`` (the ``--input`` option)."""
    from studio.core.model_inputs import parse_input_files

    return parse_input_files(specs)


def parse_shape_specs(specs: list[str]) -> dict[str, list[int]]:
    """``["x=1,3,640,640"]`` or ATC's ``["x:1,3,640,640;y:1,8"]`` -> ``{"x": [1, 3, 640, 640], ...}``
    (the ``--input-shape`` option, read by :func:`studio.core.model_inputs.parse_input_shapes`)."""
    from studio.core.model_inputs import parse_input_shapes

    return {name: list(dims) for name, dims in parse_input_shapes(specs).items()}


def session_inputs(session: Any) -> list[InputSpec]:
    """The inputs of an ONNX Runtime session."""
    return [InputSpec(i.name, list(i.shape), i.type) for i in session.get_inputs()]


def model_inputs(model: Path) -> list[InputSpec]:
    """The inputs of an ONNX model file, read with onnx (no session; external data is not loaded)."""
    import onnx

    try:
        proto = onnx.load(str(model), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError, ValueError, OSError ... for bad files
        raise UserError(f"Cannot read the model: {exc}".splitlines()[0], model,
                        "Check the file is a complete ONNX model (studio info MODEL).") from exc
    initialisers = {t.name for t in proto.graph.initializer}
    specs = []
    for value in proto.graph.input:
        if value.name in initialisers:
            continue
        tensor = value.type.tensor_type
        dims: list[int | str | None] = []
        for dim in tensor.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value > 0:
                dims.append(int(dim.dim_value))
            else:
                dims.append(dim.dim_param or None)
        specs.append(InputSpec(value.name, dims, _ONNX_TYPES.get(tensor.elem_type, f"elem_type {tensor.elem_type}")))
    return specs


def missing_shapes(specs: list[InputSpec], files: dict[str, Path], shapes: dict[str, list[int]]) -> list[InputSpec]:
    """Inputs with dynamic dims that have neither a file nor a shape."""
    return [s for s in specs if s.dynamic_axes and s.name not in files and s.name not in shapes]


def dynamic_dims_error(missing: list[InputSpec], model: Path) -> UserError:
    """The message for dynamic dims with no size: names each input and axis, and both options."""
    parts = []
    for spec in missing:
        axes = ", ".join(f"axis {i}" + (f" ({spec.dims[i]})" if spec.dims[i] else "") for i in spec.dynamic_axes)
        parts.append(f"input '{spec.name}' [{spec.template()}]: {axes}")
    example = missing[0]
    options = " ".join(f"--input-shape {s.name}={s.template()}" for s in missing)
    image = len(example.dims) == 4 and example.dims[1] == 3  # NCHW image: show the usual form
    hint = f" (e.g. --input-shape {example.name}=1,3,640,640)" if image else ""
    return UserError(
        "The model has dynamic dimensions with no size given (Studio does not guess them): " + "; ".join(parts),
        model,
        f"Give each dynamic dim a size, replacing every ?: {options}{hint}; "
        f"or give the input's data: --input {example.name}=FILE.npy.")


def make_inputs(session: Any, files: dict[str, Path], seed: int, shapes: dict[str, list[int]] | None = None,
                model: Path | None = None) -> dict[str, np.ndarray]:
    """Feeds for every model input: the given .npy file, else seeded random data of the given or
    static shape. Dynamic dims with no size raise a UserError (:func:`feed_inputs` also says what
    was used)."""
    return feed_inputs(session, files, seed, shapes, model)[0]


def feed_inputs(session: Any, files: dict[str, Path], seed: int, shapes: dict[str, list[int]] | None = None,
                model: Path | None = None, warnings: list[str] | None = None
                ) -> tuple[dict[str, np.ndarray], dict[str, InputUsed]]:
    """Like :func:`make_inputs`, and what was used for each input (shape, dtype, source). The arrays
    are :func:`studio.core.model_inputs.make_feeds`' (the same for a profile, a dump and a benchmark);
    a file is held to :func:`studio.core.model_inputs.conform_array`, its warnings go to ``warnings``."""
    from studio.core.model_inputs import InputSpec as FeedSpec
    from studio.core.model_inputs import make_feeds

    shapes = shapes or {}
    specs = session_inputs(session)
    known = {s.name for s in specs}
    for option, given in (("--input", files), ("--input-shape", shapes)):
        unknown = set(given) - known
        if unknown:
            raise UserError(f"The model has no input named {', '.join(sorted(unknown))}", option,
                            f"Its inputs are: {', '.join(s.name for s in specs)}.")
    missing = missing_shapes(specs, files, shapes)
    if missing:
        raise dynamic_dims_error(missing, model or Path("model"))
    for spec in specs:
        if spec.name in shapes and spec.name not in files:
            _check_shape(spec, shapes[spec.name])
    sources: dict[str, str] = {}
    feeds = make_feeds([FeedSpec(s.name, tuple(s.dims), s.type) for s in specs], files,
                       {name: tuple(dims) for name, dims in shapes.items()}, seed, warnings, sources=sources)
    used = {}
    for spec in specs:
        source = sources[spec.name]
        if spec.name not in files:
            source += ", shape given" if spec.name in shapes else ", static shape"
        used[spec.name] = InputUsed(list(feeds[spec.name].shape), feeds[spec.name].dtype.name, source)
    return feeds, used


def _check_shape(spec: InputSpec, shape: list[int]) -> None:
    if len(shape) != len(spec.dims):
        raise UserError(f"--input-shape {spec.name} has {len(shape)} dims; the input has {len(spec.dims)} "
                        f"[{spec.template()}]", "--input-shape", f"Write --input-shape {spec.name}={spec.template()} "
                        "with numbers for the named dims.")
    for axis, (want, got) in enumerate(zip(spec.dims, shape)):
        if isinstance(want, int) and want > 0 and want != got:
            raise UserError(f"--input-shape {spec.name}: axis {axis} is fixed at {want} in the model, not {got}",
                            "--input-shape", f"Keep the static sizes: {spec.name}={spec.template()}.")
