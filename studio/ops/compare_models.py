"""An original model against its converted one: both dumped on the same input, compared op by op
through the converter's node mapping (``studio accuracy compare-models ORIGINAL CONVERTED``, the
Converter's "Compare with original").

The original is dumped first (its inputs from ``--input`` files, ``--input-shape`` sizes and the
seed); the converted model then gets the very arrays the original got, where its inputs accept
them as they are (same name and shape); an input that changed (an AIPP model's raw pixels) gets its
own seeded data. The converter's report beside the converted model (``OUT.report.json``) pairs
fused ops with the originals they replace. Both dumps are :mod:`studio.ops.dump` runs, here or
with Studio's engine on a host; the comparison runs here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.options import option, restate
from studio.core.thresholds import threshold_field
from studio.ops import dump, fp16_check
from studio.ops.engine import text_with_ran_on
from studio.ops.inputs import ModelRun, saved_inputs


def _path(value, _read=None) -> Path | None:
    return Path(value) if value is not None else None


@dataclass
class Request(ModelRun):
    """``model`` (the original) against ``converted``; ``output`` holds both dumps and the CSV
    (None: a folder per pair of models under the user cache)."""

    COMMAND = ("accuracy", "compare-models")

    model: Path = restate(ModelRun, "model", metavar="ORIGINAL", help="the original ONNX model (the golden side)")
    output: Path | None = restate(ModelRun, "output", help="folder for both dumps (golden/, target/) and "
                                                           "compare.csv (default: the user cache folder)")
    converted: Path | None = option(default=None, type=Path, metavar="CONVERTED", parse=_path,
                                    help="its converted ONNX model (studio convert's output): fed the arrays the "
                                         "original got; the report beside it pairs fused ops")
    # {limit name: value}; missing ones at their defaults. The five flags are declared in core.thresholds.
    thresholds: dict = threshold_field()

    def folders(self) -> tuple[Path, Path]:
        """(the original's dump, the converted model's dump): ``<output>/golden`` and ``/target``."""
        base = Path(self.output) if self.output else pair_folder(self.model, self.converted)
        return base / "golden", base / "target"


def pair_folder(original: Path, converted: Path, cache: Path | None = None) -> Path:
    """The folder for one pair of models under ``cache`` (default: the user cache folder)."""
    if cache is None:
        from studio.core.paths import cache_dir

        cache = cache_dir()
    key = hashlib.sha1(f"{Path(original).resolve()}|{Path(converted).resolve()}".encode()).hexdigest()[:10]
    return Path(cache) / "accuracy" / f"{Path(converted).stem}-{key}"


@dataclass
class Result(fp16_check.Result):
    """The converted model's dump against the original's (a CompareResult), its files, and the
    converter's report that paired fused ops (None: paired by name). Truthy when the verdict on
    the model outputs passes, as the FP16 check's."""

    mapping: Path | None = None

    def to_json(self) -> dict:
        return {**super().to_json(), "mapping": str(self.mapping) if self.mapping else None}

    def text(self) -> str:
        lines = [str(self.compare)] + [f"warning: {warning}" for warning in self.warnings]
        lines.append(f"ops paired through {self.mapping}" if self.mapping else
                     "no converter report beside the converted model: ops paired by name")
        lines.append(f"dumps: {self.golden} (original), {self.target} (converted); table: {self.csv}")
        return text_with_ran_on(lines, self.ran_on)


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None
        ) -> Generator[Progress, None, Result]:
    """Dump the original, then the converted model on the same arrays (here or on ``where``),
    and compare the two here."""
    from studio.core.errors import UserError
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.fp16_check import remove_previous_dump
    from studio.tools.accuracy.local_dump import reusable_inputs
    from studio.tools.accuracy.matching import find_converter_report, load_mapping
    from studio.tools.accuracy.metrics import Thresholds

    if request.converted is None:
        raise UserError("Which converted model?", "CONVERTED",
                        "Give both models: studio accuracy compare-models ORIGINAL.onnx CONVERTED.onnx")
    cancel = cancel or CancelToken()
    converted = Path(request.converted)
    golden, target = request.folders()
    on = f" on {where}" if where not in (None, "", "local") else ""
    for folder in (golden, target):
        remove_previous_dump(folder)
    yield Progress(0.0, f"dumping {request.model.name}{on}")
    yield from dump.run(dump.Request(request.model, golden, request.inputs, request.shapes, request.seed,
                                     request.providers, request.engine), where, context, cancel)
    cancel.raise_if_cancelled()
    yield Progress(0.45, f"dumping {converted.name} on the same input{on}")
    with saved_inputs(reusable_inputs(golden, converted)) as same:
        dumped = yield from dump.run(dump.Request(converted, target, same, {}, request.seed, request.providers,
                                                  request.engine), where, context, cancel)
    cancel.raise_if_cancelled()
    yield Progress(0.9, f"comparing {converted.name} with {request.model.name}")
    report = find_converter_report(converted)
    result = yield from compare_dumps(golden, target, mapping=load_mapping(report) if report else None,
                                      thresholds=Thresholds.of(request.thresholds), cancel=cancel)
    csv = golden.parent / "compare.csv"
    result.write_csv(csv)
    from studio.tools.accuracy.dumpset import read_manifest

    warnings = read_manifest(golden).info.get("warnings") or []  # the original's input: both sides got it
    return Result(result, golden, target, csv, warnings, dumped.ran_on, report)
