"""The one way an operation runs with Studio's engine on a host.

:func:`run_on_engine` takes any request that can say where its files go on a host
(``for_host(paths)``: a copy of the request naming its inputs ``in/...`` and its outputs
``out/...``), makes or reuses the engine venv there, uploads the inputs, runs ``studio
<COMMAND> <the copy's to_argv()> --json`` there, brings ``out/`` back to where the outputs
were asked for, and returns the host's JSON with every remote path turned into the local one.
No operation writes a remote argument list of its own: the host runs the command line that
would do the same request here.
"""

from __future__ import annotations

import argparse
from collections.abc import Generator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from studio.core import options
from studio.core.errors import UserError
from studio.core.options import option
from studio.core.jobs import CancelToken, Progress

WHEELS = ("index", "upload")


ENGINE_GROUP = "Studio's engine on a host (--host with an .onnx model)"


@dataclass
class EngineOptions:
    """How the host's engine venv is made (``--engine-wheels``, ``--engine-system-site-packages``)."""

    wheels: str = option("--engine-wheels", default="index", choices=list(WHEELS), group=ENGINE_GROUP,
                         emit_default=False, parse=lambda value, _read: value or "index",
                         help="where the host's venv gets numpy/onnx/onnxruntime: its package index (default), or "
                              "wheels downloaded here and uploaded (a host without an index)")
    system_site_packages: bool = option("--engine-system-site-packages", default=False, action="store_true",
                                        group=ENGINE_GROUP, parse=lambda value, _read: bool(value),
                                        help="let the host's engine venv see the host's own packages "
                                             "(e.g. its onnxruntime-gpu)")

    def to_argv(self) -> list[str]:
        return options.to_argv(self)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> EngineOptions:
        return options.from_args(cls, args)


class HostPaths:
    """The names a request's files take in the host's work folder.

    Inputs are uploaded under neutral names (the host never sees a local path); outputs are
    written under ``out/`` and come back to the local paths they stand for, which must share one
    folder (``out/`` is fetched into it)."""

    def __init__(self) -> None:
        self.uploads: dict[str, Path] = {}
        self.outputs: dict[str, Path] = {}
        self.folders: dict[str, Path] = {}  # uploaded folders, named in results as a whole

    def model(self, path: Path) -> str:
        """An .onnx model with its external-data files: ``in/<name>``."""
        from studio.runs.engine_run import model_uploads

        self.uploads.update(model_uploads(Path(path)))
        return f"in/{Path(path).name}"

    def input(self, path: Path) -> str:
        """A ``--input NAME=FILE.npy`` file: ``in/inputs/<i>/<name>``."""
        path = Path(path)
        if not path.is_file():
            raise UserError("Input file not found", path, "Check the path of the .npy file.")
        index = sum(1 for name in self.uploads if name.startswith("in/inputs/"))
        return self._upload(f"in/inputs/{index}/{path.name}", path)

    def file(self, kind: str, path: Path) -> str:
        """Another file the command reads (an AIPP config, a picture): ``in/files/<kind>/<name>``."""
        path = Path(path)
        if not path.is_file():
            raise UserError("File not found", path, f"Check the path given to --{kind}.")
        return self._upload(f"in/files/{kind}/{path.name}", path)

    def folder(self, kind: str, path: Path) -> str:
        """A folder the command reads (pictures, masks): its files as ``in/files/<kind>/<name>/...``
        (they go up in one archive, see :func:`~studio.runs.engine_run.run_engine_command`)."""
        path = Path(path)
        if not path.is_dir():
            raise UserError("Folder not found", path, f"Check the path given to --{kind}.")
        name = f"in/files/{kind}/{path.name}"
        for entry in sorted(path.iterdir()):
            if entry.is_file():
                self._upload(f"{name}/{entry.name}", entry)
        self.folders[name] = path
        return name

    def output(self, path: Path) -> str:
        """A file or folder the command writes: ``out/<name>``, fetched back to ``path``."""
        path = Path(path).absolute()
        if self.outputs and path.parent != self.dest:
            raise UserError("On a host the outputs of one run land in one folder", path,
                            f"Put it in {self.dest}.")
        self.outputs[f"out/{path.name}"] = path
        return f"out/{path.name}"

    @property
    def dest(self) -> Path | None:
        """The local folder ``out/`` comes back into (None: the command writes nothing to keep)."""
        return next(iter(self.outputs.values())).parent if self.outputs else None

    def _upload(self, name: str, path: Path) -> str:
        self.uploads[name] = path
        return name


