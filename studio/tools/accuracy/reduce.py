"""Reduce a model that goes wrong in FP16 to the smallest subgraph that still goes wrong alone.

1. Run the model in FP32 (the golden run) and in FP16 simulation (the target), every tensor kept.
2. The first diverging op in graph order is the cause to keep: an op whose output turns non-finite
   on the target while finite on the golden side (overflow, or an underflow fed to a log or a
   division) is taken before one that merely drifts.
3. The subgraph that produces it is cut out and fed with the golden tensors at the cut (so error
   from upstream cannot hide the cause): first the op alone; while that passes, more of its
   ancestors, doubling each time (bisection over the distance from the op); then each op at the
   edge is tried away in turn, so removing any one more op makes the repro pass.
4. The repro is run alone once more, FP32 against FP16 simulation from the saved files, and only
   a repro that fails alone is written.

Every check of a candidate is a target run; the result counts them.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json
from studio.tools.accuracy.fp16_onnx import inner_failures
from studio.tools.accuracy.diagnosis import Diagnosis
from studio.tools.accuracy.fp16_runs import diagnose_runs, judge, load_and_run, mask_names
from studio.tools.accuracy.metrics import Thresholds


@dataclass
class Reduction:
    """What the reduction found and wrote."""

    model_ops: int
    first_op: str
    first_op_type: str
    reason: str
    ops: list[str]
    inputs: list[str]
    output: str
    target_runs: int
    folder: Path
    notes: list[str] = field(default_factory=list)
    target: str = "fp16-sim"
    diagnosis: Diagnosis | None = None  # the whole model's FP16 diagnosis (one for every tool)

    __json_extra__ = ("repro_ops",)  # studio.core.serial: a derived key of the JSON form

    @property
    def repro_ops(self) -> int:
        """Ops in the repro."""
        return len(self.ops)


def reduce_fp16(model_path: Path | str, out_dir: Path | str, inputs: dict[str, np.ndarray] | None = None,
                seed: int = 0, thresholds: Thresholds | None = None, cancel: CancelToken | None = None,
                runner=None) -> Generator[Progress, None, Reduction]:
    """Job: the minimal subgraph of ``model_path`` that fails on the target (see the module docstring):
    ``runner``'s (:class:`~studio.tools.accuracy.fp16_runs.SimRunner`, FP16 simulation, by default;
    :class:`~studio.ops.fp16_target.Fp16OnnxRunner` for a real FP16 ONNX; an OM on a host)."""
    thresholds = thresholds or Thresholds()
    model_path, out_dir = Path(model_path), Path(out_dir)
    yield Progress(0.05, "running the model in FP32 and on the target")
    model, _feeds, runner, golden, target = load_and_run(model_path, inputs, seed, runner)
    label = runner.label
    comparison = yield from diagnose_runs(model, golden, target, thresholds, runner, cancel)
    masks = mask_names(comparison)
    failing_outputs = [o.name for o in model.graph.output if o.name in golden and o.name in target
                       and judge(golden[o.name], target[o.name], thresholds).failed]
    if not failing_outputs and runner.judges_inner and inner_failures(golden, target, masks=masks):
        failing_outputs = [o.name for o in model.graph.output]  # the dump shows what the outputs hide
    if not failing_outputs:
        raise UserError(f"The model's outputs pass on the target ({label}): nothing to reduce", model_path,
                        "Reduce a model whose output goes wrong (give the input that shows it, or a stricter "
                        "--cosine); inner tensors that differ without reaching an output are not a failure.")
    producers = {o: i for i, n in enumerate(model.graph.node) for o in n.output if o}
    relevant = _ancestors_of(model, producers, failing_outputs)
    first, verdict = _first_failure(model, golden, target, thresholds, relevant, masks)
    node = model.graph.node[first]
    output = next(o for o in node.output if o and verdict.get(o) and verdict[o].failed)
    yield Progress(0.25, f"first diverging op: {node.name} ({node.op_type}): {verdict[output].reason}")
    chosen = _grow(model, producers, first, output, golden, runner, thresholds, cancel)
    yield Progress(0.7, f"{len(chosen)} op(s) fail alone; trying each away")
    chosen = _shrink(model, producers, chosen, first, output, golden, runner, thresholds, cancel)
    sub, cut = _cut(model, producers, chosen, output, golden)
    sub_feeds = {name: golden[name] for name in cut}
    check = judge(runner.run(sub, sub_feeds, False)[output], runner.run(sub, sub_feeds, True)[output], thresholds)
    # checked alone: from the saved model and inputs, as the commands file does
    if not check.failed:
        raise UserError("The reduced subgraph passes when run alone, so no repro was written", model_path,
                        "Report this model: the failure needs more context than the reduction kept.")
    notes = [f"the repro fails alone: {check.reason}"]
    if check.nonfinite and not np.any(np.abs(np.nan_to_num(golden[output])) > 65504):
        # Tiny cut inputs matter only where the repro blows up without an overflow: an overflow
        # repro gets no advice about epsilons that play no part in it.
        notes += _underflow_notes(model, producers, sub_feeds)
    _write(out_dir, model_path, sub, sub_feeds, golden[output], output, node, check, model, chosen, runner, notes)
    yield Progress(1.0, f"{len(chosen)} op(s) reproduce it; {runner.target_runs} target runs")
    return Reduction(len(model.graph.node), node.name, node.op_type, verdict[output].reason,
                     [model.graph.node[i].name for i in sorted(chosen)], sorted(cut), output, runner.target_runs,
                     out_dir, notes, runner.target, comparison.diagnosis)


FP16_TINY = float(np.finfo(np.float16).smallest_subnormal)  # 6e-8: below this, FP16 holds 0


def _underflow_notes(model, producers, feeds: dict[str, np.ndarray]) -> list[str]:
    """Cut inputs whose non-zero FP32 values become 0 in FP16, and the op that makes them: the
    cause to keep in FP32 (an epsilon lost before a log, a division, a square root)."""
    notes = []
    for name, array in feeds.items():
        if array.dtype.kind != "f":
            continue
        lost = int(np.count_nonzero((array != 0) & (np.abs(array) < FP16_TINY / 2)))
        if lost:
            maker = producers.get(name)
            by = f", made by {model.graph.node[maker].name} ({model.graph.node[maker].op_type})" \
                if maker is not None else ""
            notes.append(f"underflow: {lost:,} non-zero value(s) of {name}{by} are 0 in FP16 (below "
                         f"{FP16_TINY:.1e}); keep that op and its consumer in FP32, or raise the small constant")
    return notes


def _ancestors_of(model, producers, outputs: list[str]) -> set[int]:
    """Every op that the given tensors depend on."""
    found: set[int] = set()
    stack = [producers[o] for o in outputs if o in producers]
    while stack:
        index = stack.pop()
        if index in found:
            continue
        found.add(index)
        stack.extend(producers[name] for name in model.graph.node[index].input if name in producers)
    return found


def _first_failure(model, golden, target, thresholds, relevant: set[int], masks: set[str] = frozenset()
                   ) -> tuple[int | None, dict[str, Verdict]]:
    """The first op (graph order) among ``relevant`` whose output fails; non-finite failures before
    mere drift (a drift is often the rounding that an overflow further down then makes visible).
    Attention-mask tensors (``masks``) saturate by design and never count."""
    verdicts: dict[str, Verdict] = {}
    first_any = first_nonfinite = None
    for index, node in enumerate(model.graph.node):
        if index not in relevant:
            continue
        for name in node.output:
            if name and name in golden and name in target and name not in masks:
                v = verdicts[name] = judge(golden[name], target[name], thresholds)
                if v.failed and first_any is None:
                    first_any = index
                if v.nonfinite and first_nonfinite is None:
                    first_nonfinite = index
    return (first_nonfinite if first_nonfinite is not None else first_any), verdicts


def _ancestors_by_distance(model, producers, index: int) -> list[list[int]]:
    """The op's producers level by level: [[direct producers], [theirs], ...] (each op once)."""
    levels, seen, frontier = [], {index}, [index]
    while frontier:
        nxt = []
        for i in frontier:
            for name in model.graph.node[i].input:
                p = producers.get(name)
                if p is not None and p not in seen:
                    seen.add(p)
                    nxt.append(p)
        if nxt:
            levels.append(sorted(nxt))
        frontier = nxt
    return levels


