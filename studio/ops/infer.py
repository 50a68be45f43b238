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
from dataclasses import dataclass, fields, replace
from pathlib import Path

from studio.core import options
from studio.core.jobs import CancelToken, Progress
from studio.core.options import option, restate
from studio.core.serial import to_json
from studio.ops import picture_options
from studio.ops.engine import EngineOptions, RanOn, is_here, json_with_ran_on, run_on_engine
from studio.ops.inputs import ModelRun
from studio.tools.infer.postprocess import HEADS
from studio.tools.infer.runner import TASKS, InferOptions

OM_TOOLS = ("msame", "ais_bench")


def _path(value, _read=None) -> Path | None:
    return Path(value) if value is not None else None


@dataclass
class Request(InferOptions):
    """``studio infer`` as a request: the engine's options (``out`` is ``-o``), plus how an .om
    runs and how a host's engine is made. Each field is declared once with its option
    (:mod:`studio.core.options`)."""

    COMMAND = ("infer",)

    model: Path = option(type=Path, metavar="MODEL", parse=_path,
                         help="an ONNX model, or an .om (run with --tool there)")
    images: Path = option(type=Path, metavar="IMAGES", parse=_path, help="a folder of pictures (or one picture)")
    out: Path = option("-o", "--output", type=Path, required=True, metavar="OUT", parse=_path,
                       help="folder for results.csv, results.json and overlays/")
    task: str | None = option("--task", default=None, choices=TASKS,
                              help="what the model answers (default: from its first output's shape, and said: "
                                   "[N, C, H, W] segment, [N, C] classify, [N, boxes, values] detect)")
    labels: Path | None = option("--labels", default=None, type=Path, metavar="FILE", parse=_path,
                                 help="class names, one per line")
    truth: Path | None = option("--truth", default=None, type=Path, metavar="DIR|FILE", parse=_path,
                                help="ground truth: a labels CSV (classify), a folder of VOC XML or a COCO JSON "
                                     "(detect), a folder of mask PNGs (segment)")
    preset: str | None = picture_options.preset_field()
    resize: str | None = picture_options.resize_field()
    size: tuple[int, int] | None = picture_options.size_field()
    bgr: bool = picture_options.bgr_field()
    layout: str | None = picture_options.layout_field()
    mean: tuple[float, float, float] | None = picture_options.mean_field()
    std: tuple[float, float, float] | None = picture_options.std_field()
    head: str | None = option("--head", default=None, choices=HEADS,
                              help="detection output layout (default: guessed, and said)")
    conf: float = option("--conf", default=0.25, type=float, help="detection score threshold (default 0.25)")
    iou: float = option("--iou", default=0.45, type=float, help="NMS IoU threshold (default 0.45)")
    top: int = option("--top", default=5, type=int, help="classes listed per picture (default 5)")
    overlays: bool = option("--no-overlays", dest="overlays", default=True, action="store_false",
                            help="do not write overlay pictures")
    providers: list[str] | None = restate(ModelRun, "providers")
    tool: str = option("--tool", default="msame", choices=OM_TOOLS, emit_default=False,
                       help="what runs an .om (default msame); found on the host's PATH after its toolkit's set_env.sh")
    device: int = option("--device", default=0, type=int, metavar="ID", emit_default=False,
                         help="NPU device id for an .om (default 0)")
    engine: EngineOptions = option(default_factory=EngineOptions, nested=EngineOptions, host="here")

    @property
    def is_om(self) -> bool:
        return self.model.suffix.lower() == ".om"

    def options(self) -> InferOptions:
        """The engine's options of this request (the request itself: it is one)."""
        return self

    def to_argv(self) -> list[str]:
        """The ``studio infer`` arguments of this request (the host is ``--host``)."""
        return options.to_argv(self)

    @classmethod
    def of(cls, opts: InferOptions) -> Request:
        """The request of engine options (run here, msame for an .om)."""
        return cls(**{f.name: getattr(opts, f.name) for f in fields(InferOptions)})

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Request:
        """The request the command line's parsed arguments describe."""
        return options.from_args(cls, args)

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
