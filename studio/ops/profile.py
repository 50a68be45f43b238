"""Profile an ONNX model with ONNX Runtime, here or with Studio's engine on a host
(``studio profile run MODEL.onnx -o DIR [--host NAME]``, the profiler's "Profile model…")."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.options import restate
from studio.ops.engine import RanOn, is_here, json_with_ran_on, run_on_engine, text_with_ran_on
from studio.ops.inputs import ModelRun, count_option
from studio.core.serial import to_json

#: The CLI's defaults, so a click and a command measure the same thing.
ITERATIONS = 20
WARMUP = 3


def _first_model(models, _read) -> Path:
    return Path((models if isinstance(models, list) else [models])[0])


@dataclass
class Request(ModelRun):
    """One profiling run of ``model`` into the folder ``output``."""

    COMMAND = ("profile", "run")

    # With --host the positional words may be the command msprof profiles (studio.ops.msprof).
    model: Path = restate(ModelRun, "model", nargs="*", type=None, metavar="MODEL | -- CMD",
                          help="an ONNX model; with --host: the command", parse=_first_model)
    output: Path | None = restate(ModelRun, "output", required=True, help="profile folder to write")
    inputs: dict[str, Path] = restate(ModelRun, "inputs", help="input data for one model input (repeat); others "
                                                              "get seeded random data")
    shapes: dict[str, list[int]] = restate(
        ModelRun, "shapes", help="shape of the random data for an input with dynamic dims, e.g. x=1,3,640,640 "
                                 "(repeat; ATC's \"x:1,3,640,640;y:1,8\" works too); required for every dynamic "
                                 "input without --input")
    seed: int = restate(ModelRun, "seed", help="seed of the random inputs")
    iterations: int = count_option("--iterations", ITERATIONS, "N", "measured iterations")
    warmup: int = count_option("--warmup", WARMUP, "K", "warm-up iterations")


@dataclass
class Result:
    """The run's numbers (:class:`~studio.tools.profiler.local_run.RunResult`) and, on a host, where."""

    run: object  # RunResult
    ran_on: RanOn | None = None

    def to_json(self) -> dict:
        return json_with_ran_on(to_json(self.run), self.ran_on)

    def text(self) -> str:
        return text_with_ran_on([self.run.report()], self.ran_on)


def new_folder(model: Path, workspace_folder: Path | None, prefix: str = "", now: dt.datetime | None = None) -> Path:
    """A new, timestamped folder for a run of ``model``: ``<workspace>/profiles/<prefix><stem>_<time>``
    (the user cache folder without a workspace); never one that exists."""
    from studio.core.paths import cache_dir

    base = (Path(workspace_folder) if workspace_folder is not None else cache_dir()) / "profiles"
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    folder, suffix = base / f"{prefix}{Path(model).stem}_{stamp}", 2
    while folder.exists():  # two clicks within a second must not mix their files
        folder, suffix = base / f"{prefix}{Path(model).stem}_{stamp}-{suffix}", suffix + 1
    return folder


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None
        ) -> Generator[Progress, None, Result]:
    """Profile as ``request`` says, on this computer or on the host ``where``."""
    cancel = cancel or CancelToken()
    output = Path(request.output)
    made = not output.exists()
    output.absolute().parent.mkdir(parents=True, exist_ok=True)
    try:
        if is_here(where):
            from studio.tools.profiler.local_run import profile_model

            request.use_providers()
            result = yield from profile_model(request.model, output, request.iterations, request.warmup,
                                              request.inputs, request.seed, cancel=cancel, shapes=request.shapes)
            cancel.raise_if_cancelled()
            return Result(result)
        host = yield from run_on_engine(request, where, context, cancel, request.engine, lock="profile run")
        cancel.raise_if_cancelled()
    except BaseException:  # cancelled or failed: a half-written folder would open as a broken profile
        if made:
            shutil.rmtree(output, ignore_errors=True)
        raise
    return Result(_run_result(host, request), host.ran_on)


def _run_result(host, request: Request):
    """The RunResult the host printed, with this computer's paths."""
    from studio.tools.profiler.local_inputs import InputUsed
    from studio.tools.profiler.local_run import RunResult

    data = host.data
    inputs = {name: InputUsed(list(i.get("shape", [])), i.get("dtype", ""), host.localize(i.get("source", "")))
              for name, i in (data.get("inputs") or {}).items()}
    result = RunResult(Path(request.output).absolute(), Path(request.model), int(data["iterations"]),
                       int(data["warmup"]), [float(x) for x in data.get("latencies_ms", [])], inputs,
                       [host.localize(w) for w in data.get("warnings", [])],
                       [float(x) for x in data.get("profiled_latencies_ms", [])])
    result.host = host.ran_on.host  # the latency line says where it ran
    return result
