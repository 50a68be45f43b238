"""Inputs for running a model: ``--input NAME=FILE.npy``, ``--input-shape NAME:D0,D1,...`` and feeds.

Shared by every engine that runs a model here (benchmark, profiling, dumping), so the options
read the same everywhere. A dynamic dimension (a symbolic name, ``-1`` or ``0``) is never
replaced silently: without a size from ``--input-shape`` or from a given array, building the
feeds stops with a message naming the input, the axis and the option to use.

``--input-shape`` accepts one input per option (``image=1,3,224,224``, as ``studio profile run``
reads it) or ATC's form with several inputs separated by ``;`` (``"image:1,3,224,224;mask:1,1,224,224"``).
Names may hold ``;``, ``:``, ``,`` and ``=`` (tf2onnx's ``model_1/conv/BiasAdd;model_1/conv/Conv2D:0``):
the dims follow the last ``=`` or ``:``, and the model's input names settle the rest
(:mod:`studio.core.shape_text`).

Two rules hold for every given array, whichever command reads it (:func:`conform_array`):

* its shape fixes the input's shape: a dynamic dim takes the array's size, a fixed dim must
  match it (no ``--input-shape`` is needed for an input whose data is given);
* its element type must be the input's. An array of the same kind (float64 for a float32
  input, int32 for int64) is cast with a warning naming both types; an array of another kind
  (int64 for a float32 input: an image left unnormalised, ids saved as floats) is refused;
* a string input (``tensor(string)``) takes numpy text (``<U``), bytes (``S``, UTF-8) or an
  object array of ``str``, handed to ONNX Runtime as object-of-str (:func:`as_text`); numbers are
  refused for it, text for a number input, and random data is never made up for it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from studio.core.errors import UserError
from studio.core.units import human_size

ORT_DTYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int16)": np.int16, "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_,
    # ONNX Runtime takes a string tensor as a numpy object array of str (see conform_array)
    "tensor(string)": np.object_,
}


@dataclass(frozen=True)
class InputSpec:
    """One model input as the runtime declares it: dims are ints, or None/str for dynamic axes."""

    name: str
    dims: tuple
    type: str = "tensor(float)"


def parse_input_files(specs: Iterable[str]) -> dict[str, Path]:
    """``["image=img.npy"]`` -> ``{"image": Path("img.npy")}`` (the ``--input`` option)."""
    files: dict[str, Path] = {}
    for spec in specs:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            raise UserError(f"Bad --input {spec!r}", "--input", "Write --input NAME=FILE.npy (one per model input).")
        files[name] = Path(file)
    return files


def input_files(items: list[str]) -> dict[str, Path]:
    """``--input NAME=FILE.npy`` values as {name: file}, each input once."""
    inputs = parse_input_files(items)
    if len(inputs) < len(items):
        name = next(n for n in inputs if sum(1 for i in items if i.partition("=")[0] == n) > 1)
        raise UserError(f"--input {name} is given twice", "--input", "Give each input once.")
    return inputs


def parse_input_shapes(specs: Iterable[str] | None, option: str = "--input-shape",
                       names: Collection[str] | None = None) -> dict[str, tuple[int, ...]]:
    """``["image=1,3,224,224"]``, ``["image=1x3x224x224"]`` or ATC's ``["a:1,3;b:2"]`` ->
    ``{"image": (1, 3, 224, 224)}``; ``NAME=`` is a scalar. The one reader of ``--input-shape``
    for every command and panel; ``option`` names the field in messages as that surface spells it.

    Names may hold ``;``, ``:``, ``,`` and ``=`` (:mod:`studio.core.shape_text`); ``names``, the
    model's real input names when known, settles where such a name ends, and a name not among
    them is refused with the list of the model's inputs."""
    from studio.core.shape_text import split_entries

    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs or []:
        parts = split_entries(spec, names)
        if parts is None:
            raise UserError(f"Bad {option} {spec!r}: no input name", option,
                            f"Write {option} NAME=D0,D1,... (e.g. image=1,3,224,224) or ATC's NAME:D0,D1,..."
                            + (f" The model's inputs are: {_listing(names)}." if names else ""))
        if names is not None:
            unknown = [name for name, _ in parts if name not in names]
            if unknown:
                raise UserError(f"{option} names {unknown[0]!r}, which is not an input of the model", option,
                                f"The model's inputs are: {_listing(names)}. Give one {option} NAME=DIMS per "
                                "input, with the name exactly as the model spells it (quote it for the shell).")
        for name, dims in parts:
            name = name.strip()
            shown = f"{name}={dims}"
            if not name:
                raise UserError(f"Bad {option} {spec!r}: no input name", option,
                                f"Write {option} NAME=D0,D1,... (e.g. image=1,3,224,224) or ATC's NAME:D0,D1,...")
            try:
                values = tuple(int(d) for d in dims.replace("x", ",").split(",")) if dims.strip() else ()
            except ValueError:
                raise UserError(f"Bad dimensions in {option} {shown!r}", option,
                                "Dimensions are whole numbers separated by commas, e.g. image=1,3,224,224.") from None
            if any(v <= 0 for v in values):
                raise UserError(f"{option} {shown!r} has a dimension below 1", option,
                                "Give every dimension a concrete size of 1 or more.")
            if any(v >= 2 ** 63 for v in values):
                raise UserError(f"{option} {shown!r} has a dimension beyond 2^63-1, the largest a model can hold",
                                option, "Give the size the model really runs with.")
            if name in shapes and shapes[name] != values:
                raise UserError(f"{option} names {name!r} twice with different shapes", option,
                                "Give each input once.")
            shapes[name] = values
    return shapes


