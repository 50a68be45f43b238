"""Per layer, the error its quantisation adds, ranked most sensitive first.

Each candidate layer is quantised alone (every other layer in float, ranges from the one
calibration) and the model's outputs on the evaluation samples are compared with FP32: the
layer's ``error`` is ``1 - min cosine`` over outputs and samples, and with ground truth the task
metrics it leaves are recorded (top-1; mAP@0.5; Dice and IoU). With a task target the ranking
reads that target's metric first (the lowest it leaves, most sensitive), the cosine error breaking
ties, so the searches try first the layers that cost the metric the target is judged on. Beside it, the statistics of the layer's weight and input activation
(:mod:`studio.tools.quantize.stats`) from an FP32 run over the calibration samples: they explain
a rank (an outlier shows as a huge kurtosis and MSE) without deciding it.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from studio.core.jobs import CancelToken, Progress
from studio.tools.quantize.measure import accuracy_of, as_judge, run_all
from studio.tools.quantize.stats import TensorStats, stats_of


@dataclass
class Sensitivity:
    """One layer: how much quantising it alone costs, and its tensors' statistics."""

    name: str
    op_type: str
    error: float                       # 1 - min cosine with only this layer quantised
    min_cosine: float
    top1: float | None = None          # with only this layer quantised (labelled samples)
    weight: TensorStats | None = None
    activation: TensorStats | None = None
    map50: float | None = None         # with only this layer quantised (pictures with boxes)
    dice: float | None = None          # ... (pictures with masks)
    iou: float | None = None

    __json_round__ = {"error": 8, "min_cosine": 8, "top1": 4, "map50": 6, "dice": 6, "iou": 6}


def rank_layers(model_path: Path, candidates: list[str], builder, samples, reference, judge,
                calib_samples, cancel: CancelToken | None = None, rank_by: str | None = None
                ) -> Generator[Progress, None, list[Sensitivity]]:
    """Job: every candidate quantised alone and measured (``judge``: labels, a task judge or None);
    the list sorted most sensitive first: by the task metric ``rank_by`` when given (lowest
    first), then by the cosine error."""
    from concurrent.futures import ThreadPoolExecutor

    import onnx

    model = onnx.load(str(model_path))
    nodes = {n.name: n for n in model.graph.node}
    yield Progress(None, f"statistics of {len(candidates)} layer(s), beside the sensitivity runs")
    judge = as_judge(judge)
    out = []
    # the statistics (numpy, one FP32 run) on a thread of their own while ONNX Runtime runs the layers:
    # both release the GIL, so the one does not wait for the other
    with ThreadPoolExecutor(1, thread_name_prefix="quantize-stats") as pool:
        pending = pool.submit(_tensor_stats, model, [nodes[name] for name in candidates], calib_samples)
        for index, name in enumerate(candidates):
            if cancel is not None:
                cancel.raise_if_cancelled()
            yield Progress(index / len(candidates), f"sensitivity {index + 1}/{len(candidates)}: {name}")
            outputs = run_all(builder.build((), only=[name]), samples)
            out.append((name, accuracy_of(reference, outputs, judge)))
        tensors = pending.result()
    return _ranked(out, nodes, tensors, candidates, rank_by)


def _ranked(measured, nodes, tensors, candidates, rank_by) -> list[Sensitivity]:
    out = []
    for name, accuracy in measured:
        cos = accuracy.min_cosine
        weight, activation = tensors.get(name, (None, None))
        out.append(Sensitivity(name, nodes[name].op_type, 1.0 - cos, cos, accuracy.top1, weight, activation,
                               accuracy.map50, accuracy.dice, accuracy.iou))
    # ties (e.g. layers that change nothing) keep graph order, so the ranking is reproducible
    order = {name: i for i, name in enumerate(candidates)}
    out.sort(key=lambda s: (getattr(s, rank_by) if rank_by and getattr(s, rank_by) is not None else 0.0,
                            -s.error, order[s.name]))
    return out


def _tensor_stats(model, nodes, calib_samples, limit: int = 16) -> dict[str, tuple]:
    """``{layer: (weight stats, input activation stats)}`` from the initializers and an FP32 run of
    up to ``limit`` calibration samples with the layers' inputs as extra outputs."""
    import onnx
    from onnx import helper, numpy_helper

    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:  # exporters (PaddlePaddle's among them) write weights as Constant nodes
        if node.op_type == "Constant" and node.output and node.attribute and node.attribute[0].name == "value":
            weights[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    graph_inputs = {i.name for i in model.graph.input}
    wanted = sorted({n.input[0] for n in nodes if n.input and n.input[0] and n.input[0] not in weights})
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    have = {o.name for o in probe.graph.output}
    for name in wanted:
        if name not in have and name not in graph_inputs:
            probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    import tempfile

    with tempfile.TemporaryDirectory(prefix="studio-quantize-stats-") as folder:
        path = Path(folder) / "probe.onnx"
        onnx.save(probe, str(path))
        names = [o.name for o in probe.graph.output]
        runs = run_all(path, calib_samples[:limit])
    seen: dict[str, list[np.ndarray]] = {name: [] for name in wanted}
    for feeds, outputs in zip(calib_samples[:limit], runs):
        values = dict(zip(names, outputs))
        for name in wanted:
            array = feeds.get(name, values.get(name))
            if array is not None and np.asarray(array).dtype.kind == "f":
                seen[name].append(np.asarray(array).ravel())
    out = {}
    for node in nodes:
        weight = next((weights[i] for i in node.input[1:2] if i in weights), None)
        act = seen.get(node.input[0]) if node.input else None
        out[node.name] = (stats_of(weight, True) if weight is not None and weight.dtype.kind == "f" else None,
                          stats_of(np.concatenate(act), False) if act else None)
    return out
