"""Dump every intermediate tensor of an ONNX model run with ONNX Runtime.

Every node output becomes a graph output and graph optimisations are disabled, so each tensor
keeps its name (fusions would merge or rename them). The folder gets one ``.npy`` per tensor,
named ``{op}.{output}.{timestamp}.npy`` like framework-side dump scripts (``/`` and ``.`` in op
names become ``_``), plus ``manifest.json``: mode, model, the inputs used and, per tensor, op name,
op type, output index, tensor name, shape, dtype and execution order.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Generator
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core import ort_providers
from studio.core.jobs import CancelToken, Progress
from studio.core.ort_session import declared_outputs, output_shape_warnings
from studio.core.model_inputs import InputSpec, make_feeds
from studio.tools.accuracy.dumpset import MANIFEST, MANIFEST_FORMAT

INPUT_OP_TYPE = "Input"


def safe_name(name: str) -> str:
    """An op name usable in a file name (msaccucmp replaces ``/`` and ``.`` with ``_``)."""
    return re.sub(r"[^A-Za-z0-9_\-]", "_", name) or "unnamed"


def load_model(path: Path):
    """onnx.load with a UserError that says what is wrong."""
    path = Path(path)
    if path.is_dir():
        raise UserError("Expected an ONNX model file, got a folder", path,
                        "Give the .onnx file itself (e.g. " + str(path / "model.onnx") + ").")
    from studio.core.model_files import load_with_external_data

    try:
        return load_with_external_data(path)
    except FileNotFoundError as exc:
        raise UserError("Model not found", path, "Check the path.") from exc
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - protobuf raises many types on garbage
        raise UserError(f"Not a readable ONNX model ({type(exc).__name__}: {exc})", path,
                        "Give an .onnx file; OM models cannot run locally (dump them on the device).") from exc


def make_inputs(model, path: Path, given: dict[str, np.ndarray], seed: int,
                shapes: dict[str, list[int]] | None = None, warnings: list[str] | None = None
                ) -> dict[str, np.ndarray]:
    """Arrays for every graph input: the given ones, else seeded random data of the declared shape.

    ``shapes`` gives sizes for inputs with dynamic dims (``--input-shape``). A dynamic dim with
    no size is never guessed: a UserError names the input, the axis and both options. Given arrays
    are held to :func:`studio.core.model_inputs.conform_array` (its warnings go to ``warnings``).
    """
    initializers = {i.name for i in model.graph.initializer}
    declared = [v for v in model.graph.input if v.name not in initializers]
    names = [v.name for v in declared]
    shapes = dict(shapes or {})
    for option, keys in (("--input", given), ("--input-shape", shapes)):
        unknown = sorted(set(keys) - set(names))
        if unknown:
            raise UserError(f"{option} names {unknown[0]!r}, which is not an input of the model", path,
                            f"Its inputs are: {', '.join(names) or '(none)'}.")
    both = sorted(set(given) & set(shapes))
    if both:
        raise UserError(f"Input {both[0]!r} has both data (--input) and a shape (--input-shape)", path,
                        "Give one of them: the data's shape is used as it is.")
    specs = []
    for value in declared:
        elem_type = value.type.tensor_type.elem_type
        dims = declared_dims(value)
        if value.name in shapes:
            shape = list(shapes[value.name])
            if len(shape) != len(dims) or any(isinstance(d, int) and d != n for d, n in zip(dims, shape)):
                raise UserError(f"--input-shape gives {value.name!r} the shape {shape}; the model declares "
                                f"{_dims_text(dims)}", path, "Set only the dynamic dims; keep the fixed ones.")
        elif value.name not in given:
            open_axes = [axis for axis, d in enumerate(dims) if not isinstance(d, int)]
            if open_axes:
                axis = open_axes[0]
                label = f" ({dims[axis]})" if dims[axis] else ""
                example = ",".join(str(d) if isinstance(d, int) else "N" for d in dims)
                raise UserError(f"Input {value.name!r} has a dynamic dimension {axis}{label} and no size was given "
                                f"(declared {_dims_text(dims)})", path,
                                f"Give its size: --input-shape {value.name}:{example} (N = the size you run with), "
                                f"or its data: --input {value.name}=FILE.npy")
        specs.append(InputSpec(value.name, tuple(dims), _ort_type(elem_type)))
    # The one synthesiser: a dump feeds the arrays a profile or a benchmark of this model would.
    return make_feeds(specs, shapes={k: tuple(v) for k, v in shapes.items()}, seed=seed, warnings=warnings,
                      arrays=given)


def _ort_type(elem_type: int) -> str:
    """ONNX Runtime's name of an ONNX element type (``tensor(float)``, ``tensor(int64)``...)."""
    from onnx import TensorProto

    try:
        return f"tensor({TensorProto.DataType.Name(elem_type).lower()})"
    except ValueError:
        return f"elem_type {elem_type}"


