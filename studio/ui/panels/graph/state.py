"""What the Graph panel shows that needs no Qt: the models opened, the nodes to select once a
model loads, and the texts (legend, caption) and tool states derived from the model on screen.

The open models' levels and views live in :mod:`~studio.ui.panels.graph.side`; the panel
(``panel.py``) lays out widgets and wires them to both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from studio.tools.graph.categories import CATEGORY_COLOURS, CATEGORY_LABELS, PIPELINE_ROLES

# Tools that run the model in ONNX Runtime, and tools a MindX pipeline (no model) cannot use.
ONNX_ONLY = ("Profile", "FP16 check")
NOT_FOR_PIPELINES = ("Convert…", "Run shapes")


@dataclass
class GraphState:
    """The models opened in the panel and the selections waiting for a model to load."""

    opened: list[Path] = field(default_factory=list)  # in order
    pending: dict[int, str | int] = field(default_factory=dict)  # id(side) -> node name/index to select

    def opening(self, path: Path, side_key: int, select: str | int | None = None) -> None:
        """Note ``path`` as opened (once) and what to select in it when it has loaded."""
        if path not in self.opened:
            self.opened.append(path)
        if select is not None:
            self.pending[side_key] = select

    def loaded(self, side_key: int) -> str | int | None:
        """What to select now that a side's model has loaded (forgotten then), or None."""
        return self.pending.pop(side_key, None)


def category_legend(model_format: str = "") -> str:
    """The colour legend under the canvas (rich text): op categories, or a pipeline's roles."""
    keys = PIPELINE_ROLES if model_format == "mindx_pipeline" else \
        ("conv", "activation", "norm", "data", "control", "custom", "other", "group")
    cells = [f'<span style="background:{CATEGORY_COLOURS[c]};">&nbsp;&nbsp;&nbsp;</span> {CATEGORY_LABELS[c]}'
             for c in keys]
    if model_format == "mindx_pipeline":
        cells.append("- - - reference (dataSource)")
    return "<small>" + " &nbsp; ".join(cells) + "</small>"


def tools_enabled(model_format: str | None) -> dict[str, bool]:
    """Which format-bound tools work on the model on screen (None: no model)."""
    enabled = {text: model_format == "onnx" for text in ONNX_ONLY}
    # a pipeline and an msprobe module tree are no models: nothing to convert or run
    enabled.update({text: model_format not in ("mindx_pipeline", "msprobe_construct") for text in NOT_FOR_PIPELINES})
    return enabled


def caption(view, only_here: int, where: str) -> str:
    """The canvas caption: nodes, folded constants, items shown, collapsed groups, and the nodes
    only on this side (``where``: "left" / "right") of a comparison."""
    groups = sum(1 for it in view.items if it.kind == "group")
    folded = len(view.graph.folded)
    text = (f"{len(view.graph.nodes):,} nodes"
            + (f" (+ {folded:,} constants drawn as weights)" if folded else "")
            + f" · {len(view.items):,} shown"
            + (f" · {groups} collapsed groups (double-click to expand)" if groups else ""))
    if only_here:
        text += f" · {only_here:,} only on the {where} (dashed border)"
    return text


def groups_inside(hierarchy, gid: int) -> set[int]:
    """Group ``gid`` and every group nested in it."""
    inside, stack = set(), [gid]
    while stack:
        g = stack.pop()
        inside.add(g)
        stack.extend(hierarchy.groups[g].groups)
    return inside

