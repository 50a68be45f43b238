"""The verdict under each node of an msprobe module tree: what colours the module graph.

For every API call of the comparison and every module that encloses it (``construct.json``, as
:meth:`MsprobeDump.module_path` reads it): the worst verdict of the calls under it (error >
warning > pass), its worst metric — the lowest Cosine in tensor mode, the largest norm relative
error in statistics mode, and the call that has it — and whether a target tensor under it
overflowed (an inf or NaN in its Max or Min). msprobe's ``graph_visualize`` shows the same
(its nodes coloured by precision, overflowing ones marked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from studio.tools.accuracy.msprobe_compare import ERROR, PASS, WARNING, MsprobeComparison, TensorRow

SEVERITY = {PASS: 0, WARNING: 1, ERROR: 2}


@dataclass
class NodeVerdict:
    """The worst of the calls under one node (an API call or a module)."""

    name: str
    result: str = PASS
    metric: str = ""             # "Cosine" (tensor mode) or "norm rel. err" (statistics mode)
    worst: float | None = None   # the worst value of that metric under the node
    worst_api: str = ""          # the call that holds it
    overflow: bool = False       # a target tensor under the node holds inf or NaN (its Max or Min)
    calls: int = 0

    @property
    def severity(self) -> int:
        """0 pass, 1 warning, 2 error."""
        return SEVERITY[self.result]

    @property
    def label(self) -> str:
        """The text beside the node's box: ``error · cos 0.912 · overflow``."""
        parts = [self.result]
        if self.worst is not None:
            parts.append(f"cos {self.worst:.4g}" if self.metric == "Cosine" else f"norm {self.worst:.2%}")
        if self.overflow:
            parts.append("overflow")
        return " · ".join(parts)


def _worst_of(row: TensorRow, tensor_mode: bool) -> float | None:
    if tensor_mode:
        value = (row.tensor or {}).get("Cosine")
        return value if isinstance(value, float) and not math.isnan(value) else None
    return row.norm_relative


def _overflow(row: TensorRow) -> bool:
    stats = row.target.stats if row.target is not None else {}
    return any(isinstance(stats.get(k), float) and not math.isfinite(stats[k]) for k in ("Max", "Min"))


def node_verdicts(result: MsprobeComparison) -> dict[str, NodeVerdict]:
    """Every compared API call and every module enclosing one (target names) -> its verdict."""
    tensor_mode = result.tensor_mode
    metric = "Cosine" if tensor_mode else "norm rel. err"
    nodes: dict[str, NodeVerdict] = {}
    counted: set[tuple[str, str]] = set()
    for row in result.rows:
        value, overflow = _worst_of(row, tensor_mode), _overflow(row)
        for name in (row.target_api, *result.target.module_path(row.target_api)):
            node = nodes.setdefault(name, NodeVerdict(name, metric=metric))
            if (name, row.target_api) not in counted:
                counted.add((name, row.target_api))
                node.calls += 1
            if SEVERITY[row.result] > node.severity:
                node.result = row.result
            if value is not None and (node.worst is None or (value < node.worst if tensor_mode else value > node.worst)):
                node.worst, node.worst_api = value, row.target_api
            node.overflow |= overflow
    return nodes
