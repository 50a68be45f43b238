"""The smallest set of ops to keep in FP32 so that a model passes in FP16 (simulation).

1. Candidates: the ops whose output fails in the FP16 simulation (non-finite where FP32 is
   finite, or a broken limit), plus the ops whose output underflows (non-zero in FP32, 0 in FP16),
   in graph order. If keeping all of them in FP32 still fails, every float op is a candidate.
2. Delta debugging (Zeller's ddmin) over the candidates: drop halves, then quarters, ... while
   the model still passes with the rest kept.
3. Minimality is then checked: removing any single op of the set makes the model fail again.

A check is one run of the model in FP16 simulation with the set kept; the result counts them.
The set is written as ``keep_fp32.txt`` (one node name a line, for ``studio convert
--keep-fp32``), ``keep_dtype.cfg`` (ATC ``--keep_dtype``: one op name a line) and
``modify_mixlist.json`` (ATC ``--modify_mixlist``: their op types on the black list, for
``--precision_mode allow_mix_precision``).
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.ddmin import ddmin as _ddmin  # shared with the INT8 rollback search
from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json
from studio.tools.accuracy.metrics import Thresholds
from studio.tools.accuracy.diagnosis import Diagnosis
from studio.tools.accuracy.fp16_runs import diagnose_runs, judge, load_and_run, mask_names


@dataclass
class PrecisionResult:
    """The set found, how it was found and where it was written."""

    keep: list[str]
    keep_types: list[str]
    candidates: int
    checks: int
    minimal: bool
    outputs_before: dict[str, str]
    outputs_after: dict[str, str]
    folder: Path
    notes: list[str] = field(default_factory=list)
    target: str = "fp16-sim"
    target_runs: int = 0  # every run on the target: the first one and each check
    # the set judged on the converter's default-pass build (studio.ops.fp16_target.check_default_build),
    # where the search's builds had the fusion passes off; None: not checked
    default_build: dict | None = None
    diagnosis: Diagnosis | None = None  # the model's FP16 diagnosis before any op is kept (one for every tool)

    __json_rename__ = {"keep": "keep_fp32", "keep_types": "op_types",  # studio.core.serial: the JSON keys
                       "default_build": "default_build_check"}


class _Checker:
    """Runs the model on the target with a kept set and judges its outputs against FP32 (and, for
    a target whose outputs can hide an FP16 failure, every dumped tensor: see ``fp16_onnx``)."""

    def __init__(self, model, feeds, golden_outputs, thresholds, runner=None, golden=None):
        self.model, self.feeds, self.golden, self.thresholds = model, feeds, golden_outputs, thresholds
        self.runner, self.every_tensor = runner, golden
        self.checks = 0
        self.masks: set[str] = set()  # attention-mask tensors: saturate by design, never an inner failure
        self._seen: dict[frozenset, dict[str, str]] = {}

    def verdicts(self, keep: frozenset[str]) -> dict[str, str]:
        """Output name -> "passes" or why it fails, with ``keep`` in FP32; for a target judged on
        its dump, also the first inner tensors that fail."""
        if keep not in self._seen:
            names = list(self.golden)
            if self.runner is None or not self.runner.judges_inner:
                outs = self._simulated(keep, names)
                inner = {}
            else:
                from studio.tools.accuracy.fp16_onnx import inner_failures

                outs = self.runner.run(self.model, self.feeds, True, keep)
                inner = inner_failures(self.every_tensor, outs, masks=self.masks)
            self.checks += 1
            verdicts = {n: judge(self.golden[n], outs[n], self.thresholds) for n in names}
            self._seen[keep] = {**{n: v.reason if v.failed else "passes" for n, v in verdicts.items()},
                                **{f"{n} (inside)": why for n, why in inner.items()}}
        return self._seen[keep]

    def _simulated(self, keep: frozenset[str], names: list[str]) -> dict[str, np.ndarray]:
        import onnxruntime as ort

        from studio.core.ort_session import quiet_options
        from studio.tools.accuracy.fp16_sim import simulate_fp16

        if self.runner is not None:
            self.runner.target_runs += 1
        sim = simulate_fp16(self.model, keep)[0]
        session = ort.InferenceSession(sim.SerializeToString(), quiet_options(), providers=["CPUExecutionProvider"])
        with np.errstate(all="ignore"):
            return dict(zip(names, session.run(names, self.feeds)))

    def passes(self, keep) -> bool:
        return all(v == "passes" for v in self.verdicts(frozenset(keep)).values())


def find_fp32_set(model_path: Path | str, out_dir: Path | str, inputs: dict[str, np.ndarray] | None = None,
                  seed: int = 0, thresholds: Thresholds | None = None, cancel: CancelToken | None = None,
                  runner=None) -> Generator[Progress, None, PrecisionResult]:
    """Job: the minimal FP32 set of ``model_path`` (see the module docstring), written under ``out_dir``;
    the target is ``runner``'s (FP16 simulation by default, as in :func:`~studio.tools.accuracy.reduce.reduce_fp16`)."""
    thresholds = thresholds or Thresholds()
    model_path, out_dir = Path(model_path), Path(out_dir)
    yield Progress(0.05, "running the model in FP32 and on the target")
    model, feeds, runner, golden, target = load_and_run(model_path, inputs, seed, runner)
    comparison = yield from diagnose_runs(model, golden, target, thresholds, runner, cancel)
    outputs = [o.name for o in model.graph.output]
    checker = _Checker(model, feeds, {n: golden[n] for n in outputs}, thresholds, runner, golden)
    checker.masks = mask_names(comparison)
    before = checker.verdicts(frozenset())
    if all(v == "passes" for v in before.values()):
        raise UserError(f"The model already passes on the target ({runner.label}): no op needs FP32. "
                        f"{comparison.diagnosis.message} Thresholds: {comparison.diagnosis.thresholds_text()}",
                        model_path, "Nothing to keep; give stricter thresholds (--cosine, --rel-euclidean, ...) or "
                                    "the input that fails.")
    candidates = _candidates(model, golden, target, thresholds, mask_names(comparison))
    notes = []
    if not checker.passes(candidates):
        notes.append(f"keeping the {len(candidates)} op(s) that fail was not enough: every float op was a candidate")
        candidates = [n.name for n in model.graph.node if any(o in golden and golden[o].dtype.kind == "f"
                                                               for o in n.output)]
        if not checker.passes(candidates):
            still = "; ".join(f"{name}: {why}" for name, why in checker.verdicts(frozenset(candidates)).items()
                              if why != "passes")
            raise UserError(f"Even with every op in FP32 the model fails on the target ({runner.label}; its inputs "
                            f"are rounded): {still}. Thresholds: {comparison.diagnosis.thresholds_text()}",
                            model_path, "The inputs themselves lose too much in FP16: feed them in FP32, or loosen "
                                        "the threshold they break (e.g. --rel-euclidean 0.1) if that loss is "
                                        "acceptable.")
    yield Progress(0.3, f"{len(candidates)} candidate op(s); searching the smallest set")
    keep = _ddmin(candidates, checker.passes, cancel)
    minimal = all(not checker.passes(set(keep) - {op}) for op in keep)
    types = sorted({n.op_type for n in model.graph.node if n.name in keep})
    after = checker.verdicts(frozenset(keep))
    result = PrecisionResult(keep, types, len(candidates), checker.checks, minimal, before, after, out_dir, notes,
                             runner.target, runner.target_runs, diagnosis=comparison.diagnosis)
    write_result(out_dir, result, model_path)
    yield Progress(1.0, f"{len(keep)} op(s) in FP32 make the model pass ({checker.checks} checks)")
    return result


