"""The closed loop on an ONNX model: apply the ticked fixes, profile again with the same settings,
check the accuracy against the original, and report before / after.

Profiles are local ONNX Runtime runs (the profiler's :func:`profile_model`) with the original's
iterations, warm-ups and seed; they give the per-op times before and after. The latency's change
is judged apart, by an interleaved A/B of the two models with the profiler off
(:func:`studio.tools.bench.ab_run.ab_models`): on a shared machine the load alone moves latencies
more than many fixes do (two back-to-back profiles of one classifier read x0.39 and x1.05 in two
runs for a fusion the runtime already does), so the speed-up is reported with its confidence
interval, as "no significant change" when the interval holds 1. Accuracy is every output of both models on the same seeded input,
compared with the accuracy engine's metrics (cosine and the rest, msaccucmp's definitions).
Work files go to ``work`` (default: the user cache), never beside the model.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core import ab
from studio.core.jobs import CancelToken, Progress
from studio.core.serial import from_json, to_json
from studio.tools.advisor.fixes import Applied, apply_fixes

ITERATIONS, WARMUP, SEED = 20, 3, 0


@dataclass
class LoopResult:
    """Before / after: latency, per-op times, per-output accuracy, what was applied."""

    model: str
    fixed: str
    applied: Applied
    before_ms: dict[str, float]
    after_ms: dict[str, float]
    ops: list[dict] = field(default_factory=list)  # name, op_type, before_us, after_us (as profiled, per step)
    outputs: list[dict] = field(default_factory=list)  # output, cosine, max_abs_err, ..., passed
    settings: dict = field(default_factory=dict)
    profiles: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    change: ab.Change | None = None  # the interleaved A/B's judgement of the latency

    __json_extra__ = ("speedup", "accuracy_passed")  # studio.core.serial: derived keys of the JSON form

    @property
    def speedup(self) -> float | None:
        """Before / after median latency: the interleaved A/B's when it ran, else the profiles'."""
        if self.change is not None:
            return self.change.speedup
        b, a = self.before_ms.get("p50"), self.after_ms.get("p50")
        return b / a if b and a else None

    @property
    def significant(self) -> bool | None:
        """Whether the latency changed beyond the noise (None without an A/B)."""
        return None if self.change is None else self.change.significant

    @property
    def accuracy_passed(self) -> bool:
        return all(o["passed"] for o in self.outputs)


    def __str__(self) -> str:
        b, a = self.before_ms, self.after_ms
        lines = [f"{self.applied.describe()} -> {self.fixed}",
                 *(f"WARNING: {w}" for w in self.applied.warnings),
                 f"latency: {change_text(to_json(self))}",
                 f"profiles (per-op times): p50 {b.get('p50', 0):.3f} -> {a.get('p50', 0):.3f} ms "
                 f"({self.settings.get('iterations')} iterations after {self.settings.get('warmup')} warm-ups each)"]
        for o in self.outputs:
            lines.append(f"output {o['output']}: cosine {o['cosine']:.6f}, max abs error {o['max_abs_err']:.4g} -> "
                         f"{'pass' if o['passed'] else 'FAIL'}"
                         + (f" ({', '.join(o.get('violations', []))}; {o['reason']})"
                            if not o["passed"] and o.get("reason") else ""))
        lines.append("top op changes:")
        for r in self.ops[:12]:
            before = f"{r['before_us']:.1f}" if r["before_us"] is not None else "-"
            after = f"{r['after_us']:.1f}" if r["after_us"] is not None else "-"
            lines.append(f"  {r['name'][:48]:<48} {r['op_type'][:14]:<14} {before:>10} us -> {after:>10} us")
        return "\n".join(lines)


def change_text(loop: dict) -> str:
    """The latency's verdict of a loop (:class:`LoopResult` in JSON): the interleaved A/B's change
    with its interval, or — for a report written before the A/B existed — the profiles' medians,
    marked as not judged."""
    if loop.get("change"):
        return from_json(ab.Change, loop["change"]).describe()
    b, a = loop.get("before_ms") or {}, loop.get("after_ms") or {}
    speed = f" (x{loop['speedup']:.2f})" if loop.get("speedup") else ""
    return f"p50 {b.get('p50', 0):.3f} ms -> {a.get('p50', 0):.3f} ms{speed}, not judged: no interleaved A/B"


def work_dir(model: Path) -> Path:
    from studio.core.paths import cache_dir

    digest = hashlib.sha1(str(Path(model).resolve()).encode()).hexdigest()[:10]
    return cache_dir() / "advisor" / "loop" / f"{Path(model).stem}-{digest}"


def settings_of(profile: Path | None) -> dict:
    """Iterations, warm-ups and seed of an earlier local run (its ``studio_profile.json``)."""
    if profile is None:
        return {}
    from studio.tools.profiler.summary_file import read_summary

    data = read_summary(Path(profile))
    settings = {k: data[k] for k in ("iterations", "warmup") if k in data}
    # The inputs that run used, so the loop measures the same shapes (never a guessed dynamic dim).
    used = data.get("inputs") or {}
    files = {name: Path(u["source"][len("file "):]) for name, u in used.items()
             if str(u.get("source", "")).startswith("file ")}
    shapes = {name: list(u["shape"]) for name, u in used.items() if name not in files and "shape" in u}
    if files:
        settings["files"] = files
    if shapes:
        settings["shapes"] = shapes
    return settings


def closed_loop(model: Path, output: Path, fixes: list[str], allow_accuracy_change: bool = False,
                baseline: Path | None = None, iterations: int | None = None, warmup: int | None = None,
                seed: int = SEED, work: Path | None = None,
                cancel: CancelToken | None = None, inputs: dict[str, Path] | None = None,
                shapes: dict[str, list[int]] | None = None,
                budget_s: float = ab.BUDGET_S) -> Generator[Progress, None, LoopResult]:
    """Job: fix ``model`` into ``output``, profile both with the same settings, time them
    interleaved (at most ``budget_s`` seconds), compare outputs.

    ``baseline``: an existing local profile of ``model``; its iterations, warm-ups and input
    shapes / files are reused unless ``inputs`` (.npy files by input name) or ``shapes`` are given.
    Both models are profiled here, back to back, then timed in alternating rounds.
    """
    from studio.tools.bench.ab_run import Side, ab_models

    from studio.tools.advisor.optable import op_table
    from studio.tools.profiler.loader import open_profile
    from studio.tools.profiler.local_run import profile_model

    model, output = Path(model), Path(output)
    work = Path(work) if work is not None else work_dir(model)
    old = settings_of(baseline)
    settings = {"iterations": iterations or old.get("iterations", ITERATIONS),
                "warmup": warmup if warmup is not None else old.get("warmup", WARMUP), "seed": seed}
    files = inputs if inputs else old.get("files", {})
    shapes = shapes if shapes else old.get("shapes", {})
    input_shape = _sized_dynamic_inputs(model, files, shapes)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    applied = yield from _scaled(apply_fixes(model, output, fixes, allow_accuracy_change, cancel, input_shape), 0.0, 0.2)
    seconds["apply"] = time.perf_counter() - t0
    before, after = work / "before", work / "after"
    for side, which, folder, span, note in (("before", model, before, (0.2, 0.45), "before"),
                                             ("after", output, after, (0.45, 0.75), "after, same settings")):
        t0 = time.perf_counter()
        yield Progress(span[0], f"profiling {which.name} ({note})")
        yield from _scaled(profile_model(which, folder, settings["iterations"], settings["warmup"], inputs=files,
                                         seed=seed, cancel=cancel, shapes=shapes), *span)
        seconds[f"profile_{side}"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    yield Progress(0.75, f"timing {model.name} and {output.name} interleaved (profiler off)")
    sizes = {name: tuple(dims) for name, dims in shapes.items()}
    change = yield from _scaled(ab_models(Side(model, files, sizes), Side(output, files, sizes), budget_s,
                                          seed=seed, cancel=cancel), 0.75, 0.85)
    seconds["ab"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    before_trace = yield from open_profile(before, cancel)
    after_trace = yield from open_profile(after, cancel)
    before_ops, after_ops = op_table(before_trace), op_table(after_trace)
    seconds["read_profiles"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    yield Progress(0.85, "checking accuracy against the original")
    outputs = compare_outputs(model, output, seed, cancel, files, shapes)
    seconds["accuracy"] = time.perf_counter() - t0
    result = LoopResult(str(model), str(output), applied, before_ops.latency, after_ops.latency,
                        _op_rows(before_ops, after_ops), outputs, settings,
                        {"before": str(before), "after": str(after),
                         **({"settings_from": str(baseline)} if old else {})}, {k: round(v, 4) for k, v in seconds.items()},
                        change)
    yield Progress(1.0, "loop done")
    return result


def _sized_dynamic_inputs(model: Path, files: dict[str, Path], shapes: dict[str, list[int]]) -> str | None:
    """The converter's ``name:dims;...`` for the model's dynamic inputs, from the given shapes or
    the given files' shapes; a dynamic dim with neither stops here (Studio never guesses it)."""
    import numpy as np

    from studio.tools.profiler.local_inputs import dynamic_dims_error, missing_shapes, model_inputs

    specs = model_inputs(model)
    missing = missing_shapes(specs, files, shapes)
    if missing:
        raise dynamic_dims_error(missing, model)
    entries = []
    for spec in specs:
        if not spec.dynamic_axes:
            continue
        dims = shapes[spec.name] if spec.name in shapes else list(np.load(files[spec.name], mmap_mode="r").shape)
        entries.append(f"{spec.name}:{','.join(str(int(d)) for d in dims)}")
    return ";".join(entries) or None


