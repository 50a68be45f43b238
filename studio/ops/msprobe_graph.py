"""Two msprobe dumps' module trees side by side, coloured by the comparison: what the panels and
``studio compare A B --graph OUT.svg`` draw.

The trees are the graph engine's reading of each side's ``construct.json``
(:mod:`studio.tools.graph.msprobe_modules`); the colours are the accuracy engine's verdict under
each node (:mod:`studio.tools.accuracy.msprobe_nodes`), keyed by the target's names (and so on the
golden side too where the names agree, as in a same-framework pair). Pass, warning and error
take the graph overlay's good / middle / bad colours; a node with an overflowing tensor under it
is drawn in :data:`OVERFLOW`; nodes no compared call sits under are grey.
"""

from __future__ import annotations

import re
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.accuracy.msprobe_compare import MsprobeComparison
from studio.tools.accuracy.msprobe_nodes import node_verdicts
from studio.tools.graph.export_svg import svg_text
from studio.tools.graph.model import Model
from studio.tools.graph.msprobe_modules import CONSTRUCT, construct_model
from studio.tools.graph.overlay import BAD, GOOD, MIDDLE, NO_DATA, OverlayData, node_colours
from studio.tools.graph.view import build_view

OVERFLOW = "#5b2a86"
TITLE = "msprobe verdict"
THRESHOLDS = [0.5, 1.5]  # severities 0 / 1 / 2 -> good / middle / bad
GAP = 40.0


def construct_path(dump) -> Path:
    """The construct.json of an msprobe dump (its ``path`` is dump.json or the folder holding it)."""
    return dump.path / CONSTRUCT if dump.path.is_dir() else dump.path.with_name(CONSTRUCT)


def module_models(result: MsprobeComparison) -> tuple[Model, Model]:
    """(golden, target) module trees of a comparison's two dumps; UserError when a side has no construct.json."""
    models = []
    for dump in (result.golden, result.target):
        if not dump.parents:
            raise UserError("The dump has no module hierarchy (construct.json is missing or empty)", dump.path,
                            "Dump with msprobe at level L0 or mix: construct.json then maps every call to its module.")
        models.append(construct_model(dump.parents, construct_path(dump)))
    return models[0], models[1]


def verdict_overlay(result: MsprobeComparison) -> OverlayData:
    """Severity (0 pass, 1 warning, 2 error) per node name, with the text beside each box."""
    nodes = node_verdicts(result)
    colours = {name: OVERFLOW for name, node in nodes.items() if node.overflow}
    return OverlayData(TITLE, {name: float(node.severity) for name, node in nodes.items()}, list(THRESHOLDS),
                       colours=colours, labels={name: node.label for name, node in nodes.items()})


def legend() -> list[tuple[str, str]]:
    """(colour, text) of the module graph's colours."""
    return [(GOOD, "pass"), (MIDDLE, "warning"), (BAD, "error"), (OVERFLOW, "overflow (inf/NaN) under it"),
            (NO_DATA, "no compared call under it")]


def module_graph_svg(result: MsprobeComparison, path: Path) -> Path:
    """Write both sides' module trees, left to right, golden on the left, as one SVG; returns ``path``."""
    overlay = verdict_overlay(result)
    parts, width, height = [], 0.0, 0.0
    for side, model in zip(("golden", "target"), module_models(result)):
        graph = model.main
        view = build_view(graph, None, direction="LR")
        colours = node_colours(overlay, graph, view)
        for item, it in enumerate(view.items):  # overflow over verdict: the mark a user looks for first
            if it.kind == "node" and it.name in overlay.colours:
                colours[item] = overlay.colours[it.name]
        doc = svg_text(view, colours)
        w, h = (float(v) for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', doc).groups())
        dump = result.golden if side == "golden" else result.target
        parts.append(f'<text x="{width + 8:.0f}" y="40" font-size="14" font-weight="bold">{side}: '
                     f'{_escape(str(dump.path))}</text>')
        body = doc[doc.index(">") + 1:doc.rindex("</svg>")]  # inside one <g>: viewers (Qt's too) skip nested <svg>
        body = body.replace('<rect width="100%" height="100%" fill="#ffffff"/>', "", 1)
        if side == "target":
            body = body.replace('id="arrow"', 'id="arrow2"').replace("url(#arrow)", "url(#arrow2)")
        parts.append(f'<g transform="translate({width:.0f},52)">{body}</g>')
        width, height = width + w + GAP, max(height, h)
    keys = " ".join(f'<rect x="{8 + 170 * i}" y="6" width="12" height="12" fill="{c}"/>'
                    f'<text x="{24 + 170 * i}" y="16">{_escape(t)}</text>' for i, (c, t) in enumerate(legend()))
    out = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height + 52:.0f}" '
           f'font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="#ffffff"/>'
           f'{keys}{"".join(parts)}</svg>\n')
    path = Path(path)
    path.write_text(out, encoding="utf-8")
    return path


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
