"""A model over a folder of pictures, here or on a host (``studio infer``, the gallery's Run…).

* an .onnx here: ONNX Runtime (:func:`studio.tools.infer.runner.run_infer`);
* an .onnx with ``--host``: the same command with Studio's engine there
  (:func:`studio.ops.engine.run_on_engine`), its output folder brought back;
* an .om (with ``--host``, or here where msame / ais_bench are installed): preprocessing,
  post-processing, metrics and overlays here, the model run there by msame or ais_bench
  (:mod:`studio.ops.infer_om`).

Wherever it ran, the output folder holds the same files (results.csv, results.json, overlays/)
and ``--json`` the same keys, plus ``ran_on`` / ``tool`` saying where and with what.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Generator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json
from studio.ops.engine import EngineOptions, RanOn, is_here, json_with_ran_on, run_on_engine
from studio.tools.infer.runner import InferOptions

OM_TOOLS = ("msame", "ais_bench")


@dataclass
class Request(InferOptions):
    """``studio infer`` as a request: the engine's options (``out`` is ``-o``), plus how an .om
    runs and how a host's engine is made."""

    COMMAND = ("infer",)

    tool: str = "msame"      # what runs an .om
    device: int = 0          # the NPU an .om runs on
    engine: EngineOptions = field(default_factory=EngineOptions)

    @property
    def is_om(self) -> bool:
        return self.model.suffix.lower() == ".om"

    def options(self) -> InferOptions:
        """The engine's options of this request (the request itself: it is one)."""
        return self

    def to_argv(self) -> list[str]:
        """The ``studio infer`` arguments of this request (the host is ``--host``)."""
        argv = [str(self.model), str(self.images), "-o", str(self.out)]
        argv += ["--task", self.task] if self.task is not None else []
        for flag, value in (("--labels", self.labels), ("--truth", self.truth), ("--preset", self.preset),
                            ("--resize", self.resize), ("--layout", self.layout), ("--head", self.head)):
            argv += [flag, str(value)] if value is not None else []
        argv += ["--size", f"{self.size[0]}x{self.size[1]}"] if self.size else []
        argv += ["--mean", ",".join(f"{v:g}" for v in self.mean)] if self.mean else []
        argv += ["--std", ",".join(f"{v:g}" for v in self.std)] if self.std else []
        argv += ["--bgr"] if self.bgr else []
        argv += ["--conf", f"{self.conf:g}", "--iou", f"{self.iou:g}", "--top", str(self.top)]
        argv += [] if self.overlays else ["--no-overlays"]
        argv += [arg for name in self.providers or [] for arg in ("--provider", name)]
        argv += ["--tool", self.tool, "--device", str(self.device)] if self.is_om else []
        return argv + self.engine.to_argv()

    @classmethod
    def of(cls, opts: InferOptions) -> Request:
        """The request of engine options (run here, msame for an .om)."""
        return cls(**{f.name: getattr(opts, f.name) for f in fields(InferOptions)})

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Request:
        return cls(Path(args.model), Path(args.images), Path(args.output), args.task, args.labels, args.truth,
                   args.preset, args.resize, args.size, args.bgr, args.layout, args.mean, args.std, args.head,
                   args.conf, args.iou, args.top, not args.no_overlays, list(args.provider or []),
                   args.tool, args.device, EngineOptions.from_args(args))

    def for_host(self, paths) -> Request:
        """This request with its files named as on the host (``paths``: a HostPaths)."""
        def upload(kind: str, path: Path | None) -> Path | None:
            if path is None:
                return None
            return Path(paths.folder(kind, path) if Path(path).is_dir() else paths.file(kind, path))

        return replace(self, model=Path(paths.model(self.model)), images=upload("images", self.images),
                       labels=upload("labels", self.labels), truth=upload("truth", self.truth),
                       out=Path(paths.output(self.out)), engine=EngineOptions())


@dataclass
class Result:
    """The run (:class:`~studio.tools.infer.results.InferResult`), where it ran and with what."""

    infer: object
    ran_on: RanOn | dict | None = None  # a dict for an .om: host, tool, run_seconds
    tool: str | None = None   # msame / ais_bench for an .om

    def to_json(self) -> dict:
        data = json_with_ran_on(to_json(self.infer), self.ran_on)
        if self.tool is not None:
            data["tool"] = self.tool
        return data

    def where_line(self) -> str | None:
        """The line saying where it ran (None here with ONNX Runtime)."""
        if isinstance(self.ran_on, RanOn):
            return self.ran_on.line()
        if self.tool is not None:
            host = self.ran_on["host"] if self.ran_on else "this computer"
            return f"(the .om ran with {self.tool} on {host}; pre- and post-processing here)"
        return None


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None
        ) -> Generator[Progress, None, Result]:
    """Run ``request`` here or on the host ``where`` (see the module docstring)."""
    if request.is_om:
        from studio.ops.infer_om import run_om

        result, ran_on = yield from run_om(request, where, context, cancel)
        return Result(result, ran_on, request.tool)
    if is_here(where):
        from studio.core import ort_providers
        from studio.tools.infer.runner import run_infer

        ort_providers.choose(request.providers)
        return Result((yield from run_infer(request.options(), cancel)))
    host = yield from run_on_engine(request, where, context, cancel, request.engine, lock="infer run")
    return Result(_localized(request, host.data), host.ran_on)


def _localized(request: Request, data: dict):
    """The host's result with local paths, and its results.json rewritten with them (the gallery
    opens the folder: the pictures must be the ones here)."""
    from studio.tools.infer.results import InferResult
    from studio.tools.infer.runner import read_results

    out = Path(request.out)
    (out / "results.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    read_results(out)  # the same format as a local run's, or a clear error
    return InferResult(out, data["images"], data["summary"], data["preprocess"], data.get("notes", []))
