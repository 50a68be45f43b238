"""The FP16 check: dump a model in FP32 and in FP16 simulation on the same input, compare op by op
(``studio fp16-check MODEL [--host NAME]``, the graph's "FP16 check"). Both dumps are the
:mod:`studio.ops.dump` operation, here or on a host; the comparison runs here."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.thresholds import threshold_field
from studio.ops import dump
from studio.ops.engine import RanOn, json_with_ran_on, text_with_ran_on
from studio.ops.inputs import ModelRun
from studio.core.serial import to_json

@dataclass
class Request(ModelRun):
    """An FP16 check of ``model``; ``output`` holds the two dumps and the CSV (None: the user cache)."""

    COMMAND = ("fp16-check",)

    # {limit name: value}; missing ones at their defaults. The five flags are declared in core.thresholds.
    thresholds: dict = threshold_field()

    def folders(self) -> tuple[Path, Path]:
        """(FP32 dump, FP16-simulation dump): ``<output>/<stem>_fp32`` and ``_fp16sim``."""
        from studio.tools.accuracy.fp16_check import fp16_folders

        golden, target = fp16_folders(self.model, None)  # <cache>/accuracy/<stem>_fp32, _fp16sim
        if self.output:
            golden, target = Path(self.output) / golden.name, Path(self.output) / target.name
        return golden, target


@dataclass
class Result:
    """The comparison (a :class:`~studio.tools.accuracy.compare.CompareResult`) and its files."""

    compare: object
    golden: Path
    target: Path
    csv: Path
    warnings: list[str] = field(default_factory=list)
    ran_on: RanOn | None = None

    def __bool__(self) -> bool:
        """The FP16 verdict on the model outputs (the diagnosis), not every inner tensor."""
        diagnosis = getattr(self.compare, "diagnosis", None)
        return bool(diagnosis) if diagnosis is not None else bool(self.compare)

    def to_json(self) -> dict:
        data = to_json(self.compare)
        data.update(golden=str(self.golden), target=str(self.target), csv=str(self.csv), warnings=self.warnings)
        return json_with_ran_on(data, self.ran_on)

    def text(self) -> str:
        lines = [str(self.compare)] + [f"warning: {warning}" for warning in self.warnings]
        lines.append(f"dumps: {self.golden} (FP32), {self.target} (FP16 simulation); table: {self.csv}")
        return text_with_ran_on(lines, self.ran_on)


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None
        ) -> Generator[Progress, None, Result]:
    """Dump ``request.model`` twice, here or on ``where``, and compare the two here."""
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.fp16_check import csv_path, remove_previous_dump
    from studio.tools.accuracy.metrics import Thresholds

    cancel = cancel or CancelToken()
    thresholds = Thresholds.of(request.thresholds)
    golden, target = request.folders()
    on = f" on {where}" if where not in (None, "", "local") else ""
    dumped = None
    for fraction, folder, fp16, label in ((0.0, golden, False, "FP32"), (0.45, target, True, "FP16 simulation")):
        remove_previous_dump(folder)
        yield Progress(fraction, f"dumping {request.model.name} in {label}{on}")
        dumped = yield from dump.run(dump.Request(request.model, folder, request.inputs, request.shapes, request.seed,
                                                  request.providers, request.engine, fp16_sim=fp16),
                                     where, context, cancel)
        cancel.raise_if_cancelled()
    yield Progress(0.9, "comparing FP32 with FP16 simulation")
    result = yield from compare_dumps(golden, target, thresholds=thresholds, cancel=cancel)
    result.write_csv(csv_path(golden))  # the comparison reopens from the workspace
    # The same input and outputs on both sides: the FP32 dump's warnings stand for both.
    from studio.tools.accuracy.dumpset import read_manifest

    warnings = read_manifest(golden).info.get("warnings") or []
    return Result(result, golden, target, csv_path(golden), warnings, dumped.ran_on)