def declared_dims(value) -> list:
    """A graph input's dims: an int for a fixed size, the dim's name ('' when unnamed) for a dynamic one."""
    dims = []
    for dim in value.type.tensor_type.shape.dim:
        dims.append(dim.dim_value if dim.HasField("dim_value") and dim.dim_value > 0 else (dim.dim_param or ""))
    return dims


def dynamic_inputs(model_path: Path | str) -> list[tuple[str, list, str]]:
    """(name, declared dims, dtype) of each input with a dynamic dim — what a GUI must ask for."""
    return [entry for entry in inputs_to_ask(model_path) if any(not isinstance(d, int) for d in entry[1])]


def inputs_to_ask(model_path: Path | str) -> list[tuple[str, list, str]]:
    """(name, declared dims, dtype) of the inputs a GUI should ask about before a run.

    Inputs with a dynamic dim (a size is needed), and integer or boolean inputs (token ids, a
    sample rate, a flag: random values rarely suit them). Float inputs of fixed shape get seeded
    random data without a question; an empty list means nothing needs asking.
    """
    from onnx import helper

    model = load_model(Path(model_path))
    initializers = {i.name for i in model.graph.initializer}
    result = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = declared_dims(value)
        dtype = helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type).name
        result.append((value.name, dims, dtype))
    if not any(any(not isinstance(d, int) for d in dims) or not dtype.startswith("float") for _, dims, dtype in result):
        return []
    return result


def static_shapes(model_path: Path | str) -> dict[str, list[int]]:
    """{input: dims} for the model's inputs whose every dim is fixed (a converted model's sizes)."""
    model = load_model(Path(model_path))
    initializers = {i.name for i in model.graph.initializer}
    result = {}
    for value in model.graph.input:
        dims = declared_dims(value)
        if value.name not in initializers and all(isinstance(d, int) for d in dims):
            result[value.name] = dims
    return result


def reusable_inputs(dump_dir: Path | str, model_path: Path | str) -> dict[str, np.ndarray]:
    """The input arrays of a Studio dump that ``model_path`` accepts as they are (same name and shape)."""
    from studio.tools.accuracy.dumpset import read_manifest

    dump = read_manifest(Path(dump_dir))
    model = load_model(Path(model_path))
    declared = {v.name: declared_dims(v) for v in model.graph.input}
    result = {}
    for name, info in dump.info.get("inputs", {}).items():
        dims = declared.get(name)
        if dims is None or not isinstance(info, dict) or not isinstance(info.get("file"), str):
            continue
        array = np.load(Path(dump_dir) / info["file"], allow_pickle=False)
        if len(dims) == array.ndim and all(not isinstance(d, int) or d == n for d, n in zip(dims, array.shape)):
            result[name] = array
    return result


def _dims_text(dims: list) -> str:
    return "[" + ", ".join(str(d) if isinstance(d, int) else (d or "?") for d in dims) + "]"


