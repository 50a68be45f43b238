"""Profile or benchmark a model from the GUI: the operation (:mod:`studio.ops.profile`,
:mod:`studio.ops.bench`) here or on a host, then the same load as any opened profile.

The output goes to ``<workspace>/profiles/<stem>_<YYYYmmdd-HHMMSS>/`` (the user cache folder
without a workspace). A model with dynamic input dims first returns :class:`NeedShapes`: the panel
asks for the sizes and runs again with them (nothing is set to 1 behind the user's back).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.ops.inputs import NeedShapes, need_shapes
from studio.ops.profile import ITERATIONS, WARMUP, new_folder

SEED = 0  # the CLI's defaults (`studio profile run`), so a click and a command measure the same thing

__all__ = ["ITERATIONS", "WARMUP", "SEED", "NeedShapes", "op_and_load_job", "profile_and_load_job", "profile_folder", "latency_line", "latency_brief"]


def profile_folder(model: Path, workspace_folder: Path | None) -> Path:
    """A new, timestamped output folder for a profile of ``model``."""
    return new_folder(model, workspace_folder)


def op_and_load_job(op, request, host: str | None, context, ask: bool, load: Callable, cancel: CancelToken
                    ) -> Generator[Progress, None, tuple | NeedShapes]:
    """Run ``op`` (a :mod:`studio.ops` module) on ``request`` here or on ``host``, then open its
    folder with ``load``: returns (the op's Result, Loaded), or :class:`NeedShapes` when ``ask``
    and the model has dynamic input dims."""
    if ask:
        need = yield from need_shapes(request.model)
        if need is not None:
            return need
    result = yield from op.run(request, host, context, cancel)
    cancel.raise_if_cancelled()
    loaded = yield from load(request.output, cancel)
    return result, loaded


def profile_and_load_job(request, host: str | None, context, ask: bool, load: Callable, cancel: CancelToken
                         ) -> Generator[Progress, None, tuple | NeedShapes]:
    """Profile (:mod:`studio.ops.profile`) and open: (RunResult, Loaded), or :class:`NeedShapes`."""
    from studio.ops import profile

    outcome = yield from op_and_load_job(profile, request, host, context, ask, load, cancel)
    return outcome if isinstance(outcome, NeedShapes) else (outcome[0].run, outcome[1])


def latency_line(result) -> str:
    """One line of the run's latency summary, for the status bar and the panel's info label."""
    lat = result.latency()
    shapes = ", ".join(f"{name} {'×'.join(str(d) for d in used.shape) or 'scalar'}"
                       for name, used in result.inputs.items())
    where = f" on {result.host}" if getattr(result, "host", None) else ""
    profiled = (f"; profiled runs p50 {result.profiled_latency()['p50']:.3f} ms ({_overhead(result)})"
                if result.profiled_latencies_ms else "")
    return (f"{result.model.name}{where}: mean {lat['mean']:.3f} ms · p50 {lat['p50']:.3f} · p90 {lat['p90']:.3f} · "
            f"p99 {lat['p99']:.3f} · {result.throughput:.1f} inferences/s with the profiler off{profiled} "
            f"({result.iterations} runs after {result.warmup} warm-ups" + (f"; inputs {shapes})" if shapes else ")"))


def latency_brief(result) -> str:
    """The toolbar's short form (the full line is in its tooltip and the status bar)."""
    lat = result.latency()
    text = f"{_ms(lat['p50'])} p50 · p99 {_ms(lat['p99'])} (profiler off)"
    change = getattr(result, "overhead_change", None)
    if change is not None:
        text += f" · profiler {change.ratio - 1:+.0%}" + ("" if change.significant else " (noise)")
    return text


def _overhead(result) -> str:
    """The profiler's overhead in a few words: the figure, "within the noise", or not measured."""
    change = getattr(result, "overhead_change", None)
    if change is None:
        return "profiler overhead not measured: too few iterations"
    text = f"profiler overhead {change.ratio - 1:+.0%}, 95 % CI {change.low - 1:+.0%} to {change.high - 1:+.0%}"
    return text + ("" if change.significant else ", within the noise")


def _ms(value: float) -> str:
    return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"
