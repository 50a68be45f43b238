"""Two ONNX models timed here with ONNX Runtime, interleaved, and their change judged.

The base and the new model run in alternating rounds (no profiler), so both see the same load of
a shared machine, until the confidence interval of the change is tight enough or the time budget
ends (:func:`studio.core.ab.interleaved`). Each model has its own session, and two sessions of the same
model differ by a couple of percent: the interval includes :data:`studio.core.ab.SESSION_FLOOR`. ``studio bench NEW.onnx --compare-with BASE.onnx``, the
re-timing of ``studio profile compare`` and the advisor's closed loop all use this.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core import ab
from studio.core.jobs import CancelToken, Progress
from studio.core.model_inputs import make_feeds, session_specs


@dataclass
class Side:
    """One model and the inputs it is fed (.npy files by input name; sizes of dynamic dims)."""

    model: Path
    files: dict[str, Path] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)


def ab_models(base: Side, new: Side, budget_s: float = ab.BUDGET_S, precision: float = ab.PRECISION,
              seed: int = 0, providers: list[str] | None = None,
              cancel: CancelToken | None = None) -> Generator[Progress, None, ab.Change]:
    """Job: the change of ``new`` against ``base`` from an interleaved A/B here (profiler off).
    Either side may be any object with ``model``, ``files`` and ``shapes`` (a :class:`Side`)."""
    from studio.tools.bench.ort_bench import open_session

    runs = []
    for side in (base, new):
        yield Progress(None, f"loading {side.model.name}")
        session = open_session(Path(side.model), providers)
        shapes = {name: tuple(int(d) for d in dims) for name, dims in side.shapes.items()}
        feeds = make_feeds(session_specs(session), side.files, shapes, seed)
        runs.append(_timer(session, feeds, Path(side.model)))
    same = Path(base.model).resolve() == Path(new.model).resolve()
    yield Progress(0.0, f"timing {base.model.name} and {new.model.name} interleaved"
                        + (" (the same file on both sides)" if same else ""))
    return (yield from ab.interleaved(runs[0], runs[1], budget_s, precision, floor=ab.SESSION_FLOOR, cancel=cancel))


def _timer(session, feeds: dict, model: Path):
    from studio.tools.bench.ort_bench import timed_run

    return lambda: timed_run(session, feeds, model)
