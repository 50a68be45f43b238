"""Runs of a model in FP32 and in FP16 simulation with every tensor kept, and the verdict on a tensor.

Shared by the reduction (:mod:`studio.tools.accuracy.reduce`) and the FP32-set search
(:mod:`studio.tools.accuracy.precision`): both start from the same two runs and judge tensors the
same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from studio.tools.accuracy.metrics import Thresholds, compare_arrays


@dataclass
class Verdict:
    """Whether one tensor goes wrong on the target, and why."""

    failed: bool
    reason: str
    nonfinite: bool = False


def judge(golden: np.ndarray, target: np.ndarray, thresholds: Thresholds) -> Verdict:
    """A target tensor fails when it turns non-finite where the golden one is finite, or breaks a limit."""
    g, t = np.asarray(golden), np.asarray(target)
    if g.dtype.kind == "f" and t.dtype.kind == "f":
        fresh = int(np.count_nonzero(~np.isfinite(t) & np.isfinite(g)))
        if fresh:
            return Verdict(True, f"{fresh:,} value(s) non-finite on the target, finite in FP32", nonfinite=True)
        if not np.isfinite(g).all():
            return Verdict(False, "non-finite in FP32 too: not an FP16 problem")
    if g.dtype.kind != "f":
        return Verdict(False, "not a float tensor")
    m = compare_arrays(g.astype(np.float32), t.astype(np.float32))
    bad = thresholds.violations(m)
    if not bad:
        return Verdict(False, "passes")
    # The measured values and the limits they break, so a refusal says how far off it is.
    parts = [f"{name} {getattr(m, name):.6g} (limit {getattr(thresholds, name):g})" for name in bad if name != "nonfinite"]
    if m.target_absmax == 0 and m.golden_absmax > 0:
        parts.insert(0, f"all zero where FP32 holds values up to {m.golden_absmax:.3g}")
    return Verdict(True, "breaks " + ", ".join(parts))


class TargetRunner:
    """A target of reduce and precision: runs a model (or a cut of it) in FP32 here (the golden
    side) or on the target with the ops of ``keep`` in FP32, every op's output kept by its tensor
    name; counts the target runs. Subclasses say how the target runs (:meth:`_on_target`)."""

    target = "?"
    label = "?"
    judges_inner = False  # True: judge every dumped tensor, the outputs can hide a failure

    def __init__(self):
        self.target_runs = 0

    def run(self, model, feeds: dict[str, np.ndarray], fp16: bool, keep=frozenset()) -> dict[str, np.ndarray]:
        """Every op's output by name: FP32 here when ``fp16`` is False, else on the target."""
        if not fp16:
            return run_every_tensor(model, feeds)
        self.target_runs += 1
        return self._on_target(model, feeds, frozenset(keep))

    def _on_target(self, model, feeds: dict[str, np.ndarray], keep: frozenset[str]) -> dict[str, np.ndarray]:
        raise NotImplementedError


class SimRunner(TargetRunner):
    """The FP16 simulation (:mod:`studio.tools.accuracy.fp16_sim`) as the target."""

    target = "fp16-sim"
    label = "FP16 simulation"
    judges_inner = False  # rounding every tensor carries a non-finite value on to the outputs

    def _on_target(self, model, feeds, keep):
        from studio.tools.accuracy.fp16_sim import simulate_fp16

        return run_every_tensor(simulate_fp16(model, keep)[0], feeds, [o for n in model.graph.node
                                                                      for o in n.output if o])

    def commands(self, flags: str, feeds: dict[str, np.ndarray]) -> str:
        """The shell lines that reproduce a target check on ``model.onnx`` with the saved inputs."""
        return (f"studio dump model.onnx -o fp32 {flags}\n"
                f"studio dump model.onnx -o fp16 --fp16-sim {flags}\n"
                "studio compare fp32 fp16\n")


def run_every_tensor(model, feeds: dict[str, np.ndarray], names: list[str] | None = None) -> dict[str, np.ndarray]:
    """Run ``model`` on ONNX Runtime (CPU) with every op output (or ``names``) made a graph output,
    so ORT cannot fuse an op away; {tensor: array}."""
    import onnx
    import onnxruntime as ort

    from studio.core.ort_session import quiet_options

    probe = onnx.ModelProto.FromString(model.SerializeToString())
    names = names if names is not None else [o for n in model.graph.node for o in n.output if o]
    have = {o.name for o in probe.graph.output}
    probe.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names if n not in have)
    session = ort.InferenceSession(probe.SerializeToString(), quiet_options(), providers=["CPUExecutionProvider"])
    wanted = [o.name for o in session.get_outputs()]
    with np.errstate(all="ignore"):
        return dict(zip(wanted, session.run(wanted, feeds)))


def diagnose_runs(model, golden: dict[str, np.ndarray], target: dict[str, np.ndarray], thresholds: Thresholds,
                  runner: TargetRunner, cancel=None):
    """Job: the comparison of the two runs as ``compare`` makes it (its ``diagnosis`` is the one every
    FP16 tool gives, its rows mark the attention-mask tensors, which are never a failure)."""
    from studio.tools.accuracy.run_compare import compare_runs

    mode = "npu" if runner.target == "om" else "fp16-sim" if runner.target == "fp16-sim" else "fp16"
    return (yield from compare_runs(model, golden, target, thresholds, mode, cancel))


def mask_names(comparison) -> set[str]:
    """The tensors of a comparison's rows on attention-mask paths."""
    return {r.golden.tensor for r in comparison.rows if r.mask and r.golden is not None}


def load_and_run(model_path: Path, inputs: dict[str, np.ndarray] | None, seed: int, runner=None):
    """(model with every node named, feeds, runner, golden tensors, target tensors); the target is
    ``runner``'s (default: FP16 simulation)."""
    from studio.tools.accuracy.local_dump import load_model, make_inputs

    model = load_model(model_path)
    for index, node in enumerate(model.graph.node):
        if not node.name:
            node.name = f"{node.op_type}_{index}"
    feeds = make_inputs(model, model_path, inputs or {}, seed, None, [])
    runner = runner if runner is not None else SimRunner()
    golden = {**feeds, **runner.run(model, feeds, fp16=False)}
    target = runner.run(model, feeds, fp16=True)
    return model, feeds, runner, golden, target
