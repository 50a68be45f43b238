"""Gains a reader can act on: measured where the fix can be tried here, labelled estimates elsewhere.

A rule's gain is first an estimate (the profiled time of the ops a fix removes, say) — an upper
bound at best: ONNX Runtime's NCHWc reorders cost time, yet the convolutions they enable save more.
So where the model is an ONNX file profiled here with ONNX Runtime, each finding whose estimate
would rate it ``medium`` or ``high`` has its *lever* tried (:func:`measure`): the converter's fix
applied to a copy, or the ONNX Runtime setting the advice names, timed against the original in an
interleaved A/B (:mod:`.ab`) on the profile's inputs. :func:`judge` then sets every finding's
severity by one policy:

* a measured, significant saving: severity from its share of the A/B's baseline time;
* a measured slowdown: the advice is reversed (keep what is there), the fix is no longer offered,
  severity ``low``;
* no significant change: severity ``low``, the interval said;
* a gain or cost that was not measured: an estimate, labelled with its method, ``medium`` at most.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json
from studio.tools.advisor.model import ESTIMATE, HIGH, LOW, MEASURED, MEDIUM, STUDIO, Finding, severity_for

ORT_PREFIX = "ort:graph_optimization_level="
LEVER_LABELS = {f"{ORT_PREFIX}ORT_ENABLE_EXTENDED":
                "ONNX Runtime without its layout optimisation (graph_optimization_level=ORT_ENABLE_EXTENDED, "
                "so no NCHWc reorders)"}


def lever_of(finding: Finding) -> str | None:
    """What trying the finding's advice changes: its ``lever``, else its automatic fix."""
    return finding.lever or (f"fix:{finding.fix}" if finding.fix else None)


def lever_label(lever: str) -> str:
    if lever.startswith("fix:"):
        return f"the fix {lever[4:]} applied by the converter"
    return LEVER_LABELS.get(lever, lever)


def worth_measuring(finding: Finding, step_ms: float | None) -> bool:
    """A finding whose estimate alone would rate it ``medium`` or ``high``."""
    return finding.source == STUDIO and lever_of(finding) is not None and \
        severity_for(finding.gain_ms if finding.gain_ms is not None else finding.cost_ms, step_ms) != LOW


def measure(model: Path, findings: list[Finding], step_ms: float | None, files: dict[str, Path],
            shapes: dict[str, list[int]], seed: int = 0, budget_s: float = 10.0,
            cancel: CancelToken | None = None) -> Generator[Progress, None, dict[str, dict]]:
    """Job: A/B-time the lever of every finding worth measuring against ``model`` as it is; sets
    each such finding's ``measurement``. Returns the measurements by lever (each lever once)."""
    chosen = [f for f in findings if worth_measuring(f, step_ms)]
    done: dict[str, dict] = {}
    if not chosen:
        return done
    with tempfile.TemporaryDirectory(prefix="studio-advise-") as work:
        for k, finding in enumerate(chosen):
            lever = lever_of(finding)
            if lever not in done:
                from studio.tools.advisor.loop import _scaled

                yield Progress(k / len(chosen), f"measuring: {lever_label(lever)}")
                done[lever] = yield from _scaled(_measure_lever(model, lever, Path(work), files, shapes, seed,
                                                                budget_s, cancel), k / len(chosen), (k + 1) / len(chosen))
            finding.measurement = done[lever]
    return done


def _measure_lever(model: Path, lever: str, work: Path, files, shapes, seed: int, budget_s: float,
                   cancel) -> Generator[Progress, None, dict]:
    from studio.core.errors import UserError
    from studio.core import ab

    t0 = time.perf_counter()
    variant, options, applied = model, {}, None
    try:
        if lever.startswith("fix:"):
            from studio.tools.advisor.fixes import apply_fixes
            from studio.tools.advisor.loop import _sized_dynamic_inputs

            variant = work / f"{lever[4:]}.onnx"
            done = yield from apply_fixes(model, variant, [lever[4:]], allow_accuracy_change=True, cancel=cancel,
                                          input_shape=_sized_dynamic_inputs(model, files, shapes))
            applied = {"fixes": done.fixes, "passes": done.passes, "swapped": len(done.swapped)}
        elif lever.startswith(ORT_PREFIX):
            options["graph_optimization_level"] = lever[len(ORT_PREFIX):]
        else:
            return {"lever": lever, "error": "unknown lever"}
        base = _timer(model, {}, files, shapes, seed)
        new = _timer(variant, options, files, shapes, seed)
        change = yield from ab.interleaved(base, new, budget_s=budget_s, floor=ab.SESSION_FLOOR, cancel=cancel)
    except UserError as exc:
        return {"lever": lever, "label": lever_label(lever), "error": str(exc)}
    return {"lever": lever, "label": lever_label(lever), "change": to_json(change), "describe": change.describe(),
            "applied": applied, "seconds": round(time.perf_counter() - t0, 3)}


