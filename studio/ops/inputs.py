"""A model's inputs in a request: data files (``--input``), sizes of dynamic dims
(``--input-shape``), the execution providers (``--provider``); and the question a panel asks
before a run when a model has dynamic dims nobody sized (:class:`NeedShapes`: never guessed)."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from studio.core import options
from studio.core.jobs import Progress
from studio.core.model_inputs import input_files
from studio.core.options import option
from studio.ops.engine import EngineOptions


def inputs_from_args(args: argparse.Namespace, model: Path | str | None = None
                     ) -> tuple[dict[str, Path], dict[str, list[int]]]:
    """The ``--input`` files and ``--input-shape`` sizes of parsed arguments.

    A value holding several entries (``a:1,3;b:2``) is read against ``model``'s input names when
    the model is an ONNX file here, since a name may itself hold ``;`` or ``:`` (tf2onnx's
    ``model_1/conv/BiasAdd;model_1/conv/Conv2D:0``); one ``--input-shape NAME=DIMS`` per input
    never needs the model."""
    from studio.core.model_inputs import parse_input_shapes
    from studio.core.shape_text import split_entries

    values = list(getattr(args, "input_shape", []) or [])
    several = any(len(split_entries(value) or ()) > 1 for value in values)
    names = model_input_names(model) if several and model is not None else None
    shapes = {name: list(dims) for name, dims in parse_input_shapes(values, names=names).items()}
    return input_files(getattr(args, "input", []) or []), shapes


def model_input_names(model: Path | str) -> list[str] | None:
    """The input names (not initializers) of an ONNX model file; None for another format or a file
    that cannot be read here (the names are then taken as the text gives them)."""
    path = Path(model)
    if path.suffix.lower() != ".onnx" or not path.is_file():
        return None
    try:
        import onnx

        graph = onnx.load(str(path), load_external_data=False).graph
    except Exception:  # noqa: BLE001 - an unreadable model is reported by the run that opens it
        return None
    weights = {init.name for init in graph.initializer}
    return [value.name for value in graph.input if value.name not in weights]


def load_arrays(inputs: dict[str, Path]) -> dict:
    """The arrays of ``--input`` files (read and checked), for the engines that take arrays."""
    from studio.core.npyfile import load_npy

    return {name: load_npy(Path(file), what=f"--input {name}", text=True) for name, file in inputs.items()}


@contextmanager
def saved_inputs(values: dict | None) -> Iterator[dict[str, Path]]:
    """Input data as files: a dialog's arrays are saved in a temporary folder for the length of
    the ``with`` (a request names files, as the command line does); paths pass as they are."""
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="studio-inputs-") as scratch:
        files: dict[str, Path] = {}
        for index, (name, value) in enumerate(sorted((values or {}).items())):
            if isinstance(value, (str, Path)):
                files[name] = Path(value)
            else:
                files[name] = Path(scratch) / f"input{index}.npy"
                np.save(files[name], value)
        yield files


@dataclass
class NeedShapes:
    """The model has dynamic input dims and no sizes were given: ask, then run again."""

    model: Path
    specs: list  # list[InputSpec], every input (the dialog shows those with dynamic dims)


def need_shapes(model: Path) -> Generator[Progress, None, NeedShapes | None]:
    """:class:`NeedShapes` when ``model`` has input dims only the user can size, else None."""
    from studio.tools.profiler.local_inputs import missing_shapes, model_inputs

    yield Progress(None, f"reading the inputs of {Path(model).name}")
    specs = model_inputs(model)
    return NeedShapes(Path(model), specs) if missing_shapes(specs, {}, {}) else None


def _path(value, _read=None) -> Path | None:
    return Path(value) if value is not None else None


def _shapes(values, read: dict) -> dict[str, list[int]]:
    """``--input-shape`` values, read against the model's input names (see :func:`inputs_from_args`)."""
    return inputs_from_args(argparse.Namespace(input_shape=values), read.get("model"))[1]


def _shape_words(shapes: dict[str, list[int]]) -> list[str]:
    # one option per input: a name may hold ';' or ':' (tf2onnx), the dims follow the last '='
    return [f"{name}={','.join(str(d) for d in dims)}" for name, dims in (shapes or {}).items()]


def count_option(flag: str, default: int, metavar: str, what: str, note: str = ""):
    """An option counting runs of a model (``--loop``, ``--iterations``, ``--warmup``): an int
    whose help says ``what`` it counts and its default (then ``note``)."""
    return option(flag, default=default, type=int, metavar=metavar,
                  help=f"{what} (default {default}{'; ' + note if note else ''})")


@dataclass
class ModelRun:
    """The fields every request that runs an ONNX model has: the model, where its results go,
    its inputs (files by name, sizes of dynamic dims, the seed of random data), the execution
    providers, and how a host's engine is made. Each is declared once with its option
    (:mod:`studio.core.options`); a request whose command words one differently restates it."""

    model: Path = option(type=Path, metavar="MODEL", help="ONNX model", parse=_path, host="model")
    output: Path | None = option("-o", "--output", default=None, type=Path, metavar="DIR", parse=_path,
                                 host="output", help="folder for the two dumps and the CSV (default: the user "
                                                     "cache folder)")
    inputs: dict[str, Path] = option("--input", default_factory=dict, action="append", metavar="NAME=FILE.npy",
                                     parse=lambda values, _read: input_files(values or []), host="inputs",
                                     format=lambda inputs: [f"{name}={file}" for name, file in inputs.items()],
                                     help="data for a model input (repeatable); other inputs get seeded random "
                                          "data")
    shapes: dict[str, list[int]] = option("--input-shape", "--input_shape", default_factory=dict, action="append",
                                          metavar="NAME=D1,D2,...", parse=_shapes, format=_shape_words,
                                          help="sizes for an input with dynamic dims (repeatable; ATC's \"a:1,3;b:2\" "
                                               "works too); seeded random data of that shape")
    seed: int = option("--seed", default=0, type=int, help="seed of the random input data (default 0)")
    providers: list[str] = option("--provider", default_factory=list, action="append", metavar="NAME",
                                  parse=lambda values, _read: list(values or []),
                                  help="ONNX Runtime execution provider, e.g. CUDAExecutionProvider (repeat, in "
                                       "order of preference; default CPU); refused when this onnxruntime does not "
                                       "have it")
    engine: EngineOptions = option(default_factory=EngineOptions, nested=EngineOptions, host="here")

    def to_argv(self) -> list[str]:
        """The ``studio`` arguments of this request (after the command's words)."""
        return options.to_argv(self)

    @classmethod
    def from_args(cls, args: argparse.Namespace):
        """The request the command line's parsed arguments describe."""
        return options.from_args(cls, args)

    def use_providers(self) -> None:
        """Open this process's ONNX Runtime sessions on the request's providers (here)."""
        from studio.core import ort_providers

        ort_providers.choose(self.providers)

    def for_host(self, paths):
        """This request with its files named as on the host (``paths``: a HostPaths)."""
        from studio.ops.host_fields import for_host

        return for_host(self, paths)
