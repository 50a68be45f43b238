"""ONNX Runtime sessions that speak once: quiet options, and one check of the declared output shapes.

A model whose declared output shape is wrong (``[1, seqlen]`` declared, ``[25, 1, 8210]``
returned) makes ONNX Runtime log a warning on every ``run`` — 55 lines for a benchmark. Studio
turns ORT's warnings off (errors still come back as exceptions) and says it once instead, with
:func:`output_shape_warnings` on the first run's outputs, against the shapes the file declares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ORT_ERROR = 3  # ONNX Runtime's log severity: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal


def quiet_options(options: Any = None) -> Any:
    """``options`` (a new ``SessionOptions`` when None) with ORT's warnings off: only errors are logged."""
    import onnxruntime as ort

    options = options if options is not None else ort.SessionOptions()
    options.log_severity_level = max(int(options.log_severity_level), ORT_ERROR)
    return options


def _fits(declared: Sequence, actual: Sequence) -> bool:
    if declared is None:
        return True
    if len(declared) != len(actual):
        return False
    return all(not isinstance(d, int) or d <= 0 or d == a for d, a in zip(declared, actual))


def _text(dims: Sequence) -> str:
    return "[" + ", ".join(str(d) if d not in (None, "") else "?" for d in dims) + "]"


def declared_outputs(model: Any) -> dict[str, list]:
    """Output name -> dims as the model file declares them (an int, or a name / None for a dynamic
    dim); outputs without a declared shape are left out. ``model`` is a ModelProto or a path.

    Read from the file, not from the session: ONNX Runtime merges the declaration with its own
    inference and reports the result (``[]`` once they disagree in rank), hiding the mismatch."""
    if not hasattr(model, "graph"):
        import onnx

        try:
            model = onnx.load(str(model), load_external_data=False)
        except Exception:  # noqa: BLE001 - a session already loaded it; without the file nothing is said
            return {}
    out = {}
    for value in model.graph.output:
        tensor = value.type.tensor_type
        if not tensor.HasField("shape"):
            continue
        out[value.name] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]
    return out


def output_shape_warnings(declared: dict[str, list], names: Sequence[str], values: Sequence[Any]) -> list[str]:
    """One line per output whose array (``values``, in the order of ``names``) differs from the
    shape the model declares (``declared``, from :func:`declared_outputs`): rank, or a fixed size."""
    out = []
    for name, value in zip(names, values):
        dims = declared.get(name)
        shape = list(getattr(value, "shape", ()))
        if dims is not None and not _fits(dims, shape):
            out.append(f"output {name!r}: the model declares shape {_text(dims)}, ONNX Runtime returned "
                       f"{_text(shape)} (the declaration is wrong; tools that size buffers from it will be misled)")
    return out
