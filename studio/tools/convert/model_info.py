"""What the wizard's first page shows about a model: its inputs and outputs, read off the GUI thread."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.tools.convert.options import framework_for


@dataclass
class TensorInfo:
    """A model input or output: name, dims (int, or a string for a dynamic dim) and dtype."""

    name: str
    dims: list
    dtype: str

    @property
    def dynamic(self) -> bool:
        return any(not isinstance(d, int) for d in self.dims)

    def shape_text(self) -> str:
        """Dims as ATC writes them: -1 for a dynamic dim."""
        return ",".join(str(d) if isinstance(d, int) else "-1" for d in self.dims)


@dataclass
class ModelInfo:
    """A model's framework (ATC number) and, for ONNX, its inputs and outputs."""

    path: Path
    framework: int | None
    inputs: list[TensorInfo] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)
    opset: int | None = None


def inspect_model(path: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, ModelInfo]:
    """Read an ONNX model's signature (other frameworks: framework only, inputs typed by hand)."""
    path = Path(path)
    info = ModelInfo(path, framework_for(path))
    if info.framework != 5:
        return info
    yield Progress(None, f"reading {path.name}")
    from onnx import helper

    from studio.tools.convert.rewrite import load_onnx

    model = load_onnx(path)
    inits = {i.name for i in model.graph.initializer}

    def describe(values):
        result = []
        for v in values:
            if v.name in inits:
                continue
            t = v.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or "?")
                    for d in t.shape.dim]
            dtype = helper.tensor_dtype_to_np_dtype(t.elem_type).name if t.elem_type else "?"
            result.append(TensorInfo(v.name, dims, dtype))
        return result

    info.inputs, info.outputs = describe(model.graph.input), describe(model.graph.output)
    info.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    return info
