"""Time a model with ONNX Runtime here: K warm-ups, then N timed runs, no profiler attached.

Unlike ``profile run`` this measures the bare ``session.run`` (ORT's profiler adds per-node
overhead), so its numbers are the ones to put next to msame or ais_bench on the NPU.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from pathlib import Path

from studio.core.errors import ToolUnavailable, UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.model_inputs import make_feeds, session_specs
from studio.core.ort_providers import open_session
from studio.core.ort_session import declared_outputs, output_shape_warnings
from studio.tools.bench.result import BenchResult, LatencyStats


def bench_model(model: Path, loop: int = 100, warmup: int = 5, inputs: dict[str, Path] | None = None,
                shapes: dict[str, tuple[int, ...]] | None = None, seed: int = 0,
                providers: list[str] | None = None,
                cancel: CancelToken | None = None) -> Generator[Progress, None, BenchResult]:
    """Run ``model`` ``warmup + loop`` times and return the timed loops' statistics."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ToolUnavailable("benchmark", "onnxruntime is not installed", "pip install onnxruntime") from exc
    model = Path(model)
    if not model.is_file():
        raise UserError("Model not found", model, "Give the path of an .onnx model.")
    if model.suffix.lower() == ".om":
        raise UserError("An .om model runs only on an Ascend NPU", model,
                        "Benchmark it on a host: studio bench MODEL.om --host NAME --tool msame|ais_bench; "
                        "or time the original .onnx here.")
    if loop < 1 or warmup < 0:
        raise UserError("--loop must be >= 1 and --warmup >= 0", f"--loop {loop} --warmup {warmup}",
                        "Use e.g. --loop 100 --warmup 5.")
    yield Progress(0.0, f"loading {model.name}")
    session = open_session(model, providers)
    warnings: list[str] = []
    feeds = make_feeds(session_specs(session), inputs, shapes, seed, warnings)
    batch = _batch(feeds)
    times: list[float] = []
    total = warmup + loop
    step = max(1, total // 100)  # progress at most ~100 times: a yield per run would cost more than tiny models
    for i in range(total):
        if cancel is not None:
            cancel.raise_if_cancelled()
        t0 = time.perf_counter_ns()
        try:
            outputs = session.run(None, feeds)
        except Exception as exc:
            raise UserError(f"Inference failed: {exc}".splitlines()[0], model,
                            "Check the --input arrays and --input-shape sizes.") from exc
        if i >= warmup:
            times.append((time.perf_counter_ns() - t0) / 1e6)
        if i == 0:  # said once here; ORT's own per-run warning is off (quiet_options)
            warnings += output_shape_warnings(declared_outputs(model), [o.name for o in session.get_outputs()],
                                              outputs)
        if (i + 1) % step == 0 or i + 1 == total:
            yield Progress((i + 1) / total, f"{'warm-up' if i < warmup else 'run'} {i + 1}/{total}")
    result = BenchResult("onnxruntime", str(model), "local", device=", ".join(session.get_providers()),
                         loops=loop, warmup=warmup, batch=batch)
    result.warnings = warnings
    result.compute = LatencyStats.of(times)
    result.latencies_ms = times
    total_s = sum(times) / 1000.0
    result.throughput = loop * batch / total_s if total_s else None
    result.notes.append(f"onnxruntime {ort.__version__}, {os.cpu_count()} CPU cores; "
                        "throughput = loops x batch / total time")
    shapes_text = ", ".join(f"{k}: {list(v.shape)}" for k, v in feeds.items())
    result.notes.append(f"inputs {shapes_text}")
    return result


def timed_run(session, feeds: dict, model: Path) -> float:
    """One bare ``session.run`` in milliseconds; an inference error is the user's to fix."""
    t0 = time.perf_counter_ns()
    try:
        session.run(None, feeds)
    except Exception as exc:
        raise UserError(f"Inference failed: {exc}".splitlines()[0], model,
                        "Check the --input arrays and --input-shape sizes.") from exc
    return (time.perf_counter_ns() - t0) / 1e6


def _batch(feeds: dict) -> int:
    # The leading dim of the first input is the batch for throughput; scalars count as 1.
    for array in feeds.values():
        if getattr(array, "ndim", 0) >= 1:
            return int(array.shape[0])
    return 1
