"""The graph rewrite of a local conversion, shared by ``studio convert`` and by what the advisor
promises: prepare a loaded model (order, weights, shapes), then run the passes.

:func:`run_passes` is the one place the passes run, each recorded as a :class:`PassRun` with the
model's serialized size before and after it — a pass that grows the model (constant folding of
``ConstantOfShape`` weights, for one) is named with the bytes it added. :func:`plan_passes` runs
the same steps on a copy in memory and writes nothing: what a conversion (or ``advise --apply``)
would fold, counted by the converter's own code.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.units import human_size

GROWTH_FACTOR = 2.0  # a rewrite that more than doubles the model ...
GROWTH_BYTES = 1 << 20  # ... and adds at least 1 MiB is called out, never left silent


def load_onnx(path: Path):
    """Load an ONNX model, or say clearly why it is not one."""
    import onnx
    from google.protobuf.message import DecodeError

    path = Path(path)
    if not path.is_file():
        raise UserError("Model file not found (E10410)", path, "Check the path to the model.")
    from studio.core.model_files import load_with_external_data

    try:
        model = load_with_external_data(path)
    except (DecodeError, ValueError, RuntimeError, onnx.onnx_cpp2py_export.checker.ValidationError) as exc:
        raise UserError(f"Not an ONNX model, or a truncated one (E10041): {exc}", path,
                        "If it is ONNX, export or copy it again (the file may be incomplete); "
                        "for TensorFlow .pb or Caffe use --atc with --framework.") from exc
    if not model.graph.node and not model.graph.output:
        raise UserError("Not an ONNX model: it has no graph (E16003)", path,
                        "Local conversion reads ONNX; for TensorFlow .pb or Caffe use --atc with --framework.")
    return model


@dataclass
class PassRun:
    """One pass as it ran: how many rewrites, how long, and the model's size around it."""

    name: str
    applied: int
    seconds: float
    bytes_before: int
    bytes_after: int

    # studio.core.serial: the report's ``pass_runs`` keys
    __json_rename__ = {"name": "pass"}
    __json_round__ = {"seconds": 4}

    @property
    def added_bytes(self) -> int:
        return self.bytes_after - self.bytes_before



def growth_warning(size_before: int, size_after: int, runs: list[PassRun]) -> str | None:
    """A sentence naming the passes that grew the model, when it grew past the thresholds."""
    if size_after < GROWTH_FACTOR * size_before or size_after - size_before < GROWTH_BYTES:
        return None
    growers = sorted((r for r in runs if r.added_bytes > 0), key=lambda r: -r.added_bytes)
    by = "; ".join(f"{r.name} x{r.applied} added {human_size(r.added_bytes, decimal=True)}" for r in growers[:3])
    return (f"the model grew {size_after / max(1, size_before):,.0f}x, {human_size(size_before, decimal=True)} -> "
            f"{human_size(size_after, decimal=True)}" + (f" ({by})" if by else "")
            + ": weights the file computed at load time (ConstantOfShape, ...) are now stored in it")


def prepare(model, input_shape: str | None, require_static: bool = True, from_files: dict | None = None):
    """Order the nodes, make weights constants, fix and infer shapes, resolve static Ifs.

    Returns ``(model, warnings, if_folds, fixed)``, ``fixed`` the input dims set (empty when the
    dims were left as they are). With ``require_static`` False a model whose dynamic dims were not
    sized keeps them (shapes are inferred symbolically) instead of being refused. ``from_files``:
    arrays given for inputs, which fix those inputs' shapes.
    """
    from studio.tools.convert import input_shape as shapes
    from studio.tools.convert.passes.order import sort_nodes

    warnings = []
    if sort_nodes(model.graph):
        warnings.append("The model's nodes were not in topological order (ONNX Runtime sorts them when it "
                        "loads the model, the ONNX checker refuses them); the converted model lists them sorted.")
    note = weights_not_inputs(model)
    if note:
        warnings.append(note)
    fixed = {}
    if input_shape or from_files or require_static or not _has_dynamic_inputs(model):
        fixed = shapes.fix_input_shapes(model, input_shape, from_files)
    model = shapes.infer_shapes(model)
    if_folds = []
    if any(node.op_type == "If" for node in model.graph.node):
        from studio.tools.convert.passes.control_flow import fold_static_ifs

        model, if_folds = fold_static_ifs(model)
        if if_folds:
            model = shapes.infer_shapes(model)
    return model, warnings, if_folds, fixed


def _has_dynamic_inputs(model) -> bool:
    from studio.tools.convert.input_shape import input_dims

    return any(not isinstance(d, int) for dims in input_dims(model).values() for d in dims)


