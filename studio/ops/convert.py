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
from dataclasses import dataclass, field, replace
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.ops.engine import EngineOptions, RanOn, is_here, json_with_ran_on, run_on_engine, text_with_ran_on
from studio.ops.inputs import input_files, providers_argv
from studio.tools.convert.options import shape_argv
from studio.core.serial import to_json
from studio.core.thresholds import threshold_argv, thresholds_from_args


@dataclass
class Request:
    """A local (ONNX) conversion: the :class:`~studio.tools.convert.options.ConvertOptions`, and
    the providers its validation runs on."""

    COMMAND = ("convert",)

    options: object  # ConvertOptions
    providers: list[str] = field(default_factory=list)
    engine: EngineOptions = field(default_factory=EngineOptions)

    def to_argv(self) -> list[str]:
        """The ``studio convert`` arguments of this conversion (every local option, so the command
        does exactly what the request says)."""
        o = self.options
        argv = [str(o.model)] + (["-o", str(o.output)] if o.output is not None else [])
        argv += shape_argv(o.input_shape)
        for flag, value in (("--output-type", o.output_type),
                            ("--insert-op-conf", o.insert_op_conf), ("--fusion-switch-file", o.fusion_switch_file),
                            ("--out-nodes", o.out_nodes), ("--report", o.report),
                            ("--validate-image", o.validate_image), ("--stamp-source", o.stamp_source),
                            ("--stamp-report", o.stamp_report)):
            if value is not None and value != "":
                argv += [flag, str(value)]
        argv += [arg for op in o.keep_fp32_ops for arg in ("--keep-fp32", op)]
        argv += [arg for name, file in o.validate_inputs.items() for arg in ("--input", f"{name}={file}")]
        for flag, value in (("--atol", o.atol), ("--rtol", o.rtol)):
            if value is not None:
                argv += [flag, repr(float(value))]
        argv += threshold_argv(o.thresholds)
        if not o.keep_io_types:
            argv.append("--fp16-io")
        argv += [arg for name, on in o.fusions.items() for arg in ("--pass", f"{name}={'on' if on else 'off'}")]
        if o.validate:
            argv.append("--validate")
        return argv + providers_argv(self.providers) + self.engine.to_argv()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Request:
        return cls(options_from_args(args), list(getattr(args, "provider", []) or []), EngineOptions.from_args(args))

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
        remote = replace(o, model=Path(paths.model(o.model)), output=Path(paths.output(output)),
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


# ------------------------------------------------------------------ the command line's options
def pass_switches(items: list[str]) -> dict[str, bool]:
    """``--pass NAME=on|off`` values as {name: on}."""
    from studio.tools.convert.passes import PASS_NAMES

    switches: dict[str, bool] = {}
    for item in items:
        name, sep, state = item.partition("=")
        state = state.strip().lower()
        if not sep or state not in ("on", "off"):
            raise UserError(f"--pass {item!r} is not NAME=on or NAME=off", "--pass",
                            "Example: --pass ConvBnFusion=off")
        if name.strip() not in PASS_NAMES:
            raise UserError(f"Unknown pass {name.strip()!r}", "--pass", "Passes: " + ", ".join(PASS_NAMES))
        switches[name.strip()] = state == "on"
    return switches


def atc_input_shape(values: list[str] | str | None) -> list[str] | str | None:
    """``--input-shape`` values as the converter takes them: one value as it is, several as a list
    (never joined into one string: a name may hold ``;`` or ``:``, tf2onnx's
    ``model_1/conv/BiasAdd;model_1/conv/Conv2D:0``, and only the model's input names can tell
    where it ends). ``NAME=DIMS`` and ATC's ``a:dims;b:dims`` are both read by
    :func:`studio.tools.convert.input_shape.parse_input_shape`."""
    if not values:
        return None
    if isinstance(values, str):
        return values
    return values[0] if len(values) == 1 else list(values)


def model_path(args: argparse.Namespace) -> Path:
    """MODEL, given as the positional argument or as ATC's --model=FILE (not both)."""
    if args.model is not None and args.model_option is not None and args.model != args.model_option:
        raise UserError(f"Two models given: {args.model} and --model={args.model_option}", "MODEL",
                        "Give the model once.")
    model = args.model if args.model is not None else args.model_option
    if model is None:
        raise UserError("No model given", "MODEL", "Run: studio convert MODEL -o OUT.onnx (or --model=MODEL).")
    return model


def options_from_args(args: argparse.Namespace):
    """The ConvertOptions these arguments describe."""
    from studio.tools.convert.atc_command import split_extra_args
    from studio.tools.convert.options import ConvertOptions

    # split on ',' by the converter, which knows the model's op names (a name may hold a comma)
    keep = [value.strip() for value in args.keep_fp32 if value.strip()]
    inputs = input_files(getattr(args, "input", []))
    return ConvertOptions(
        model=model_path(args), output=args.output, framework=args.framework, weight=args.weight,
        soc_version=args.soc_version, input_format=args.input_format, input_shape=atc_input_shape(args.input_shape),
        output_type=args.output_type, insert_op_conf=args.insert_op_conf, fusion_switch_file=args.fusion_switch_file,
        op_debug_level=args.op_debug_level, log=args.log, precision_mode=args.precision_mode, out_nodes=args.out_nodes,
        dynamic_batch_size=args.dynamic_batch_size, dynamic_image_size=args.dynamic_image_size,
        dynamic_dims=args.dynamic_dims, extra_args=split_extra_args(args.extra), keep_fp32_ops=keep,
        keep_io_types=not args.fp16_io, fusions=pass_switches(getattr(args, "passes", [])),
        validate=args.validate or bool(inputs), validate_image=args.validate_image,
        validate_inputs=inputs, atol=args.atol, rtol=args.rtol, report=args.report,
        thresholds=thresholds_from_args(args),
        stamp_source=getattr(args, "stamp_source", None), stamp_report=getattr(args, "stamp_report", None))
