"""The profiler's "Benchmark model…": time an .onnx with ONNX Runtime here, or with Studio's engine
on an SSH host, write the benchmark folder and open it like a profile.

The numbers are those of ``studio bench MODEL.onnx [--host NAME] -o DIR`` (the same engine code,
the same JSON keys: mean_ms, p50_ms, p99_ms, min_ms, max_ms, throughput): the folder's Summary
shows them, and the Compare tab puts two benchmarks side by side (e.g. an .om timed with msame
on the NPU host against its original .onnx timed here).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.jobs import CancelToken, Progress


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


def bench_folder(model: Path, workspace_folder: Path | None, now: dt.datetime | None = None) -> Path:
    """A new, timestamped benchmark folder beside the profiles (``profiles/bench-<model>_<time>``)."""
    from studio.paths import cache_dir

    base = (Path(workspace_folder) if workspace_folder is not None else cache_dir()) / "profiles"
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    folder, suffix = base / f"bench-{Path(model).stem}_{stamp}", 2
    while folder.exists():  # two benchmarks within a second must not share a folder
        folder, suffix = base / f"bench-{Path(model).stem}_{stamp}-{suffix}", suffix + 1
    return folder


def bench_and_load_job(context, request: BenchRequest, out: Path, cancel: CancelToken
                       ) -> Generator[Progress, None, object]:
    """Benchmark as ``request`` says into ``out`` and open it: returns (the benchmark's JSON, Loaded),
    or :class:`~studio.ui.panels.profiler.local.NeedShapes` when the model has dynamic dims and
    ``request.shapes`` is None."""
    from studio.tools.bench.profile_folder import read_bench
    from studio.ui.panels.profiler.local import _dynamic_inputs
    from studio.ui.panels.profiler.panel import load_job

    model, out = Path(request.model), Path(out)
    if request.shapes is None:
        need = yield from _dynamic_inputs(model)
        if need is not None:
            return need
        request.shapes = {}
    if request.host:
        yield from _bench_on_host(context, request, out, cancel)
    else:
        from studio.tools.bench.ort_bench import bench_model
        from studio.tools.bench.profile_folder import write_bench_folder

        shapes = {name: tuple(dims) for name, dims in request.shapes.items()}
        result = yield from bench_model(model, request.loop, request.warmup, shapes=shapes,
                                        providers=request.providers or None, cancel=cancel)
        write_bench_folder(result, out)
    cancel.raise_if_cancelled()
    loaded = yield from load_job(out, cancel)
    return read_bench(out), loaded


def _bench_on_host(context, request: BenchRequest, out: Path, cancel: CancelToken) -> Generator[Progress, None, None]:
    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_run import model_uploads, run_engine_command
    from studio.runs.where import target_for_host
    from studio.tools.deploy.fetch import folder_fetcher

    model = Path(request.model)
    args = ["bench", f"in/{model.name}", "--loop", str(request.loop), "--warmup", str(request.warmup),
            "-o", f"out/{out.name}"]
    for name, dims in (request.shapes or {}).items():
        args += ["--input-shape", f"{name}={','.join(str(d) for d in dims)}"]
    for provider in request.providers:
        args += ["--provider", provider]
    target = target_for_host(context, request.host)
    env = yield from ensure_engine(target, cancel)
    out.parent.mkdir(parents=True, exist_ok=True)
    yield from run_engine_command(target, env, args, model_uploads(model), out.parent,
                                  fetch=folder_fetcher(target), cancel=cancel)
    from studio.tools.bench.profile_folder import relabel_bench_folder

    relabel_bench_folder(out, request.host, model.absolute())


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
