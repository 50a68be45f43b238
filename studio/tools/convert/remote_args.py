"""The ``studio convert`` command a host's engine runs for a local (ONNX) conversion.

Used by ``studio convert MODEL.onnx --host NAME`` and by the Converter panel's "run on a host":
one place turns :class:`ConvertOptions` into the remote argument list, the files to upload
(model with its external data, AIPP config, fusion switch file, validation inputs and picture)
under neutral names in ``in/``, and the outputs (``out/OUT.onnx`` and its report) with the local
paths they stand for. Only the metadata stamps name local paths (the converted model records its source and report as
they are on this computer); :func:`localize_report` does the same for the fetched report.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from studio.errors import UserError
from studio.serial import to_json
from studio.tools.convert.options import ConvertOptions


@dataclass
class RemoteConvert:
    """What to upload, what to run, what comes back and where it lands."""

    args: list[str]
    uploads: dict[str, Path] = field(default_factory=dict)
    outputs: dict[str, Path] = field(default_factory=dict)  # remote out/... -> local path
    dest: Path = Path(".")
    output: Path = Path(".")
    report: Path = Path(".")


def remote_convert(options: ConvertOptions, model_files: dict[str, Path]) -> RemoteConvert:
    """The engine command for ``options``; ``model_files`` maps ``in/...`` names to the model's files
    (:func:`studio.runs.engine_run.model_uploads`). The report comes back next to the output."""
    if options.output is None:
        raise UserError("No output path given", "-o/--output", "Give -o OUT.onnx.")
    out = Path(options.output).absolute()
    report = Path(options.report_path()).absolute()
    if report.parent != out.parent:
        raise UserError("On a host the report is written next to the output model", "--report",
                        f"Drop --report, or give a path in {out.parent}.")
    uploads = dict(model_files)
    args = ["convert", f"in/{Path(options.model).name}", "-o", f"out/{out.name}", "--report", f"out/{report.name}"]
    for flag, value in (("--input-shape", options.input_shape), ("--output-type", options.output_type),
                        ("--out-nodes", options.out_nodes)):
        if value:
            args += [flag, str(value)]
    for flag, value in (("--atol", options.atol), ("--rtol", options.rtol)):
        if value is not None:
            args += [flag, repr(float(value))]
    for flag, file in (("--insert-op-conf", options.insert_op_conf),
                       ("--fusion-switch-file", options.fusion_switch_file),
                       ("--validate-image", options.validate_image)):
        if file is not None:
            if not Path(file).is_file():
                raise UserError("File not found", file, f"Check the path given to {flag}.")
            name = f"in/files/{flag.strip('-')}/{Path(file).name}"
            uploads[name] = Path(file)
            args += [flag, name]
    for index, (name, file) in enumerate(options.validate_inputs.items()):
        if not Path(file).is_file():
            raise UserError(f"--input {name}: file not found", file, "Check the path of the .npy file.")
        remote = f"in/inputs/{index}/{Path(file).name}"
        uploads[remote] = Path(file)
        args += ["--input", f"{name}={remote}"]
    for keep in options.keep_fp32_ops:
        args += ["--keep-fp32", keep]
    if not options.keep_io_types:
        args.append("--fp16-io")
    args += options.pass_argv()
    if options.validate:
        args.append("--validate")
    # The converted model names its source and report as they are on this computer.
    args += ["--stamp-source", str(Path(options.model).absolute()), "--stamp-report", str(report)]
    return RemoteConvert(args, uploads, {f"out/{out.name}": out, f"out/{report.name}": report}, out.parent, out, report)


def localize_report(plan: RemoteConvert, options: ConvertOptions) -> dict | None:
    """Rewrite the fetched report so its paths are this computer's (the host wrote ``in/...`` and
    ``out/...``); returns the report, or None when the host wrote none (the conversion failed)."""
    if not plan.report.is_file():
        return None
    data = json.loads(plan.report.read_text(encoding="utf-8"))
    local = to_json(options)
    local.update(output=str(plan.output), report=str(plan.report))
    data.update(model=str(Path(options.model).absolute()), output=str(plan.output), report_path=str(plan.report),
                options=local)
    tmp = plan.report.with_name(plan.report.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(tmp, plan.report)
    return data