def dump_model(model_path: Path | str, out_dir: Path | str, inputs: dict[str, np.ndarray] | None = None,
               seed: int = 0, fp16_sim: bool = False, cancel: CancelToken | None = None,
               shapes: dict[str, list[int]] | None = None) -> Generator[Progress, None, Path]:
    """Run ``model_path`` once and write every tensor under ``out_dir``; returns ``out_dir``.

    ``inputs``: data for some inputs; ``shapes``: sizes for the others' dynamic dims (random data).
    """
    import onnx

    model_path, out_dir = Path(model_path), Path(out_dir)
    yield Progress(None, f"loading {model_path.name}")
    model = load_model(model_path)
    for index, node in enumerate(model.graph.node):  # unnamed nodes get MSIT's OpType_index names
        if not node.name:
            node.name = f"{node.op_type}_{index}"
    warnings: list[str] = []
    feeds = make_inputs(model, model_path, inputs or {}, seed, shapes, warnings)
    graph_outputs = [o.name for o in model.graph.output]
    order = [(node, i, name) for node in model.graph.node for i, name in enumerate(node.output) if name]
    run_model, unrounded = model, []
    if fp16_sim:
        from studio.tools.accuracy.fp16_sim import simulate_fp16

        yield Progress(None, "rounding weights and op outputs through FP16")
        run_model, unrounded = simulate_fp16(model)
    wanted = [name for _, _, name in order]
    existing = {o.name for o in run_model.graph.output}
    run_model.graph.output.extend(onnx.ValueInfoProto(name=t) for t in wanted if t not in existing)
    if cancel is not None:
        cancel.raise_if_cancelled()
    yield Progress(0.2, f"running {model_path.name} with ONNX Runtime ({len(wanted)} tensors)")
    results = _run(run_model, feeds, model_path, set(feeds) - set(inputs or {}), declared_outputs(model), warnings)
    if cancel is not None:
        cancel.raise_if_cancelled()
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = int(time.time() * 1e6)
    tensors, input_info = [], {}
    written: set[str] = set()
    finished = False
    try:
        for position, (name, array) in enumerate(feeds.items()):
            file = tensor_file("input_" + name, 0, stamp, written, position)
            text = array.dtype.kind == "O"  # a string input: saved as numpy text, which loads without pickle
            np.save(out_dir / file, array.astype(str) if text else array, allow_pickle=False)
            input_info[name] = {"file": file, "shape": list(array.shape), "dtype": "str" if text else str(array.dtype),
                                "source": "given" if name in (inputs or {}) else f"random, seed {seed}"}
            if not text:  # the tensors compared are numbers; the string input is kept for a rerun
                tensors.append(_record(name, INPUT_OP_TYPE, 0, name, array, len(tensors), file))
        for count, (node, index, name) in enumerate(order):
            if count % 16 == 0:
                if cancel is not None:
                    cancel.raise_if_cancelled()
                yield Progress(0.5 + 0.5 * count / max(1, len(order)), f"saving {name}")
            array = results.get(name)
            if array is None:
                continue
            if not isinstance(array, np.ndarray) or array.dtype.kind in "OUS":
                # a ZipMap's list of maps, a sequence, strings: no numbers to compare op by op
                warnings.append(f"tensor {name!r} of op {node.name!r} ({node.op_type}) is {_kind(array)}, not a "
                                "numeric tensor: not dumped, so not compared")
                continue
            file = tensor_file(node.name, index, stamp, written, count)
            np.save(out_dir / file, array)
            tensors.append(_record(node.name, node.op_type, index, name, array, len(tensors), file,
                                   [i for i in node.input if i]))
        yield from _write_manifest(model, model_path, out_dir, seed, input_info, graph_outputs, tensors,
                                   fp16_sim, unrounded, warnings)
        finished = True
    except OSError as exc:
        raise UserError(f"Cannot write the dump: {exc.strerror or exc}", out_dir,
                        "Check the folder is writable and the disk has room; nothing of this dump was kept.") from exc
    finally:
        if not finished:  # failed or cancelled: leave no half-written dump behind
            _remove_partial(out_dir, written, created)
    return out_dir


# Longer names are shortened and made unique with a hash: a file name may hold 255 bytes, and
# tf2onnx joins every fused op's scope path with ";" into names of hundreds of characters.
MAX_STEM = 96


def tensor_file(op: str, index: int, stamp: int, taken: set[str], position: int) -> str:
    """A file name for output ``index`` of ``op`` that fits any file system, unique in ``taken``
    (added to it). The manifest keeps the real op and tensor names."""
    import hashlib

    stem = safe_name(op)
    if len(stem) > MAX_STEM:
        stem = f"{stem[:MAX_STEM - 17]}_{hashlib.sha1(op.encode('utf-8')).hexdigest()[:16]}"
    file = f"{stem}.{index}.{stamp}.npy"
    if file in taken:  # "a/b" and "a_b" share a safe name; a repeated op name must not overwrite
        file = f"{stem}_{position}.{index}.{stamp}.npy"
    taken.add(file)
    return file


def _remove_partial(out_dir: Path, written: set[str], created: bool) -> None:
    for file in written:
        (out_dir / file).unlink(missing_ok=True)
    (out_dir / (MANIFEST + ".tmp")).unlink(missing_ok=True)
    if created:
        try:
            out_dir.rmdir()  # only when empty: a user's other files stay
        except OSError:
            pass


