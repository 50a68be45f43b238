"""What the rules read: the inputs one advisor run was given, loaded by their own engines.

A model comes from the graph engine's reader, a profile from the profiler's loader (plus the op
table of :mod:`.optable`), an accuracy result from the accuracy engine's CSV reader or its
``--json`` output, a benchmark result from its JSON. Rules only look; none of them reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.tools.advisor.optable import OpRecord, OpTable


@dataclass
class AccuracyInput:
    """An accuracy result: the accuracy advisor's findings plus the compared rows when known."""

    path: str
    findings: list[Any]  # studio.tools.accuracy.advisor.Finding
    summary: str = ""
    rows: list[Any] = field(default_factory=list)  # studio.tools.accuracy.compare.Row
    target_mode: str = ""


@dataclass
class Context:
    """Inputs of one run (any subset may be None) and lookups shared by the rules."""

    model: Any = None  # studio.tools.graph.model.Model
    model_path: Path | None = None
    trace: Any = None  # studio.tools.profiler.model.Trace
    profile_path: Path | None = None
    ops: OpTable | None = None
    accuracy: AccuracyInput | None = None
    bench: dict | None = None
    bench_path: Path | None = None
    roofline: list = field(default_factory=list)  # RooflinePoint, filled before the rules run
    plan: Any = None  # studio.tools.convert.rewrite.PassPlan: what the converter's passes fold in the model
    _node_times: dict[str, float] | None = None

    @property
    def step_ms(self) -> float | None:
        """The step (one inference) time the severities are measured against."""
        if self.ops is not None and self.ops.step_ms:
            return self.ops.step_ms
        return bench_latency_ms(self.bench) if self.bench else None

    @property
    def profile_label(self) -> str:
        return self.profile_path.name if self.profile_path else "profile"

    def node_times(self) -> dict[str, float]:
        """Graph node name -> device time per step (us), from the op table.

        Profile op names are matched to nodes by node name, by the runtime's renamed name
        (``_nchwc`` suffixes), or by the tensor a node writes. When the kernel's op type differs
        from the node's (ONNX Runtime runs Conv+BN as one Conv named after the BN output), the
        time goes to the producer of that type upstream, so fused-away nodes read 0.
        """
        if self._node_times is not None:
            return self._node_times
        out: dict[str, float] = {}
        if self.model is None or self.ops is None:
            self._node_times = out
            return out
        from studio.tools.profiler.ort_reader import graph_node_name

        graph = self.model.main
        index = graph.node_index()
        producers = graph.producers()
        for op in self.ops.ops:
            i = _find_node(graph, index, producers, op, graph_node_name(op.name))
            if i is not None:
                name = graph.nodes[i].name
                out[name] = out.get(name, 0.0) + op.per_step_us
        self._node_times = out
        return out

    def op_time_us(self, node: str) -> float:
        """Time per step of one node (0 when the profile has none for it)."""
        return self.node_times().get(node, 0.0)


def _find_node(graph, index: dict[str, int], producers: dict[str, int], op: OpRecord, plain: str) -> int | None:
    i = index.get(op.name)
    if i is None:
        i = index.get(plain)
    if i is None:
        i = producers.get(plain, producers.get(op.name))
    if i is None:
        return None
    if op.op_type and graph.nodes[i].type != op.op_type:
        # walk up single-input chains to a node of the kernel's type (fused by the runtime)
        seen, frontier = set(), [i]
        for _ in range(4):
            nxt = []
            for j in frontier:
                for name in graph.nodes[j].inputs[:1]:
                    k = producers.get(name)
                    if k is not None and k not in seen:
                        if graph.nodes[k].type == op.op_type:
                            return k
                        seen.add(k)
                        nxt.append(k)
            frontier = nxt
    return i


def bench_latency_ms(bench: dict) -> float | None:
    """Latency (ms) from a benchmark JSON: the median when it has one (``studio profile run
    --json``'s ``latency_ms.p50``, ``studio bench``'s ``p50_ms``), else the mean (ais_bench/msame
    summaries, ``NPU_compute_time.mean``)."""
    lat = bench.get("latency_ms")
    if isinstance(lat, dict) and (lat.get("p50") or lat.get("mean")):
        return float(lat.get("p50") or lat["mean"])
    if isinstance(bench.get("p50_ms"), (int, float)):
        return float(bench["p50_ms"])
    if isinstance(lat, (int, float)):
        return float(lat)
    npu = bench.get("NPU_compute_time")
    if isinstance(npu, dict) and npu.get("mean"):
        return float(npu["mean"])
    for key in ("mean_ms", "latency", "avg_ms"):
        if isinstance(bench.get(key), (int, float)):
            return float(bench[key])
    return None