def _fails(model, producers, chosen: set[int], output: str, golden, runner, thresholds) -> bool:
    sub, cut = _cut(model, producers, chosen, output, golden)
    feeds = {name: golden[name] for name in cut}
    return judge(runner.run(sub, feeds, False)[output], runner.run(sub, feeds, True)[output], thresholds).failed


def _grow(model, producers, first, output, golden, runner, thresholds, cancel) -> set[int]:
    """The op alone, then its ancestors up to 1, 2, 4 ... levels, until the cut fails."""
    levels = _ancestors_by_distance(model, producers, first)
    depth = 0
    while True:
        if cancel is not None:
            cancel.raise_if_cancelled()
        chosen = {first, *(i for level in levels[:depth] for i in level)}
        if _fails(model, producers, chosen, output, golden, runner, thresholds):
            return chosen
        if depth >= len(levels):
            raise UserError("Even the whole model up to the first diverging op passes when fed FP32 tensors", None,
                            "The failure comes from the inputs' FP16 rounding alone; keep the inputs in FP32.")
        depth = max(1, depth * 2)


def _shrink(model, producers, chosen, first, output, golden, runner, thresholds, cancel) -> set[int]:
    """Try each op except the failing one away (graph order, so the farthest go first) while the cut
    still fails; ops the output no longer depends on go with it."""
    for index in sorted(chosen - {first}):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if index not in chosen:
            continue
        trial = _connected(model, producers, chosen - {index}, first)
        if _fails(model, producers, trial, output, golden, runner, thresholds):
            chosen = trial
    return chosen