def _candidates(model, golden, target, thresholds, masks: set[str] = frozenset()) -> list[str]:
    """Ops whose output fails or underflows in FP16, in graph order (attention masks, which
    saturate by design, are not candidates)."""
    out = []
    for node in model.graph.node:
        for name in node.output:
            g, t = golden.get(name), target.get(name)
            if g is None or t is None or g.dtype.kind != "f" or name in masks:
                continue
            lost = np.count_nonzero((g != 0) & (t == 0) & np.isfinite(g))
            if judge(g, t, thresholds).failed or lost:
                out.append(node.name)
                break
    return out


def write_result(out_dir: Path, result: PrecisionResult, model_path: Path) -> None:
    """The set's files (see the module docstring) and ``precision.json``; written again by a caller
    that adds to the result (the default-pass build's check)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "keep_fp32.txt").write_text("".join(f"{name}\n" for name in result.keep), encoding="utf-8")
    (out_dir / "keep_dtype.cfg").write_text("".join(f"{name}\n" for name in result.keep), encoding="utf-8")
    mixlist = {"black-list": {"to-add": result.keep_types}}
    (out_dir / "modify_mixlist.json").write_text(json.dumps(mixlist, indent=2) + "\n", encoding="utf-8")
    (out_dir / "precision.json").write_text(json.dumps({"model": str(model_path), **to_json(result)}, indent=1),
                                            encoding="utf-8")