def _write_manifest(model, model_path: Path, out_dir: Path, seed: int, input_info: dict, graph_outputs: list,
                    tensors: list, fp16_sim: bool, unrounded: list, warnings: list[str]
                    ) -> Generator[Progress, None, None]:
    import onnxruntime

    from studio.tools.accuracy.fp16_sim import subgraph_ops

    mode = "fp16-sim" if fp16_sim else ("fp16" if holds_float16(model) else "fp32")
    manifest = {"format": MANIFEST_FORMAT, "version": 1, "mode": mode,
                "producer": f"onnxruntime {onnxruntime.__version__} (CPU, graph optimisations disabled)",
                "model": str(model_path.resolve()), "seed": seed, "inputs": input_info,
                "outputs": graph_outputs, "tensors": tensors}
    ops_inside, holders = subgraph_ops(model)
    if ops_inside:
        # ONNX Runtime returns only top-level tensors: say what ran unseen inside bodies.
        manifest["subgraphs"] = {"ops": ops_inside, "nodes": holders, "fp16_simulated": fp16_sim}
    if fp16_sim:
        manifest["fp16_sim_unrounded"] = unrounded  # outputs of unknown type, left in FP32
    if warnings:
        manifest["warnings"] = warnings
    tmp = out_dir / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    os.replace(tmp, out_dir / MANIFEST)  # the manifest appears last: a half-written dump has none
    yield Progress(1.0, f"dumped {len(tensors)} tensors to {out_dir}")


def holds_float16(model) -> bool:
    """True when the model computes in float16 somewhere (a converted FP16 model), not plain FP32."""
    from onnx import TensorProto

    graph = model.graph
    if any(i.data_type == TensorProto.FLOAT16 for i in graph.initializer):
        return True
    values = list(graph.input) + list(graph.output) + list(graph.value_info)
    if any(v.type.tensor_type.elem_type == TensorProto.FLOAT16 for v in values):
        return True
    return any(n.op_type == "Cast" and any(a.name == "to" and a.i == TensorProto.FLOAT16 for a in n.attribute)
               for n in graph.node)


def _kind(value) -> str:
    """What a non-tensor ONNX Runtime result is, for a message."""
    if isinstance(value, np.ndarray):
        return "a string tensor"
    if isinstance(value, list):
        inner = sorted({"maps" if isinstance(v, dict) else f"{type(v).__name__} values" for v in value})
        return f"a sequence of {', '.join(inner) or 'nothing'}"
    return f"a {type(value).__name__}"


def _record(op: str, op_type: str, index: int, tensor: str, array: np.ndarray, order: int, file: str,
            reads: list[str] | None = None) -> dict:
    record = {"op_name": op, "op_type": op_type, "output_index": index, "kind": "output", "tensor": tensor,
              "shape": list(array.shape), "dtype": str(array.dtype), "order": order, "file": file}
    if reads is not None:
        record["inputs"] = reads  # the tensors the op reads: the advisor follows an FP16 underflow upstream
    return record


def _run(model, feeds: dict[str, np.ndarray], path: Path, random_inputs: set[str], declared: dict | None = None,
         warnings: list[str] | None = None) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # Spinning worker threads keep cores busy after run() returns and slow numpy down (measured).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 4  # errors come back as exceptions; no C++ log text on stderr
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=ort_providers.chosen())
        ort_providers.check(session)  # a UserError of its own, passed on below
        names = [o.name for o in session.get_outputs()]
        values = session.run(names, feeds)
        if warnings is not None and declared:  # the model's own outputs: the ones it declares a shape for
            pairs = [(n, v) for n, v in zip(names, values) if n in declared]
            warnings += output_shape_warnings(declared, [n for n, _ in pairs], [v for _, v in pairs])
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        from studio.core.ortmsg import ort_message

        text = ort_message(exc)
        used = "; ".join(f"{name}: {a.dtype} {list(a.shape)}" + (" random" if name in random_inputs else " given")
                         for name, a in feeds.items())
        raise UserError(f"ONNX Runtime could not run the model: {text}", path,
                        f"Inputs used: {used}. Random data does not suit every input (a sample rate, a flag, token "
                        "ids): give real data with --input NAME=FILE.npy, or other sizes with --input-shape; "
                        "check that ONNX Runtime supports every op of the model.") from exc
    return dict(zip(names, values))
