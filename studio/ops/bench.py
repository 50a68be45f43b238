"""Time an ONNX model with ONNX Runtime, here or with Studio's engine on a host
(``studio bench MODEL.onnx [--host NAME] [-o DIR]``, the profiler's "Benchmark model…").

The numbers have the same JSON keys wherever they were taken (mean_ms, p50_ms, p99_ms, min_ms,
max_ms, throughput); ``where`` names the host, and a folder written with ``-o`` opens in the
profiler like a profile. (An .om timed with msame or ais_bench is :mod:`studio.tools.bench.on_target`.)
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.options import restate
from studio.ops.engine import RanOn, is_here, json_with_ran_on, run_on_engine, text_with_ran_on
from studio.ops.inputs import ModelRun, count_option
from studio.core.serial import to_json

LOOP = 100
WARMUP = 5


@dataclass
class Request(ModelRun):
    """One benchmark of ``model``; ``output`` (optional) is the folder the profiler opens."""

    COMMAND = ("bench",)

    # The command also times an .om with msame / ais_bench (studio.ops.bench_om): the words are its too.
    model: Path = restate(ModelRun, "model", type=None, help="an .onnx model (ONNX Runtime) or an .om (with --tool)")
    output: Path | None = restate(ModelRun, "output", help="also write the result as a folder the profiler opens "
                                                           "(Summary, Compare)")
    inputs: dict[str, Path] = restate(ModelRun, "inputs", help="data for one input (repeat); msame/ais_bench: FILE "
                                                              "paths, NAME= optional")
    shapes: dict[str, list[int]] = restate(ModelRun, "shapes", metavar="NAME=D0,D1,...",
                                           help="shape of an input with dynamic axes (repeat; ATC's \"a:1,3;b:2\" "
                                                "works too)")
    seed: int = restate(ModelRun, "seed", help="seed of the random input data")
    loop: int = count_option("--loop", LOOP, "N", "timed runs")
    warmup: int = count_option("--warmup", WARMUP, "K", "untimed warm-up runs", "msame always drops only its first run")


@dataclass
class Result:
    """The benchmark (:class:`~studio.tools.bench.result.BenchResult`), its folder, where it ran."""

    bench: object  # BenchResult
    folder: Path | None = None
    ran_on: RanOn | None = None

    def to_json(self) -> dict:
        data = to_json(self.bench)
        if self.folder is not None:
            data["folder"] = str(self.folder)
        return json_with_ran_on(data, self.ran_on)

    def text(self) -> str:
        lines = [self.bench.report()]
        if self.folder is not None:
            lines.append(f"written to {self.folder} (open it in the profiler)")
        return text_with_ran_on(lines, self.ran_on)


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None
        ) -> Generator[Progress, None, Result]:
    """Benchmark as ``request`` says, on this computer or on the host ``where``."""
    from studio.tools.bench.profile_folder import relabel_bench_folder, write_bench_folder

    if is_here(where):
        from studio.tools.bench.ort_bench import bench_model

        request.use_providers()
        shapes = {name: tuple(dims) for name, dims in request.shapes.items()}
        result = yield from bench_model(Path(request.model), request.loop, request.warmup, request.inputs or None,
                                        shapes, request.seed, providers=request.providers or None, cancel=cancel)
        folder = write_bench_folder(result, request.output) if request.output else None
        return Result(result, folder)
    host = yield from run_on_engine(request, where, context, cancel, request.engine, lock="bench run")
    result = bench_from_json(host.data)
    result.where = host.ran_on.host  # the host's engine calls its own machine "local"
    folder = None
    if request.output:
        folder = Path(host.data.get("folder") or Path(request.output).absolute())
        relabel_bench_folder(folder, host.ran_on.host, Path(request.model).absolute())
    return Result(result, folder, host.ran_on)


def bench_from_json(data: dict):
    """The BenchResult whose :meth:`~studio.tools.bench.result.BenchResult.as_dict` is ``data``."""
    from studio.tools.bench.result import BenchResult, LatencyStats

    def stats(values: dict | None) -> LatencyStats | None:
        return None if values is None else LatencyStats(values.get("mean"), values.get("median"), values.get("p99"),
                                                        values.get("min"), values.get("max"))

    return BenchResult(data["tool"], data["model"], data.get("where", "local"), data.get("device", ""),
                       data.get("loops", 0), data.get("warmup", 0), data.get("batch", 1),
                       LatencyStats(data.get("mean_ms"), data.get("p50_ms"), data.get("p99_ms"), data.get("min_ms"),
                                    data.get("max_ms")),
                       data.get("throughput"), stats(data.get("h2d_ms")), stats(data.get("d2h_ms")),
                       list(data.get("latencies_ms") or []), list(data.get("notes") or []),
                       list(data.get("warnings") or []), data.get("command", ""))
