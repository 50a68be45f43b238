"""The profiler's "Benchmark model…": what the dialog asked for, as a :mod:`studio.ops.bench`
request; the numbers are those of ``studio bench MODEL.onnx [--host NAME] -o DIR`` (the same
JSON keys: mean_ms, p50_ms, p99_ms, min_ms, max_ms, throughput), and the folder opens like a
profile (its Summary shows them; the Compare tab puts two benchmarks side by side)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.jobs import Progress

from studio.ops.profile import new_folder


@dataclass
class BenchRequest:
    """What the dialog asked for; ``shapes`` holds the sizes typed for dynamic dims (never guessed)."""

    model: Path
    host: str | None = None
    loop: int = 100
    warmup: int = 5
    providers: list[str] = field(default_factory=list)
    shapes: dict[str, list[int]] | None = None

    @property
    def where(self) -> str:
        return self.host or "this computer"

    def request(self, out: Path):
        """The operation's request, writing the benchmark folder ``out``."""
        from studio.ops import bench

        return bench.Request(Path(self.model), Path(out), shapes=dict(self.shapes or {}),
                             providers=list(self.providers), loop=self.loop, warmup=self.warmup)


def bench_folder(model: Path, workspace_folder: Path | None) -> Path:
    """A new, timestamped benchmark folder beside the profiles (``profiles/bench-<model>_<time>``)."""
    return new_folder(model, workspace_folder, prefix="bench-")


def bench_and_load_job(context, request: BenchRequest, out: Path, load, cancel) -> Generator[Progress, None, object]:
    """Benchmark as ``request`` says into ``out`` and open it: (the benchmark's JSON, Loaded), or
    :class:`~studio.ops.inputs.NeedShapes` when the model has dynamic dims and ``request.shapes`` is None."""
    from studio.ops import bench
    from studio.tools.bench.profile_folder import read_bench
    from studio.ui.panels.profiler.local import NeedShapes, op_and_load_job

    outcome = yield from op_and_load_job(bench, request.request(out), request.host, context, request.shapes is None,
                                         load, cancel)
    return outcome if isinstance(outcome, NeedShapes) else (read_bench(out), outcome[1])


def bench_line(bench: dict | None) -> str:
    """One line for the panel's info label: mean, p50, p99 and throughput, and where."""
    if not bench:
        return "benchmark finished"

    def ms(key: str) -> str:
        value = bench.get(key)
        return f"{value:.3f} ms" if isinstance(value, (int, float)) else "n/a"

    throughput = bench.get("throughput")
    rate = f", {throughput:.1f}/s" if isinstance(throughput, (int, float)) else ""
    where = "this computer" if bench.get("where") == "local" else bench.get("where")
    return (f"{Path(str(bench.get('model', ''))).name} with {bench.get('tool')} on {where}: "
            f"mean {ms('mean_ms')}, p50 {ms('p50_ms')}, p99 {ms('p99_ms')}{rate} "
            f"({bench.get('loops')} loops after {bench.get('warmup')} warm-ups)")
