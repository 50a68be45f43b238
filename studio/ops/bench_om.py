"""An .om timed with msame, ais_bench or msit where a target says (``studio bench MODEL.om [--host
NAME] [--compare-with MODEL.onnx]``, the Run panel's "Benchmark .om…"): one path for both.

On a host the model and its input files go up into the ``bench`` work folder first; the tool runs
after the toolkit's set_env.sh (:func:`~studio.ops.toolkit.run_on_toolkit`); its numbers are read
by the bench engine. With ``reference`` the original .onnx is also timed here with ONNX Runtime.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.ops.toolkit import ToolRun, run_on_toolkit


@dataclass
class Request:
    """Time ``model`` (a local .om) with ``tool``; ``output`` is the profiler folder of its result,
    ``reference`` an original .onnx timed here next to it (``shapes`` for its dynamic dims)."""

    COMMAND = ("bench",)

    model: Path
    tool: str = "msame"
    loop: int = 100
    warmup: int = 5
    device: int = 0
    inputs: list[str] = field(default_factory=list)  # input files (.bin / .npy), uploaded with the model
    output: Path | None = None
    reference: Path | None = None
    shapes: dict = field(default_factory=dict)
    reference_output: Path | None = None


def bench_on_target(target, model: str, tool: str = "msame", loop: int = 100, warmup: int = 5, device: int = 0,
                    inputs: list[str] | None = None, output: str | None = None, cwd: str | None = None,
                    cancel: CancelToken | None = None):
    """Benchmark the .om at ``model`` (a path where the target runs) with ``tool``; a BenchResult."""
    from studio.tools.bench.on_target import bench_argv

    run = ToolRun(tool, bench_argv(tool, model, loop, warmup, device, inputs, output), cwd=cwd)
    return (yield from _timed(run, target, model, tool, loop, warmup, device, cancel))


def bench_om(target, model, tool: str = "msame", loop: int = 100, warmup: int = 5, device: int = 0,
             inputs: list | None = None, cancel: CancelToken | None = None) -> Generator[Progress, None, object]:
    """Benchmark a local .om file on ``target``: uploaded into the ``bench`` work folder there first
    (unless the target is this computer), with its input files."""
    from studio.tools.bench.on_target import bench_argv

    model = Path(model)
    if not model.is_file():
        raise UserError("Model not found", model, "Give the path of an .om file.")
    if getattr(target, "is_local", True):
        paths = [str(Path(p).resolve()) for p in inputs or []]
        return (yield from bench_on_target(target, str(model.resolve()), tool, loop, warmup, device, paths,
                                           cancel=cancel))
    files = [Path(item) for item in inputs or []]
    bench_argv(tool, model.name, loop, warmup, device, None, None)  # a bad tool or loop is refused before the upload

    def argv(work: str | None) -> list[str]:
        return bench_argv(tool, f"{work}/{model.name}", loop, warmup, device, [f"{work}/{f.name}" for f in files],
                          None)

    run = ToolRun(tool, argv, work="bench", uploads=[(model, model.name), *((f, f.name) for f in files)])
    result = yield from _timed(run, target, None, tool, loop, warmup, device, cancel)
    result.model = str(model)
    return result


def _timed(run: ToolRun, target, model: str | None, tool: str, loop: int, warmup: int, device: int, cancel):
    """Run the tool and read its numbers (``model``: as the result names it; None: the path it ran)."""
    from studio.tools.bench.on_target import MISSING_FIXES, read_bench

    run.missing_fix = MISSING_FIXES.get(tool, MISSING_FIXES["msame"])
    done = yield from run_on_toolkit(run, target, cancel)
    where = getattr(target, "name", "local")  # the result's ``where``: the host's name, or "local"
    return read_bench(tool, "\n".join(done.lines), model or _model_arg(done.argv), where, device, loop, warmup,
                      done.command)


def _model_arg(argv: list[str]) -> str:
    """The model path in a tool's argv (after --model or --om-model)."""
    for flag in ("--model", "--om-model"):
        if flag in argv:
            return argv[argv.index(flag) + 1]
    return ""


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None,
        target=None) -> Generator[Progress, None, object]:
    """Time the .om as ``request`` says on the host ``where`` (None: this computer) or on ``target``;
    a :class:`~studio.tools.bench.with_reference.BenchPair` (its reference None without one)."""
    from studio.runs.where import target_for_host
    from studio.tools.bench.with_reference import bench_with_reference

    target = target or target_for_host(context, where)
    npu = bench_om(target, Path(request.model), request.tool, request.loop, request.warmup, request.device,
                   request.inputs, cancel=cancel)
    return (yield from bench_with_reference(npu, request.loop, request.warmup, request.output, request.reference,
                                            request.shapes, request.reference_output, cancel=cancel))