def weights_not_inputs(model) -> str | None:
    """Drop initializers from the graph inputs (IR 3 models must list them there), so weights are constants.

    Passes add and rewrite initializers (fused biases, FP16 weights); IR 3 would need each listed
    as an input with a matching type. IR 4 lets weights be plain constants, as ATC treats them.
    """
    inits = {i.name for i in model.graph.initializer}
    listed = [v for v in model.graph.input if v.name in inits]
    if not listed:
        return None
    keep = [v for v in model.graph.input if v.name not in inits]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    upgraded = model.ir_version < 4
    if upgraded:
        model.ir_version = 4
    return (f"{len(listed)} weight(s) listed as graph inputs are constants in the converted model"
            + (" (IR version 3 -> 4, which lets weights be constants)" if upgraded else "")
            + "; they can no longer be fed at run time")


def run_passes(ctx, passes_on: dict[str, bool], cancel: CancelToken | None = None,
               span: tuple[float, float] = (0.15, 0.5)) -> Generator[Progress, None, tuple[list, list[PassRun]]]:
    """Lift constants, run every switched-on pass in order, then repeat the Conv fusions until
    nothing changes (one fusion can expose another: a Conv+Mul folded leaves a Conv+Add).

    Returns the fusions and one :class:`PassRun` per pass that ran (repeats merged into it);
    yields Progress in ``span`` and checks ``cancel`` before each pass.
    """
    from studio.tools.convert.passes import PASSES, lift_constants

    runs: dict[str, PassRun] = {}

    def timed(name: str, function) -> list:
        size = ctx.model.ByteSize()
        t0 = time.perf_counter()
        done = function(ctx)
        run = runs.get(name)
        if run is None:
            runs[name] = PassRun(name, len(done), time.perf_counter() - t0, size, ctx.model.ByteSize())
        else:
            run.applied += len(done)
            run.seconds += time.perf_counter() - t0
            run.bytes_after += ctx.model.ByteSize() - size
        return done

    fusions = timed("LiftConstants", lift_constants)
    for index, (name, function, _) in enumerate(PASSES):
        if cancel is not None:
            cancel.raise_if_cancelled()
        on = passes_on.get(name, True)
        yield Progress(span[0] + (span[1] - span[0]) * index / len(PASSES), f"pass {name}" + ("" if on else " (off)"))
        if on:
            fusions += timed(name, function)
    for _ in range(8):
        more = [f for name, function, _ in PASSES if passes_on.get(name, True) and name.startswith("Conv")
                for f in timed(name, function)]
        if not more:
            break
        fusions += more
    return fusions, list(runs.values())


@dataclass
class PassPlan:
    """What the passes would do to a model: the fusions, per-pass runs and sizes (nothing written)."""

    model: str
    fusions: list = field(default_factory=list)  # Fusion
    runs: list[PassRun] = field(default_factory=list)
    size_before: int = 0
    size_after: int = 0
    input_shape: str | None = None
    warnings: list[str] = field(default_factory=list)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # static value shapes before the passes
    dtypes: dict[str, str] = field(default_factory=dict)
    dynamic: bool = False  # the model has dynamic input dims (left symbolic when no input_shape was given)

    def counts(self) -> dict[str, int]:
        """Rewrites per pass."""
        out: dict[str, int] = {}
        for f in self.fusions:
            out[f.pass_name] = out.get(f.pass_name, 0) + 1
        return out

    def by_pass(self, name: str) -> list:
        return [f for f in self.fusions if f.pass_name == name]

    @property
    def growth(self) -> str | None:
        return growth_warning(self.size_before, self.size_after, self.runs)


def plan_passes(model: Path | str, input_shape: str | None = None, passes_on: dict[str, bool] | None = None,
                cancel: CancelToken | None = None) -> Generator[Progress, None, PassPlan]:
    """Job: run the conversion's rewrite on ``model`` in memory and return what it would do.

    ``passes_on`` switches passes by name (default: all on, as ``studio convert``). Dynamic dims
    without an ``input_shape`` stay symbolic here (the plan counts patterns; a conversion needs sizes).
    """
    from studio.tools.convert.passes import PassContext

    model = Path(model)
    yield Progress(None, f"planning the converter's passes on {model.name}")
    proto = load_onnx(model)
    size_before = proto.ByteSize()
    dynamic = _has_dynamic_inputs(proto)
    proto, warnings, if_folds, _fixed = prepare(proto, input_shape, require_static=False)
    shapes, dtypes = static_shapes(proto)
    ctx = PassContext(proto)
    fusions, runs = yield from run_passes(ctx, passes_on or {}, cancel, (0.1, 0.9))
    return PassPlan(str(model), if_folds + fusions, runs, size_before, ctx.model.ByteSize(), input_shape, warnings,
                    shapes, dtypes, dynamic)


def static_shapes(model) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
    """Every value of the main graph whose inferred shape is fully known, with its numpy dtype name."""
    import numpy as np
    from onnx import helper

    shapes, dtypes = {}, {}
    g = model.graph
    for value in (*g.input, *g.output, *g.value_info):
        t = value.type.tensor_type
        if not t.HasField("shape") or not all(d.HasField("dim_value") for d in t.shape.dim):
            continue
        shapes[value.name] = tuple(d.dim_value for d in t.shape.dim)
        try:
            dtypes[value.name] = str(np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type)))
        except (KeyError, TypeError, ValueError):
            pass
    return shapes, dtypes