def _connected(model, producers, chosen: set[int], first: int) -> set[int]:
    """The ops of ``chosen`` that ``first`` depends on through ops of ``chosen`` (and ``first``)."""
    keep, stack = set(), [first]
    while stack:
        index = stack.pop()
        if index in keep:
            continue
        keep.add(index)
        stack.extend(p for name in model.graph.node[index].input
                     if (p := producers.get(name)) is not None and p in chosen)
    return keep


def _cut(model, producers, chosen: set[int], output: str, golden: dict[str, np.ndarray]):
    """The subgraph of the ``chosen`` ops with ``output`` as its only output; tensors made outside it
    (and graph inputs) become its inputs."""
    import onnx
    from onnx import helper

    nodes = [model.graph.node[i] for i in sorted(chosen)]
    made = {o for n in nodes for o in n.output}
    weights = {t.name: t for t in model.graph.initializer}
    cut: list[str] = []
    used_weights = []
    for n in nodes:
        for name in n.input:
            if not name or name in made or name in cut:
                continue
            if name in weights:
                if weights[name] not in used_weights:
                    used_weights.append(weights[name])
            else:
                cut.append(name)
    def declared(name: str):  # the type the golden run produced: declarations may be missing or wrong
        array = golden[name]
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))

    graph = helper.make_graph(nodes, "repro", [declared(name) for name in cut], [declared(output)],
                              initializer=used_weights)
    sub = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    return sub, cut


def _write(out_dir, model_path, sub, feeds, golden_out, output, node, check, model, chosen, runner,
           notes: list[str]) -> None:
    import onnx

    from studio.core.repro_source import REPRO_OF, repro_link

    out_dir.mkdir(parents=True, exist_ok=True)
    # The repro names its original, so the graph panel's "Convert…" on it converts the whole model.
    onnx.helper.set_model_props(sub, {REPRO_OF: repro_link(out_dir / "model.onnx", model_path)})
    onnx.save(sub, out_dir / "model.onnx")
    np.savez(out_dir / "inputs.npz", **feeds)
    np.savez(out_dir / "golden_outputs.npz", **{output: golden_out})
    from studio.tools.accuracy.local_dump import safe_name

    files = {name: f"inputs/{safe_name(name)}.npy" for name in feeds}
    flags = " ".join(f"--input '{name}={file}'" for name, file in files.items())
    (out_dir / "inputs").mkdir(exist_ok=True)
    for name, array in feeds.items():
        np.save(out_dir / files[name], array)
    if hasattr(runner, "write_files"):  # what the target's own commands read (an OM's .bin inputs, acl.json)
        runner.write_files(out_dir, feeds)
    commands = runner.commands(flags, feeds)
    (out_dir / "commands.sh").write_text(f"#!/bin/sh\n# Reproduce: the same cut in FP32 and on the target ({runner.label})\n"
                                         "cd \"$(dirname \"$0\")\"\n" + commands)
    ops = [model.graph.node[i] for i in sorted(chosen)]
    report = [f"# FP16 repro for {model_path.name}", "",
              f"- target: {runner.label}",
              f"- first diverging op: `{node.name}` ({node.op_type}), output `{output}`",
              f"- model: {len(model.graph.node):,} ops; repro: {len(ops)} op(s): "
              + ", ".join(f"`{n.name}` ({n.op_type})" for n in ops),
              f"- inputs at the cut (golden FP32 tensors): " + ", ".join(f"`{k}` {list(v.shape)}" for k, v in feeds.items()),
              f"- failing alone: {check.reason}",
              *(f"- {note}" for note in notes),
              f"- target runs used: {runner.target_runs}", "", "## Reproduce", "", "```sh", commands.rstrip(), "```", ""]
    (out_dir / "report.md").write_text("\n".join(report))
