"""Profile a model from the GUI: where the run goes, and the job that runs and opens it.

The graph panel's "Profile" (``links.profile_model``) and the profiler's "Profile model…" both
end here: a local ONNX Runtime run (``studio.tools.profiler.local_run``, with the CLI's
defaults) — or Studio's engine on an SSH host (:func:`run_on_host_and_load_job`, the run fetched
back) — into ``<workspace>/profiles/<stem>_<YYYYmmdd-HHMMSS>/``, or the user cache folder when no
workspace is open; then the same load as for any opened profile. A model with dynamic
input dims first returns :class:`NeedShapes`: the panel asks for the sizes and runs again with them
(nothing is set to 1 behind the user's back).
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.jobs import CancelToken, Progress

# The CLI's defaults (`studio profile run`), so a click and a command measure the same thing.
ITERATIONS = 20
WARMUP = 3
SEED = 0


def profile_folder(model: Path, workspace_folder: Path | None, now: dt.datetime | None = None) -> Path:
    """A new, timestamped output folder for a profile of ``model``."""
    from studio.paths import cache_dir

    base = Path(workspace_folder) if workspace_folder is not None else cache_dir()
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    folder = base / "profiles" / f"{Path(model).stem}_{stamp}"
    suffix = 2
    while folder.exists():  # two clicks within a second must not mix their files
        folder = base / "profiles" / f"{Path(model).stem}_{stamp}-{suffix}"
        suffix += 1
    return folder


@dataclass
class NeedShapes:
    """The model has dynamic input dims and no sizes were given: ask, then run again."""

    model: Path
    specs: list  # list[InputSpec], every input (the dialog shows those with dynamic dims)


def _dynamic_inputs(model: Path) -> Generator[Progress, None, NeedShapes | None]:
    """:class:`NeedShapes` when ``model`` has input dims only the user can size, else None."""
    from studio.tools.profiler.local_inputs import missing_shapes, model_inputs

    yield Progress(None, f"reading the inputs of {Path(model).name}")
    specs = model_inputs(model)
    return NeedShapes(Path(model), specs) if missing_shapes(specs, {}, {}) else None


def run_and_load_job(model: Path, out: Path, iterations: int, warmup: int, seed: int,
                     cancel: CancelToken, shapes: dict[str, list[int]] | None = None
                     ) -> Generator[Progress, None, tuple | NeedShapes]:
    """Profile ``model`` into ``out`` and open the result: returns (RunResult, Loaded), or
    :class:`NeedShapes` when ``shapes`` is None and the model has dynamic input dims."""
    from studio.tools.profiler.local_run import profile_model
    from studio.ui.panels.profiler.panel import load_job

    if shapes is None:
        need = yield from _dynamic_inputs(model)
        if need is not None:
            return need
        shapes = {}
    Path(out).parent.mkdir(parents=True, exist_ok=True)  # <workspace>/profiles stays, even after a failed run
    try:
        result = yield from profile_model(model, out, iterations, warmup, seed=seed, cancel=cancel, shapes=shapes)
        cancel.raise_if_cancelled()
    except BaseException:  # cancelled or failed: a half-written folder would open as a broken profile
        shutil.rmtree(out, ignore_errors=True)  # the folder is new (profile_folder never reuses one)
        raise
    loaded = yield from load_job(out, cancel)
    return result, loaded


def latency_line(result) -> str:
    """One line of the run's latency summary, for the status bar and the panel's info label."""
    lat = result.latency()
    shapes = ", ".join(f"{name} {'×'.join(str(d) for d in used.shape) or 'scalar'}"
                       for name, used in result.inputs.items())
    where = f" on {result.host}" if getattr(result, "host", None) else ""
    overhead = result.overhead
    profiled = (f"; profiled runs p50 {result.profiled_latency()['p50']:.3f} ms (profiler overhead {overhead:+.0%})"
                if overhead is not None else "")
    return (f"{result.model.name}{where}: mean {lat['mean']:.3f} ms · p50 {lat['p50']:.3f} · p90 {lat['p90']:.3f} · "
            f"p99 {lat['p99']:.3f} · {result.throughput:.1f} inferences/s with the profiler off{profiled} "
            f"({result.iterations} runs after {result.warmup} warm-ups" + (f"; inputs {shapes})" if shapes else ")"))


def latency_brief(result) -> str:
    """The toolbar's short form (the full line is in its tooltip and the status bar)."""
    lat = result.latency()
    text = f"{_ms(lat['p50'])} p50 · p99 {_ms(lat['p99'])} (profiler off)"
    if result.overhead is not None:
        text += f" · profiler {result.overhead:+.0%}"
    return text


def _ms(value: float) -> str:
    return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"


def run_on_host_and_load_job(context, host: str, model: Path, out: Path, iterations: int, warmup: int, seed: int,
                             cancel: CancelToken, shapes: dict[str, list[int]] | None = None
                             ) -> Generator[Progress, None, tuple | NeedShapes]:
    """The same as :func:`run_and_load_job` with Studio's engine on ``host``: the engine venv is made
    or reused there, the model profiled there, the folder fetched into ``out`` and opened."""
    import json

    import numpy as np

    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_run import model_uploads, run_engine_command
    from studio.runs.where import target_for_host
    from studio.tools.deploy.fetch import folder_fetcher
    from studio.tools.profiler.local_inputs import InputUsed
    from studio.tools.profiler.local_run import RunResult
    from studio.ui.panels.profiler.panel import load_job

    if shapes is None:
        need = yield from _dynamic_inputs(model)
        if need is not None:
            return need
        shapes = {}
    model, out = Path(model), Path(out)
    args = ["profile", "run", f"in/{model.name}", "-o", f"out/{out.name}", "--iterations", str(iterations),
            "--warmup", str(warmup), "--seed", str(seed), "--json"]
    for name, dims in shapes.items():
        args += ["--input-shape", f"{name}={','.join(str(d) for d in dims)}"]
    target = target_for_host(context, host)
    env = yield from ensure_engine(target, cancel)
    out.parent.mkdir(parents=True, exist_ok=True)
    run = yield from run_engine_command(target, env, args, model_uploads(model), out.parent,
                                        fetch=folder_fetcher(target), cancel=cancel)
    cancel.raise_if_cancelled()
    data = json.loads(run.stdout)
    inputs = {name: InputUsed(list(i.get("shape", [])), i.get("dtype", ""), i.get("source", ""))
              for name, i in (data.get("inputs") or {}).items()}
    result = RunResult(out, model, int(data["iterations"]), int(data["warmup"]),
                       [float(x) for x in np.asarray(data.get("latencies_ms", []), dtype=float)], inputs,
                       [float(x) for x in np.asarray(data.get("profiled_latencies_ms", []), dtype=float)])
    result.host = host  # shown in the latency line: where it ran
    loaded = yield from load_job(out, cancel)
    return result, loaded