def _timer(model: Path, options: dict, files, shapes, seed: int):
    """A function running ``model`` once (ONNX Runtime, no profiler) and returning its ms."""
    import onnxruntime as ort

    from studio.core import ort_providers
    from studio.core.model_inputs import make_feeds, session_specs

    so = ort.SessionOptions()
    so.log_severity_level = 4
    if "graph_optimization_level" in options:
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, options["graph_optimization_level"])
    try:
        session = ort.InferenceSession(str(model), so, providers=ort_providers.chosen())
    except Exception as exc:  # noqa: BLE001 - ORT raises its own types
        from studio.core.errors import UserError
        from studio.core.ortmsg import ort_message

        raise UserError(f"ONNX Runtime cannot load the model: {ort_message(exc)}", model,
                        "The change cannot be measured on this model.") from exc
    feeds = make_feeds(session_specs(session), files, {k: tuple(v) for k, v in shapes.items()}, seed)

    def run() -> float:
        t = time.perf_counter_ns()
        try:
            session.run(None, feeds)
        except Exception as exc:  # noqa: BLE001 - ORT raises its own types
            from studio.core.errors import UserError
            from studio.core.ortmsg import ort_message

            raise UserError(f"Inference failed: {ort_message(exc)}", model, "The change cannot be measured.") from exc
        return (time.perf_counter_ns() - t) / 1e6
    return run


def judge(findings: list[Finding]) -> list[Finding]:
    """Set severities and gain labels by the policy above; returns the findings (same list)."""
    for f in findings:
        if f.source != STUDIO:
            continue
        m = f.measurement
        if m and "change" in m:
            _judge_measured(f, m)
            continue
        if m and m.get("error"):
            f.evidence.append(f"could not measure {m['label']}: {m['error']}")
        if f.gain_ms is not None or f.cost_ms is not None:
            _judge_estimate(f)
    return findings


def _judge_measured(f: Finding, m: dict) -> None:
    c = m["change"]
    base = c["base_median_ms"]
    f.gain_basis = MEASURED
    f.gain_method = f"{m['label']}, timed against the model as it is: {m['describe']}"
    if c["significant"] and c["ratio"] < 1.0:
        f.gain_ms = base - c["new_median_ms"]
        f.severity = severity_for(f.gain_ms, base)
        f.evidence.append(f"measured here: {m['label']} saves {f.gain_ms:.3f} ms per inference "
                          f"({-c['change_pct']:.1f} % of {base:.3f} ms; {m['describe']})")
        return
    f.severity = LOW
    if c["significant"]:  # slower: the advice would hurt here
        f.gain_ms = None
        f.evidence.append(f"measured here: {m['label']} is {c['change_pct']:.1f} % SLOWER ({m['describe']})")
        f.title += f" (measured: the suggested change is {c['change_pct']:.0f} % slower)"
        f.recommendation = (f"Keep the model and runtime as they are: {m['label']} made it {c['change_pct']:.0f} % "
                            f"slower here (interleaved A/B, {c['base_median_ms']:.3f} -> {c['new_median_ms']:.3f} ms)."
                            f" Earlier advice, not confirmed: {f.recommendation}")
        f.fix = None  # no longer offered to --apply
    else:
        f.gain_ms = 0.0
        f.evidence.append(f"measured here: {m['label']} makes no significant difference ({m['describe']})")


def _judge_estimate(f: Finding) -> None:
    if f.gain_ms is not None:
        f.gain_basis = ESTIMATE
        f.gain_method = f.gain_method or "the profiled time of the ops concerned (an upper bound, not measured)"
    if f.severity == HIGH:
        f.severity = MEDIUM
        what = "gain" if f.gain_ms is not None else "cost"
        f.evidence.append(f"severity medium, not high: the {what} is an estimate ({f.gain_method or 'profiled time'}), "
                          "not measured with the change applied" + ("" if f.fix or f.lever else
                                                                     " (there is no automatic change to try here)"))