def is_dynamic(dim: Any) -> bool:
    """True for a dimension the model leaves open: a name, None, or a number below 1."""
    return not isinstance(dim, (int, np.integer)) or int(dim) < 1


def resolve_shape(spec: InputSpec, shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The concrete shape for ``spec``: the model's dims with ``--input-shape`` filled in.

    Raises UserError when a given shape contradicts the model (rank or a fixed dim) and when a
    dynamic dim has no size, naming the input, the axis and the option.
    """
    given = shapes.get(spec.name)
    if given is not None:
        if len(given) != len(spec.dims):
            raise UserError(f"--input-shape gives input {spec.name!r} {len(given)} dimensions; the model has "
                            f"{len(spec.dims)} ({_show(spec.dims)})", "--input-shape",
                            f"Write --input-shape {spec.name}={_example(spec.dims)}.")
        for axis, (model_dim, size) in enumerate(zip(spec.dims, given)):
            if not is_dynamic(model_dim) and int(model_dim) != size:
                raise UserError(f"--input-shape sets axis {axis} of input {spec.name!r} to {size}, but the model "
                                f"fixes it at {model_dim}", "--input-shape",
                                f"Only dynamic axes can be chosen; write --input-shape {spec.name}={_example(spec.dims)}.")
        return tuple(given)
    for axis, dim in enumerate(spec.dims):
        if is_dynamic(dim):
            label = f" ({dim!r})" if isinstance(dim, str) else ""
            raise UserError(f"Input {spec.name!r} has a dynamic axis {axis}{label} and no size was given "
                            f"(model shape {_show(spec.dims)})", f"input {spec.name}, axis {axis}",
                            f"Give its shape: --input-shape {spec.name}={_example(spec.dims)} "
                            f"(or an array with --input {spec.name}=FILE.npy).")
    return tuple(int(d) for d in spec.dims)


def random_array(name: str, shape: Sequence[int], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    """Seeded random data for input ``name``: the one rule every engine draws by, so a profile, a dump
    and a benchmark of the same model with the same seed feed identical arrays.

    Floats are standard normal (negative values too, so activations and their numerics are
    exercised), booleans fair coin flips, integers in [0, 10). Raises UserError when the array
    would not fit this computer's memory (:func:`check_fits`).
    """
    if np.dtype(dtype).kind in "OUS":
        raise no_random_text(name)
    check_fits(name, shape, dtype)
    kind = np.dtype(dtype).kind
    if kind in "fc":
        return rng.standard_normal(tuple(shape)).astype(dtype)
    if kind == "b":
        return rng.integers(0, 2, tuple(shape)).astype(dtype)
    return rng.integers(0, 10, tuple(shape)).astype(dtype)


def make_feeds(specs: Sequence[InputSpec], files: dict[str, Path] | None = None,
               shapes: dict[str, tuple[int, ...]] | None = None, seed: int = 0,
               warnings: list[str] | None = None, arrays: dict[str, np.ndarray] | None = None,
               sources: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    """Arrays for every input: the given array or .npy file, else seeded random data of the resolved
    shape (:func:`random_array`, drawn in the order of ``specs``).

    ``arrays`` are data already in memory (``files`` are read here); both are held to
    :func:`conform_array`, whose warnings (a cast) are appended to ``warnings``. ``sources``, when
    given, receives for each input where its data came from (``file PATH``, ``given``,
    ``seeded random (seed N)``).
    """
    files, shapes, arrays = files or {}, shapes or {}, arrays or {}
    known = {s.name for s in specs}
    for option, names in (("--input", files), ("--input", arrays), ("--input-shape", shapes)):
        unknown = sorted(set(names) - known)
        if unknown:
            raise UserError(f"The model has no input named {', '.join(map(repr, unknown))}", option,
                            f"Its inputs are: {', '.join(sorted(known))}.")
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for spec in specs:
        dtype = ORT_DTYPES.get(spec.type)
        if spec.name in files or spec.name in arrays:
            if spec.name in files:
                feeds[spec.name], warning, source = _load(files[spec.name], spec, dtype, shapes)
            else:
                given = np.asarray(arrays[spec.name])
                feeds[spec.name], warning = conform_array(spec.name, given, dtype, spec.dims, f"--input {spec.name}")
                source = "given" + (f" ({given.dtype.name} cast)" if warning else "")
            if warning and warnings is not None:
                warnings.append(warning)
            if sources is not None:
                sources[spec.name] = source
            continue
        if dtype is None:
            raise UserError(f"Cannot make random data for input {spec.name!r} of type {spec.type}", "--input",
                            f"Give it a file: --input {spec.name}=FILE.npy.")
        if np.dtype(dtype).kind == "O":  # before its shape: no size would help
            raise no_random_text(spec.name)
        feeds[spec.name] = random_array(spec.name, resolve_shape(spec, shapes), dtype, rng)
        if sources is not None:
            sources[spec.name] = f"seeded random (seed {seed})"
    return feeds


def conform_array(name: str, array: np.ndarray, dtype: Any, dims: Sequence | None, where: Any
                  ) -> tuple[np.ndarray, str | None]:
    """``array`` checked and made fit for model input ``name`` (element type ``dtype``, declared
    ``dims``; None for an unknown shape): (array, warning or None). The one rule for data given
    with ``--input NAME=FILE.npy`` (see the module docstring); ``where`` is the file, for messages.

    Raises UserError for a rank or a fixed dim that differs, for an array of another kind than the
    input's, and for integers that do not fit the input's narrower type.
    """
    array = np.asarray(array)
    if dims is not None:
        if len(array.shape) != len(dims):
            raise UserError(f"The array for input {name!r} has {array.ndim} dimensions {list(array.shape)}; the model "
                            f"declares {len(dims)} {_show(dims)}", where, "Give an array of the model's input shape.")
        for axis, (dim, size) in enumerate(zip(dims, array.shape)):
            if not is_dynamic(dim) and int(dim) != size:
                raise UserError(f"The array for input {name!r} has size {size} on axis {axis}; the model "
                                f"expects {dim} (model shape {_show(dims)})", where,
                                "Give an array of the model's input shape (dynamic dims may be any size).")
    if dtype is None:
        return array, None
    want = np.dtype(dtype)
    if want.kind == "O":
        return as_text(name, array, where), None
    if array.dtype.kind in "OUS":
        text = array.dtype.str.lstrip("<>|=")  # U5: numpy's 5-character text, which it names str160
        raise UserError(f"The array for input {name!r} holds text (numpy {text}); the model takes "
                        f"{want.name} numbers", where,
                        f"Save the numbers themselves: np.save(FILE, array.astype(np.{want.name})) once they are "
                        "numbers. Studio does not read numbers out of text.")
    if array.dtype == want:
        return array, None
    have = array.dtype
    fix = f"Save the data as {want.name}: np.save(FILE, array.astype(np.{want.name}))."
    if _kind(have) != _kind(want):
        raise UserError(f"The array for input {name!r} is {have.name}; the model takes {want.name}", where,
                        f"{fix} Studio does not convert between integers, booleans and floats, since that "
                        "changes what the values mean (scale, rounding).")
    if want.kind in "iu" and array.size and not (np.iinfo(want).min <= array.min() and array.max() <= np.iinfo(want).max):
        raise UserError(f"The array for input {name!r} is {have.name} with values in [{array.min()}, {array.max()}], "
                        f"which {want.name} cannot hold", where, fix)
    return array.astype(want), f"input {name!r}: {have.name} array cast to {want.name}, the model's type ({where})"


def as_text(name: str, array: np.ndarray, where: Any) -> np.ndarray:
    """``array`` as ONNX Runtime takes a string input: an object array of ``str``.

    numpy's fixed-width text (``<U``, as ``np.array(["red"])`` or ``astype(str)`` make), bytes
    (``S``, read as UTF-8) and object arrays of ``str``/``bytes`` are accepted; numbers are
    refused (a category is text, and its spelling is part of it).
    """
    array = np.asarray(array)
    kind = array.dtype.kind
    if kind == "U":
        return array.astype(object)
    try:
        if kind == "S":
            return np.char.decode(array, "utf-8").astype(object)
        if kind == "O":
            odd = next((v for v in array.flat if not isinstance(v, (str, bytes))), None)
            if odd is None:
                return np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else v,
                                    otypes=[object])(array) if array.size else array
            raise UserError(f"The array for input {name!r} holds a {type(odd).__name__} ({odd!r}); the model takes "
                            "strings (tensor(string))", where,
                            "Give the text itself: np.save(FILE, np.asarray(values, dtype=str)).")
    except UnicodeDecodeError as exc:
        raise UserError(f"The array for input {name!r} holds bytes that are not UTF-8 text ({exc.reason})", where,
                        "Save the text as str (np.save(FILE, array.astype(str))) in the encoding the model was "
                        "trained on.") from exc
    raise UserError(f"The array for input {name!r} is {array.dtype.name}; the model takes strings (tensor(string))",
                    where, "Give the text itself: np.save(FILE, np.asarray(values, dtype=str)) (numbers are not "
                    "turned into categories).")


def no_random_text(name: str) -> UserError:
    """The refusal of seeded random data for a string input: categories cannot be made up."""
    return UserError(f"Input {name!r} takes strings (tensor(string)): Studio cannot make up its values (random "
                     "text would be no category the model knows)", f"input {name}",
                     f"Give --input {name}=FILE.npy, a numpy string array of the values to run on "
                     f"(np.save(FILE, np.asarray(values, dtype=str))).")


def _kind(dtype: np.dtype) -> str:
    return "int" if dtype.kind in "iu" else dtype.kind  # signed and unsigned integers are one kind


def shapes_with_files(shapes: dict[str, tuple[int, ...]], arrays: dict[str, np.ndarray],
                      option: str = "--input-shape") -> dict[str, tuple[int, ...]]:
    """``shapes`` plus the shape of each given array: a given file fixes its input's shape.
    An input given both ways must agree (UserError otherwise)."""
    merged = dict(shapes)
    for name, array in arrays.items():
        shape = tuple(int(d) for d in np.shape(array))
        if name in merged and tuple(merged[name]) != shape:
            raise UserError(f"The array for input {name!r} has shape {shape}, but {option} says "
                            f"{tuple(merged[name])}", option, "Give one of the two, or make them agree.")
        merged[name] = shape
    return merged


def check_fits(name: str, shape: Sequence[int], dtype) -> None:
    """A UserError when random data of ``shape`` cannot fit this computer's memory (numpy would raise
    a bare ValueError or MemoryError, or the machine would start swapping)."""
    count = math.prod(shape)
    need = count * (8 + np.dtype(dtype).itemsize)  # drawn as float64/int64, then cast
    have = _physical_memory()
    if need > have:
        raise UserError(f"Input {name!r} of shape {_show(shape)} would need {human_size(need)} of random data; this "
                        f"computer has {human_size(have)} of memory", f"--input-shape {name}",
                        "Give smaller sizes for its dynamic axes (e.g. a batch of 1).")


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX (Windows): only refuse the impossible
        return 1 << 47


def session_specs(session: Any) -> list[InputSpec]:
    """The inputs of an ONNX Runtime session as :class:`InputSpec` s."""
    return [InputSpec(i.name, tuple(i.shape), i.type) for i in session.get_inputs()]


def _load(path: Path, spec: InputSpec, dtype, shapes: dict[str, tuple[int, ...]]
          ) -> tuple[np.ndarray, str | None, str]:
    from studio.core.npyfile import load_npy

    array = load_npy(path, what=f"--input {spec.name}", text=True)
    if spec.name in shapes and tuple(array.shape) != tuple(shapes[spec.name]):
        raise UserError(f"The array for input {spec.name!r} has shape {tuple(array.shape)}, but --input-shape "
                        f"says {tuple(shapes[spec.name])}", path, "Give one of the two, or make them agree.")
    conformed, warning = conform_array(spec.name, array, dtype, spec.dims, path)
    return conformed, warning, f"file {path}" + (f" ({array.dtype.name} cast)" if warning else "")


def _listing(names: Collection[str]) -> str:
    return ", ".join(map(repr, names)) or "(none)"


def _show(dims: Sequence) -> str:
    return "[" + ", ".join(str(d) if not is_dynamic(d) else (d if isinstance(d, str) else "?") for d in dims) + "]"


def _example(dims: Sequence) -> str:
    # Fixed dims as they are, open ones as an obvious placeholder the user must replace.
    return ",".join(str(int(d)) if not is_dynamic(d) else "N" for d in dims)