def _scaled(job, lo: float, hi: float):
    """Run a sub-job, mapping its progress into [lo, hi]."""
    try:
        while True:
            p = next(job)
            yield Progress(None if p.fraction is None else lo + (hi - lo) * p.fraction, p.message)
    except StopIteration as stop:
        return stop.value


def _op_rows(before, after) -> list[dict]:
    b, a = before.by_name(), after.by_name()
    rows = []
    for name in set(b) | set(a):
        ob, oa = b.get(name), a.get(name)
        rows.append({"name": name, "op_type": (ob or oa).op_type,
                     "before_us": round(ob.profiled_us, 3) if ob else None,
                     "after_us": round(oa.profiled_us, 3) if oa else None})
    rows.sort(key=lambda r: -abs((r["before_us"] or 0) - (r["after_us"] or 0)))
    return rows


def compare_outputs(original: Path, fixed: Path, seed: int = SEED, cancel: CancelToken | None = None,
                    files: dict[str, Path] | None = None, shapes: dict[str, list[int]] | None = None) -> list[dict]:
    """Every output of ``fixed`` against ``original`` on one input (the profiler's seeded inputs,
    or the given files / shapes)."""
    import onnxruntime as ort

    from studio.tools.accuracy.metrics import Thresholds, compare_arrays
    from studio.tools.profiler.local_inputs import make_inputs

    from studio.core.ort_session import quiet_options

    options = quiet_options()  # outputs are compared here; ORT's per-run shape warnings would only repeat
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # compare the files, not ORT's rewrites
    s0 = ort.InferenceSession(str(original), options, providers=["CPUExecutionProvider"])
    s1 = ort.InferenceSession(str(fixed), options, providers=["CPUExecutionProvider"])
    feeds = make_inputs(s0, files or {}, seed, shapes or {}, original)
    names = [o.name for o in s0.get_outputs()]
    ref = dict(zip(names, s0.run(None, feeds)))
    got = dict(zip([o.name for o in s1.get_outputs()], s1.run(None, feeds)))
    thresholds = Thresholds()
    rows = []
    for name in names:
        if name not in got:
            rows.append({"output": name, "cosine": float("nan"), "max_abs_err": float("nan"), "passed": False,
                         "reason": "missing in the fixed model"})
            continue
        m = compare_arrays(ref[name], got[name], cancel=cancel)
        bad = thresholds.violations(m)
        rows.append({"output": name, "cosine": m.cosine, "max_abs_err": m.max_abs_err, "rmse": m.rmse,
                     "rel_euclidean": m.rel_euclidean, "passed": not bad, "violations": bad,
                     "target_nonfinite": m.target_nonfinite, "golden_nonfinite": m.golden_nonfinite,
                     "reason": m.reason})
    return rows