@dataclass
class RanOn:
    """Where a request ran with Studio's engine: the ``ran_on`` key of ``--json`` with ``--host``."""

    host: str
    engine: str
    engine_reused: bool
    engine_actions: list[str] = field(default_factory=list)
    engine_seconds: float = 0.0
    run_seconds: float = 0.0

    def to_json(self) -> dict:
        return {"host": self.host, "engine": self.engine, "engine_reused": self.engine_reused,
                "engine_actions": list(self.engine_actions), "engine_seconds": self.engine_seconds,
                "run_seconds": self.run_seconds}

    def line(self) -> str:
        """The line the command prints under its text output."""
        return (f"(ran with Studio's engine on {self.host}, {self.engine}; "
                + ("environment reused" if self.engine_reused else "; ".join(self.engine_actions)) + ")")


@dataclass
class HostRun:
    """What the host's command printed (its ``--json``, with local paths) and where it ran."""

    data: dict | list
    ran_on: RanOn
    exit_code: int = 0
    stderr: list[str] = field(default_factory=list)
    work: str = ""
    mapping: dict[str, str] = field(default_factory=dict)  # host path -> local path

    def localize(self, text: str) -> str:
        """``text`` with every host path in it replaced by the local one (longest first)."""
        for remote in sorted(self.mapping, key=len, reverse=True):
            text = text.replace(remote, self.mapping[remote])
        return text


def json_with_ran_on(data: dict, ran_on: RanOn | dict | None) -> dict:
    """A result's ``--json`` object, with the ``ran_on`` key when it ran on a host (a RanOn, or the
    ``ran_on`` object a host's own output carried)."""
    if ran_on is not None:
        data["ran_on"] = ran_on if isinstance(ran_on, dict) else ran_on.to_json()
    return data


def text_with_ran_on(lines: list[str], ran_on: RanOn | None) -> str:
    """A result's text lines, and on a host the line saying where it ran."""
    return "\n".join(lines + ([ran_on.line()] if ran_on is not None else []))


def is_here(where: str | None) -> bool:
    """True when ``where`` names this computer (None, "" or "local")."""
    return where in (None, "", "local")


def host_argv(request) -> tuple[list[str], HostPaths]:
    """The ``studio`` command line the host runs for ``request`` (its own ``to_argv()`` with the
    files named as on the host, and ``--json``), and the files that go up and come back."""
    paths = HostPaths()
    return [*request.COMMAND, *request.for_host(paths).to_argv(), "--json"], paths


def run_on_engine(request, host: str, context, cancel: CancelToken | None = None,
                  engine: EngineOptions | None = None, ok_exit: tuple[int, ...] = (0,),
                  lock: str | None = None) -> Generator[Progress, None, HostRun]:
    """Run ``request`` with Studio's engine on ``host`` and bring its outputs back.

    ``request`` has ``COMMAND`` (the ``studio`` subcommand words), ``to_argv()`` and
    ``for_host(paths)``. ``ok_exit`` lists the exit codes that are results rather than errors
    (``convert`` exits 1 when its validation fails). ``lock`` names the run in the message a
    second run into the same output folder gets (two runs there would mix their files).
    """
    from studio.core.output_lock import output_lock
    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_run import json_output, run_engine_command
    from studio.runs.where import target_for_host
    from studio.targets.transfer.fetch import folder_fetcher

    engine = engine or EngineOptions()
    argv, paths = host_argv(request)
    with ExitStack() as stack:
        target = stack.enter_context(target_for_host(context, host))
        for local in paths.outputs.values():
            stack.enter_context(output_lock(local, lock or f"{request.COMMAND[0]} run"))
        env = yield from ensure_engine(target, cancel, system_site_packages=engine.system_site_packages,
                                       wheels_from=engine.wheels)
        if cancel is not None:
            cancel.raise_if_cancelled()
        if paths.dest is not None:
            paths.dest.mkdir(parents=True, exist_ok=True)
        run = yield from run_engine_command(target, env, argv, paths.uploads, paths.dest,
                                            fetch=folder_fetcher(target), cancel=cancel, ok_exit=ok_exit)
    mapping: dict[str, str] = {}
    for name, local in list(paths.uploads.items()) + list(paths.outputs.items()) + list(paths.folders.items()):
        mapping[f"{run.work}/{name}"] = str(local)
        mapping[name] = str(local)
    ran_on = RanOn(target.where, env.folder, env.reused, list(env.actions), round(env.seconds, 3),
                   round(run.seconds, 3))
    return HostRun(json_output(run, mapping), ran_on, run.exit_code, run.stderr, run.work, mapping)
