"""Shapes recorded by a run: execute an ONNX model once in ONNX Runtime and keep every tensor's shape.

Declared and inferred shapes can be missing (dynamic dims, custom ops, failed inference) or wrong;
the shapes a real run produced are trusted over them (:meth:`Graph.apply_runtime_shapes`). Inputs are
seeded random data the model accepts (:mod:`.run_feeds`); every dynamic dim needs a size (by dim
name, or per input as ``--input-shape`` gives them): a dim set to 1 behind the user's back would
record shapes of a run nobody asked for.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Generator
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.model_inputs import ORT_DTYPES
from studio.tools.graph.run_feeds import feed, table_rows


def _session(onnx, ort, model, probe: Path, path: Path):
    """An ORT session for ``model``; a file newer than this ORT is retried at the IR version it takes
    (the IR version numbers the file format; the ops' opsets, which matter, are unchanged)."""
    for attempt in range(2):
        onnx.save(model, str(probe), save_as_external_data=model.ByteSize() > 1_500_000_000)
        try:
            from studio.core.ort_session import quiet_options

            # the run's outputs are read, not checked against the declaration: no per-output warnings
            return ort.InferenceSession(str(probe), quiet_options(), providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001
            text = str(exc)
            newest = re.search(r"max supported IR version: (\d+)", text)
            if attempt == 0 and newest and int(newest.group(1)) < model.ir_version:
                model.ir_version = int(newest.group(1))
                continue
            raise UserError(f"ONNX Runtime cannot load the model: {text.splitlines()[0][-300:]}", path,
                            "Custom or NPU-only ops cannot run on the CPU; shapes stay as declared.") from exc
    raise AssertionError("unreachable")


def record_shapes(path: Path, dims: dict[str, int] | None = None, seed: int = 0,
                  cancel: CancelToken | None = None, input_shapes: dict[str, tuple[int, ...]] | None = None,
                  option: str = "--input-shape", fed: dict[str, str] | None = None
                  ) -> Generator[Progress, None, tuple[dict, dict]]:
    """Job: run the model once; returns ({tensor name: shape}, {tensor name: dtype}).

    Inputs are fed values the model accepts (:mod:`.run_feeds`: token ids within their table, masks
    of ones, seeded random data otherwise); ``fed``, when given, receives what each input held.

    ``dims`` sizes dynamic dims by name (``{"N": 5}``), ``input_shapes`` whole inputs
    (``{"x": (1, 3, 640, 640)}``). A dynamic dim with no size is a UserError naming the input, the
    axis and ``option`` (the spelling of the surface that asks).
    """
    import onnx
    import onnxruntime as ort

    path = Path(path)
    yield Progress(None, f"loading {path.name} for a run")
    from studio.core.model_files import load_with_external_data

    try:
        model = load_with_external_data(path)  # external data is loaded from next to the model
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - any load failure is the user's file
        raise UserError(f"Cannot load the model for a run: {exc}", path,
                        "Check the model and its external data files.") from exc
    known = {o.name for o in model.graph.output}
    for node in model.graph.node:  # every node output becomes a model output, so the run returns it
        for name in node.output:
            if name and name not in known:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
                known.add(name)
    if cancel is not None:
        cancel.raise_if_cancelled()
    yield Progress(None, "starting ONNX Runtime")
    with tempfile.TemporaryDirectory(prefix="studio-shapes-") as tmp:
        session = _session(onnx, ort, model, Path(tmp) / "probe.onnx", path)
        rng = np.random.default_rng(seed)
        tables = table_rows(model)
        feeds = {}
        for inp in session.get_inputs():
            given = (input_shapes or {}).get(inp.name)
            if given is not None and len(given) != len(inp.shape):
                raise UserError(f"Input {inp.name!r} has {len(inp.shape)} dims, {option} gives {len(given)}", path,
                                f"Give {len(inp.shape)} sizes for {inp.name}.")
            shape = []
            for axis, d in enumerate(inp.shape):
                size = given[axis] if given is not None else d if isinstance(d, int) and d > 0 else \
                    (dims or {}).get(str(d))
                if size is None:
                    example = ",".join(str(v) if isinstance(v, int) and v > 0 else "N" for v in inp.shape)
                    raise UserError(f"Dim {axis} ({d or '?'}) of input {inp.name!r} is dynamic and no size was given",
                                    path, f"Give it with {option} {inp.name}={example} (N: the size to run with).")
                shape.append(int(size))
            dtype = ORT_DTYPES.get(inp.type)
            if dtype is None:
                raise UserError(f"Input {inp.name!r} has type {inp.type}, which a random run cannot feed", path,
                                "Shapes stay as declared for this model.")
            feeds[inp.name], said = feed(inp.name, shape, dtype, rng, tables.get(inp.name))
            if fed is not None:
                fed[inp.name] = said
        if cancel is not None:
            cancel.raise_if_cancelled()
        yield Progress(None, "running once on the CPU")
        try:
            outputs = session.run(None, feeds)
        except Exception as exc:  # noqa: BLE001
            raise UserError(f"The run failed: {str(exc).splitlines()[0][:300]}", path,
                            "Give the dynamic dimensions real sizes, or keep the declared shapes.") from exc
        names = [o.name for o in session.get_outputs()]
    shapes = {name: tuple(np.shape(value)) for name, value in zip(names, outputs)}
    shapes.update({name: tuple(value.shape) for name, value in feeds.items()})
    dtypes = {name: str(np.asarray(value).dtype) for name, value in zip(names, outputs)}
    yield Progress(1.0, f"recorded {len(shapes):,} shapes")
    return shapes, dtypes
