"""Convert an ONNX model with Studio's local passes (shapes, AIPP, fusions, FP16, validation), here
or with Studio's engine on a host (``studio convert MODEL.onnx -o OUT.onnx [--host NAME]``, the
Converter's "run on a host").

On a host the files the conversion reads go up under neutral names, the converted model and its
report come back next to the output, and only the metadata stamps name local paths (the model
records its source and report as they are on this computer); the fetched report is rewritten so
its paths are this computer's.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Generator
from dataclasses import dataclass, replace
from pathlib import Path

from studio.core import options
from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.options import option, restate
from studio.core.serial import to_json
from studio.ops.engine import EngineOptions, RanOn, is_here, json_with_ran_on, run_on_engine, text_with_ran_on
from studio.ops.inputs import ModelRun
from studio.tools.convert.options import ATC_ONLY, ConvertOptions  # ATC's options stay here on a host


@dataclass
class Request:
    """A local (ONNX) conversion: the :class:`~studio.tools.convert.options.ConvertOptions`, and
    the providers its validation runs on. Each option is declared once, on ConvertOptions'
    fields and ModelRun's ``--provider`` (:mod:`studio.core.options`)."""

    COMMAND = ("convert",)

    options: ConvertOptions = option(nested=ConvertOptions)
    providers: list[str] = restate(ModelRun, "providers")
    engine: EngineOptions = option(default_factory=EngineOptions, nested=EngineOptions, host="here")

    def to_argv(self) -> list[str]:
        """The ``studio convert`` arguments of this conversion (every option, so the command does
        exactly what the request says)."""
        return options.to_argv(self)

    @classmethod
    def from_args(cls, args: argparse.Namespace, **given) -> Request:
        """The request the command line's parsed arguments describe (``given``: fields already read)."""
        return options.from_args(cls, args, **given)

    def for_host(self, paths) -> Request:
        o = self.options
        if o.output is None:
            raise UserError("No output path given", "-o/--output", "Give -o OUT.onnx.")
        output = Path(o.output).absolute()
        report = Path(o.report_path()).absolute()
        if report.parent != output.parent:
            raise UserError("On a host the report is written next to the output model", "--report",
                            f"Drop --report, or give a path in {output.parent}.")
        files = {name: Path(paths.file(name.replace("_", "-"), getattr(o, name))) if getattr(o, name) else None
                 for name in ("insert_op_conf", "fusion_switch_file", "validate_image")}
        remote = replace(o, **ATC_ONLY, model=Path(paths.model(o.model)), output=Path(paths.output(output)),
                         report=Path(paths.output(report)), **files,
                         validate_inputs={name: Path(paths.input(file)) for name, file in o.validate_inputs.items()},
                         # The converted model names its source and report as they are on this computer.
                         stamp_source=o.stamp_source or str(Path(o.model).absolute()),
                         stamp_report=o.stamp_report or str(report))
        return replace(self, options=remote, engine=EngineOptions())


@dataclass
class Result:
    """The conversion's :class:`~studio.tools.convert.convert.ConvertReport`, and where it ran."""

    report: object  # ConvertReport
    ran_on: RanOn | None = None

    @property
    def passed(self) -> bool:
        """False when the validation ran and failed (the command then exits 1)."""
        return not (self.report.validation and not self.report.validation["passed"])

    def to_json(self) -> dict:
        return json_with_ran_on(to_json(self.report), self.ran_on)

    def text(self) -> str:
        return text_with_ran_on([self.report.summary()], self.ran_on)


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None
        ) -> Generator[Progress, None, Result]:
    """Convert as ``request`` says, on this computer or on the host ``where``."""
    from studio.tools.convert.convert import ConvertReport, convert_model

    options = request.options
    if is_here(where):
        if options.output is None:
            raise UserError("No output path given", "-o/--output", "Give -o OUT.onnx (or --atc for the NPU).")
        from studio.core import ort_providers

        ort_providers.choose(request.providers)
        from studio.ops.fp16_diagnosis import validation_diagnosis

        return Result((yield from convert_model(options, cancel, diagnose=validation_diagnosis(options.thresholds))))
    if not str(options.model).lower().endswith(".onnx"):
        raise UserError("--host runs ATC there (--atc), or converts an .onnx with Studio's engine there", "--host",
                        "Add --atc --soc-version CHIP, or give an .onnx model.")
    yield Progress(0.0, f"converting {Path(options.model).name} on {where}")
    # Exit 1 = the validation failed: the report still comes back, as here.
    host = yield from run_on_engine(request, where, context, cancel, request.engine, ok_exit=(0, 1),
                                    lock="convert run")
    data = _localize_report(options)
    if data is None:
        tail = "\n".join(host.stderr[-10:])
        raise UserError(f"The conversion on {where} wrote no report:\n{tail}", f"{where}:{host.work}",
                        "Read the host's message above; the same command runs here without a host.")
    known = set(ConvertReport.__dataclass_fields__)
    return Result(ConvertReport(**{k: v for k, v in data.items() if k in known}), host.ran_on)


def _localize_report(options) -> dict | None:
    """Rewrite the fetched report so its paths are this computer's (the host wrote ``in/...`` and
    ``out/...``); the report, or None when the host wrote none (the conversion failed)."""
    output, report = Path(options.output).absolute(), Path(options.report_path()).absolute()
    if not report.is_file():
        return None
    data = json.loads(report.read_text(encoding="utf-8"))
    local = to_json(options)
    local.update(output=str(output), report=str(report))
    data.update(model=str(Path(options.model).absolute()), output=str(output), report_path=str(report),
                options=local)
    tmp = report.with_name(report.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(tmp, report)
    return data


def options_from_args(args: argparse.Namespace) -> ConvertOptions:
    """The ConvertOptions these arguments describe."""
    return options.from_args(ConvertOptions, args)
