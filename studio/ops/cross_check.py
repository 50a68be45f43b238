"""Here against a host: dump a model on this computer (ONNX Runtime, CPU) and with Studio's engine
on a host (e.g. with its GPU provider) on the same input, and compare the host's dump against this
computer's: is the other machine's run the same model? (``studio cross-check MODEL --host NAME``,
the accuracy panel's "Compare here and on a host…".)"""

from __future__ import annotations

import re
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.ops import dump
from studio.ops.engine import RanOn, is_here, json_with_ran_on, text_with_ran_on
from studio.ops.inputs import ModelRun
from studio.core.serial import to_json


@dataclass
class Request(ModelRun):
    """Dump ``model`` here and on a host, compare; ``output`` holds both dumps and the CSV
    (None: the user cache); ``providers`` are the host's."""

    COMMAND = ("cross-check",)  # the host is --host, the command's own option

    def folders(self, host: str) -> tuple[Path, Path]:
        """(dump made here, dump made on ``host``): ``<output>/<stem>_here`` and ``_on_<host>``."""
        from studio.core.paths import cache_dir

        base = Path(self.output) if self.output else cache_dir() / "accuracy"
        stem, tag = Path(self.model).stem, re.sub(r"[^\w.-]", "_", host)
        return base / f"{stem}_here", base / f"{stem}_on_{tag}"


@dataclass
class Result:
    """The host's dump against this computer's (a CompareResult), and the files."""

    compare: object
    here: Path
    there: Path
    csv: Path
    ran_on: RanOn | None = None

    def __bool__(self) -> bool:
        return bool(self.compare)

    def to_json(self) -> dict:
        data = to_json(self.compare)
        data.update(here=str(self.here), there=str(self.there), csv=str(self.csv))
        return json_with_ran_on(data, self.ran_on)

    def text(self) -> str:
        lines = [str(self.compare), f"dumps: {self.here} (here), {self.there} (on the host); table: {self.csv}"]
        return text_with_ran_on(lines, self.ran_on)


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None
        ) -> Generator[Progress, None, Result]:
    """Dump here, dump on the host ``where``, compare the host's against this computer's."""
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.fp16_check import remove_previous_dump

    if is_here(where):
        raise UserError("A cross-check compares this computer with a host", "--host",
                        "Give the host: --host NAME (see studio ssh list).")
    cancel = cancel or CancelToken()
    here, there = request.folders(where)
    for folder in (here, there):
        remove_previous_dump(folder)
    yield Progress(0.0, f"dumping {request.model.name} here")
    yield from dump.run(dump.Request(request.model, here, request.inputs, request.shapes, request.seed),
                        None, None, cancel)
    cancel.raise_if_cancelled()
    yield Progress(0.5, f"dumping {request.model.name} on {where}")
    dumped = yield from dump.run(dump.Request(request.model, there, request.inputs, request.shapes, request.seed,
                                              request.providers, request.engine),
                                 where, context, cancel)
    cancel.raise_if_cancelled()
    yield Progress(0.9, f"comparing {where} with this computer")
    result = yield from compare_dumps(here, there, cancel=cancel)
    csv = here.parent / f"{here.name}_vs_{there.name}.csv"
    result.write_csv(csv)
    return Result(result, here, there, csv, dumped.ran_on)
