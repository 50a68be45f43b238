"""``quantize``: the whole INT8 job on one model.

1. FP32 outputs on the evaluation samples (the reference every metric is taken against).
2. Calibrate once (ONNX Runtime's calibrator; ranges cached, :mod:`~studio.tools.quantize.build`)
   and list the layers ORT quantised; none is a UserError.
3. Sensitivity of each layer quantised alone, ranked (:mod:`~studio.tools.quantize.sensitivity`).
4. The rollback set for the target by delta debugging, and by sensitivity-ranked binary search
   for comparison (:mod:`~studio.tools.quantize.search`); the smaller set is the answer (ddmin's
   on a tie); ``search`` runs one of them only (``ddmin`` or ``ranked``), said in the notes. A
   target that only rolling back every layer meets is a UserError naming the best accuracy reached
   with a layer still in INT8.
5. FP32, full INT8 and the mixed model: accuracy on the evaluation samples and latency against FP32,
   timed interleaved with repeats.
6. The mixed model written to ``out`` through a temporary file and a rename: nothing half-written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.tools.quantize.build import Builder, Settings, quantised_layers, scratch
from studio.tools.quantize.measure import (TASK_METRICS, Accuracy, Row, accuracy_of, as_judge, min_cosine, run_all,
                                          time_against)
from studio.tools.quantize.search import Checker, Found, Target, search_ddmin, search_ranked
from studio.tools.quantize.sensitivity import Sensitivity, rank_layers


#: The rollback searches ``quantize`` runs: both (compared), or one of them.
SEARCHES = ("both", "ddmin", "ranked")


@dataclass
class QuantizeResult:
    """What ``studio quantize`` found, measured and wrote."""

    model: Path
    out: Path
    ranges: Path
    settings: Settings
    target: str
    calibration_samples: int
    evaluation_samples: int
    reused_ranges: bool
    layers: int                          # layers ORT quantised with nothing rolled back
    sensitivity: list[Sensitivity]
    fallback: list[str]                  # the layers left in floating point (the answer)
    searches: list[Found]                # ddmin and ranked-binary: set sizes and run counts
    table: list[Row]                     # FP32, INT8, mixed
    builds: int = 0
    notes: list[str] = field(default_factory=list)
    ascend: dict | None = None           # the AMCT/ATC files when written
    edited_builds: int = 0               # of ``builds``, those made by editing the quantised graph


def quantize(model: Path, out: Path, calib: list[dict], evaluation: list[dict], settings: Settings,
             target: Target, labels=None, ranges: Path | None = None,
             budget_s: float = 3.0, timing: bool = True, sensitivity: bool = True, search: str = "both",
             cancel: CancelToken | None = None) -> Generator[Progress, None, QuantizeResult]:
    """Job: see the module docstring. ``evaluation`` are the samples judged; ``labels`` their ground
    truth: a class per sample (top-1), or a judge object whose ``measure(outputs)`` gives task
    metrics (mAP, Dice, IoU; built by the operations layer); ``ranges`` the calibration cache
    (default ``OUT.ranges.json``)."""
    import onnx

    model, out = Path(model), Path(out)
    if search not in SEARCHES:
        raise UserError(f"Unknown rollback search {search!r}", "--search", f"Use one of: {', '.join(SEARCHES)}.")
    labels = as_judge(labels)
    if target.metric is not None and (labels is None or target.metric not in labels.metrics):
        raise UserError(f"A {TASK_METRICS[target.metric]} target needs ground truth for it", target.describe(),
                        "Give --truth: image,label rows for top-1, boxes (VOC XML folder or COCO JSON) for mAP, "
                        "a folder of mask PNGs for Dice or IoU.")
    ranges = Path(ranges) if ranges is not None else out.with_name(out.stem + ".ranges.json")
    notes: list[str] = []
    with scratch() as folder:
        work = Path(folder)
        builder = Builder(model, settings, work, work / "ranges.json")
        if ranges.is_file():
            shutil.copyfile(ranges, builder.cache)
        yield Progress(0.02, f"FP32 outputs on {len(evaluation)} sample(s)")
        reference = run_all(model, evaluation)
        fp32 = accuracy_of(reference, reference, labels)
        # every comparison reads the reference in float64 (cosine's precision): converted once, not per candidate
        reference = [[r.astype("float64") if getattr(r, "dtype", None) is not None and r.dtype.kind == "f" else r
                      for r in sample] for sample in reference]
        yield Progress(0.05, f"calibrating ({settings.method}) on {len(calib)} sample(s)")
        full = builder.calibrate(calib)
        candidates = quantised_layers(onnx.load(str(model)), onnx.load(str(full)), settings.op_types)
        if not candidates:
            raise UserError(f"ONNX Runtime quantises no layer of this model (op types looked for: "
                            f"{', '.join(settings.op_types)}{'; excluded: ' + ', '.join(settings.exclude) if settings.exclude else ''})",
                            model, "Quantise other op types (--op-types Conv,MatMul,Add,...) or exclude fewer "
                                   "nodes; a model without such layers gains nothing from INT8.")
        if not builder.enable_edits(full, candidates):
            notes.append("every candidate built by quantize_static, slower: " + (
                "candidates are edited from the quantised graph in the QDQ form only" if settings.format != "qdq"
                else "the quantised graph is outside the rules for editing it (e.g. a weight shared by layers)"))
        int8_outputs = run_all(full, evaluation)
        int8 = accuracy_of(reference, int8_outputs, labels)
        # the samples INT8 does worst on first: a check that fails stops there (cosine targets)
        worst_first = sorted(range(len(evaluation)), key=lambda i: min_cosine([reference[i]], [int8_outputs[i]]))
        ranked: list[Sensitivity] = []
        if sensitivity:
            ranked = yield from _progress(rank_layers(model, candidates, builder, evaluation, reference, labels,
                                                      calib, cancel, target.metric), 0.1, 0.5)
        order = [s.name for s in ranked] or candidates
        yield Progress(0.55, f"searching the fewest layers to roll back for {target.describe()}")
        # one memory of measured sets: a set both searches try is built and run once, counted by each
        measured: dict = {}
        checkers, searches = [], []
        for method, run_search in (("ddmin", lambda c: search_ddmin(c, order, cancel)),
                                   ("ranked", lambda c: search_ranked(c, order))):
            if search in ("both", method):
                checkers.append(Checker(builder, evaluation, reference, labels, target, fp32, cancel, measured,
                                        worst_first))
                searches.append(run_search(checkers[-1]))
        if search != "both":
            notes.append(f"only the {searches[0].method} search ran (--search {search}): the other's set size and "
                         "run count are not measured")
        chosen = min(searches, key=lambda f: (not target.met(f.accuracy, fp32), f.size))
        if not target.met(chosen.accuracy, fp32) or chosen.size == len(candidates) and chosen.size:
            raise UserError(_unreachable(target, fp32, int8, *checkers, candidates), model,
                            "Loosen the target, calibrate on more or more typical samples, or try "
                            "--method entropy|percentile or --per-channel.")
        # the model written is quantize_static's own build; the search's figure was taken on an edited
        # build: the same graph (compared node by node) needs no run, another one is measured again
        mixed = builder.build(chosen.rollback, exact=True)
        written = chosen.accuracy
        if builder.edited and not _same_build(builder.build(chosen.rollback), mixed):
            written = accuracy_of(reference, run_all(mixed, evaluation), labels)
        table = [Row("FP32", str(model), 0, fp32), Row("INT8", "", 0, int8),
                 Row("mixed", str(out), len(chosen.rollback), written)]
        if not _same(written, chosen.accuracy):
            table[2].notes.append(f"the search measured {target.show(chosen.accuracy)} on the edited graph; the "
                                  f"model written (quantize_static) gives {target.show(written)}")
        if timing:
            feeds = evaluation[0]
            table[1].latency = yield from _progress(time_against(model, full, feeds, budget_s, cancel), 0.8, 0.9)
            if chosen.rollback:
                table[2].latency = yield from _progress(time_against(model, mixed, feeds, budget_s, cancel), 0.9, 0.98)
            else:  # nothing rolled back: the mixed model is the INT8 one
                table[2].latency = table[1].latency
                table[2].notes.append("the INT8 model itself: nothing rolled back")
        out.parent.mkdir(parents=True, exist_ok=True)
        _install(mixed, out)
        _install(builder.cache, ranges)
        builds, edited = builder.builds, builder.edited
    yield Progress(1.0, f"{len(chosen.rollback)} of {len(candidates)} layer(s) rolled back; wrote {out.name}")
    return QuantizeResult(model, out, ranges, settings, target.describe(), len(calib), len(evaluation),
                          builder.reused_cache, len(candidates), ranked, chosen.rollback, searches, table, builds,
                          notes, edited_builds=edited)


def _same_build(edited: Path, exact: Path) -> bool:
    import onnx

    from studio.tools.quantize.edit import same_graph

    return same_graph(onnx.load(str(edited)), onnx.load(str(exact)))


def _same(a: Accuracy, b: Accuracy, tolerance: float = 1e-5) -> bool:
    """Two measurements of the same model equal within float tolerance (every metric measured)."""
    pairs = [(getattr(a, k), getattr(b, k)) for k in ("min_cosine", *TASK_METRICS)]
    return all(x is None and y is None or x is not None and y is not None and abs(x - y) <= tolerance
               for x, y in pairs)


def _unreachable(target: Target, fp32: Accuracy, int8: Accuracy, *checkers_and_candidates) -> str:
    *checkers, candidates = checkers_and_candidates
    everything = frozenset(candidates)
    tried = {k: c.accuracy(k) for c in checkers for k in list(c.seen) if k != everything}  # complete: figures said
    best_set, best = max(tried.items(), key=lambda kv: (target.score(kv[1]), -len(kv[0])))
    return (f"No rollback meets the target ({target.describe()}) while a layer stays in INT8: the best reached "
            f"is {target.show(best)} with {len(best_set)} of {len(candidates)} layer(s) rolled back "
            f"(FP32: {target.show(fp32)}; all INT8: {target.show(int8)})")


def _install(source: Path, destination: Path) -> None:
    """Copy ``source`` beside ``destination`` under a temporary name, then rename it into place."""
    tmp = destination.with_name(f".{destination.name}.tmp{os.getpid()}")
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, destination)
    finally:
        tmp.unlink(missing_ok=True)


def _progress(job, start: float, end: float):
    """Run a sub-job, mapping its fractions into ``start..end``; returns its result."""
    try:
        while True:
            step = next(job)
            fraction = None if step.fraction is None else start + (end - start) * step.fraction
            yield Progress(fraction, step.message)
    except StopIteration as stop:
        return stop.value
