"""Overlays: numbers attached to node names, coloured by thresholds (or a gradient) with a legend.

Accepts Google Model Explorer's node-data JSON (graph_viewer.md §2.4): either one graph's data
``{"name", "results": {id: {"value", "bgColor"}}, "thresholds", "gradient"}`` or a model-level
object keyed by graph id. Keys are node names or output tensor names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import GRAPH, FileFormat, json_text, path_only
from studio.core.safe_read import load_json
from studio.tools.graph.model import Graph

# Overlay colours share no hue with the op categories (CIE76 distance above 40 to each category
# colour: the old green and red were 14 from "norm" and "activation"), so a coloured box always
# means "measured". Boxes an overlay has no value for are greyed out (NO_DATA).
GOOD, MIDDLE, BAD = "#00b8d4", "#ffd400", "#e6007e"
NO_DATA = "#d3d6db"
VERDICT_COLOURS = {"fail": BAD, "pass": GOOD}  # worst first: a collapsed group shows its worst member


@dataclass
class OverlayData:
    """Values per node name and how to colour them."""

    title: str
    values: dict[str, float]
    thresholds: list[float] = field(default_factory=list)
    higher_is_better: bool = False
    unit: str = ""
    colours: dict[str, str] = field(default_factory=dict)      # per-node colours from the file
    bands: list[tuple[float, str]] = field(default_factory=list)  # explicit (upper bound, colour)
    gradient: list[tuple[float, str]] = field(default_factory=list)
    verdicts: dict[str, str] = field(default_factory=dict)  # node name -> "pass" / "fail": colours by verdict
    labels: dict[str, str] = field(default_factory=dict)    # node name -> the text shown beside its box

    def colour_of(self, name: str, value: float) -> str | None:
        """The colour of node ``name`` holding ``value``: its verdict's, the file's, or by value."""
        verdict = self.verdicts.get(name)
        if verdict in VERDICT_COLOURS:
            return VERDICT_COLOURS[verdict]
        return self.colours.get(name) or (self.colour(value) if value == value else None)

    def colour(self, value: float) -> str | None:
        """The colour of a value (None: not coloured)."""
        if self.gradient:
            return _gradient(self.gradient, value, min(self.values.values()), max(self.values.values()))
        if self.bands:
            for bound, colour in self.bands:
                if value <= bound:
                    return colour
            return None
        if not self.thresholds:
            lo, hi = min(self.values.values()), max(self.values.values())
            return _gradient([(0, GOOD), (0.5, MIDDLE), (1, BAD)] if not self.higher_is_better
                             else [(0, BAD), (0.5, MIDDLE), (1, GOOD)], value, lo, hi)
        steps = sorted(self.thresholds)
        palette = [GOOD, MIDDLE, BAD] if len(steps) >= 2 else [GOOD, BAD]
        if self.higher_is_better:
            palette = palette[::-1]
        band = sum(value > t for t in steps)
        return palette[min(band, len(palette) - 1)]

    def legend(self) -> list[tuple[str, str]]:
        """(colour, text) rows for the legend, ending with the grey of boxes without data."""
        return self._value_legend() + [(NO_DATA, "no data")]

    def _value_legend(self) -> list[tuple[str, str]]:
        if self.verdicts:
            return [(VERDICT_COLOURS[v], v) for v in VERDICT_COLOURS if v in self.verdicts.values()]
        if self.bands:
            rows, low = [], None
            for bound, colour in self.bands:
                rows.append((colour, f"≤ {bound:g}{self.unit}" if low is None else f"{low:g} – {bound:g}{self.unit}"))
                low = bound
            return rows
        if self.thresholds:
            steps = sorted(self.thresholds)
            edges = [f"≤ {steps[0]:g}"] + [f"{a:g} – {b:g}" for a, b in zip(steps, steps[1:])] + [f"> {steps[-1]:g}"]
            colours = [self.colour(steps[0])] + [self.colour((a + b) / 2) for a, b in zip(steps, steps[1:])] \
                + [self.colour(steps[-1] + abs(steps[-1]) + 1)]
            return [(c, f"{e}{self.unit}") for c, e in zip(colours, edges)]
        if self.values:
            lo, hi = min(self.values.values()), max(self.values.values())
            return [(self.colour(lo), f"{lo:g}{self.unit} (min)"), (self.colour(hi), f"{hi:g}{self.unit} (max)")]
        return []

    def for_graph(self, graph: Graph) -> dict[int, float]:
        """Node index -> value; keys may be node names or output tensor names."""
        index = graph.node_index()
        producers = graph.producers()
        out: dict[int, float] = {}
        for key, value in self.values.items():  # a verdict overlay may hold NaN values (nothing measured)
            i = index.get(key)
            if i is None:
                i = producers.get(key)
            if i is not None:
                out[i] = value
        return out


def node_colours(overlay: OverlayData, graph: Graph, view) -> dict[int, str]:
    """Fill colour per drawn node box of ``view`` (a laid-out view of ``graph``) for an export: by
    verdict or value where the overlay has data, NO_DATA grey for every other node box."""
    colours: dict[int, str] = {}
    for node, value in overlay.for_graph(graph).items():
        item = int(view.item_of_node[node])
        colour = overlay.colour_of(graph.nodes[node].name, value)
        if colour and view.items[item].kind == "node":
            colours[item] = colour
    for item, it in enumerate(view.items):  # what the overlay did not measure is greyed out
        if it.kind == "node" and item not in colours:
            colours[item] = NO_DATA
    return colours


def _hex(colour: str) -> tuple[int, int, int]:
    colour = colour.lstrip("#")
    if len(colour) == 3:
        colour = "".join(c * 2 for c in colour)
    return int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16)


def _gradient(stops: list[tuple[float, str]], value: float, lo: float, hi: float) -> str:
    t = 0.0 if hi == lo else (value - lo) / (hi - lo)
    stops = sorted(stops)
    for (s0, c0), (s1, c1) in zip(stops, stops[1:]):
        if t <= s1:
            f = 0.0 if s1 == s0 else (t - s0) / (s1 - s0)
            a, b = _hex(c0), _hex(c1)
            return "#%02x%02x%02x" % tuple(round(x + (y - x) * f) for x, y in zip(a, b))
    return stops[-1][1]


_NAMED = {"red": "#ff0000", "green": "#008000", "blue": "#0000ff", "yellow": "#ffff00", "white": "#ffffff",
          "black": "#000000", "orange": "#ffa500", "gray": "#808080", "grey": "#808080", "purple": "#800080"}


def _colour(text) -> str | None:
    if not isinstance(text, str):
        return None
    text = _NAMED.get(text.lower(), text)
    return text if text.startswith("#") and len(text) in (4, 7) else None


def load_node_data(path: Path, graph_name: str | None = None) -> OverlayData:
    """Read a Model Explorer node-data JSON file (single-graph or model-level)."""
    path = Path(path)
    try:
        data = load_json(path, "overlay file")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"Cannot read the overlay file: {exc}", path, "Check the path.") from exc
    except json.JSONDecodeError as exc:
        raise UserError(f"Not valid JSON: {exc.msg}", f"{path}, line {exc.lineno}", "Fix or re-export the file.") from exc
    if not isinstance(data, dict):
        raise UserError("Not Model Explorer node data: the top level is not an object", path,
                        'Expected {"results": {"node name": {"value": 1.0}}, ...}.')
    if not ("results" in data and not (isinstance(data["results"], dict) and "results" in data["results"])):
        graphs = [v for v in data.values() if isinstance(v, dict) and "results" in v]
        if not graphs:
            raise UserError("Not Model Explorer node data: no 'results' object", path,
                            'Expected {"results": {"node name": {"value": 1.0}}, ...} or {graph id: {...}}.')
        data = data.get(graph_name) if graph_name in data else graphs[0]
    results = data.get("results") or {}
    values, colours = {}, {}
    for key, entry in results.items():
        value = entry.get("value") if isinstance(entry, dict) else entry
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # categorical values are not coloured on a scale
        values[str(key)] = float(value)
        colour = _colour(entry.get("bgColor")) if isinstance(entry, dict) else None
        if colour:
            colours[str(key)] = colour
    if not values:
        raise UserError("The node data holds no numeric values", path, "Each result needs a numeric 'value'.")
    bands = [(float(t["value"]), _colour(t.get("bgColor")) or BAD) for t in data.get("thresholds") or []
             if isinstance(t, dict) and isinstance(t.get("value"), (int, float))]
    gradient = [(float(s["stop"]), _colour(s.get("bgColor")) or BAD) for s in data.get("gradient") or []
                if isinstance(s, dict) and isinstance(s.get("stop"), (int, float))]
    title = str(data.get("name") or path.stem)
    return OverlayData(title=title, values=values, colours=colours, bands=bands, gradient=gradient,
                       unit=unit_in_title(title))


def unit_in_title(title: str) -> str:
    """The unit a node-data title names at its end: "MACs share (%)" -> "%", "Latency (ms)" -> " ms"."""
    found = re.search(r"\(([^()\d]{1,8})\)\s*$", title)
    if not found:
        return ""
    unit = found.group(1).strip()
    return unit if unit == "%" else f" {unit}"


def match_node_data(path: Path, head: bytes) -> bool:
    """``{"name": ..., "results": {"node": {"value": ...}}}``, or the same keyed by graph id."""
    text = json_text(head)
    return bool(text and text.startswith("{") and re.search(r'"results"\s*:\s*\{', text)
                and re.search(r'"value"\s*:', text) and '"traceEvents"' not in text)


NODE_DATA = FileFormat("node_data", "Node data overlay (Model Explorer JSON)", GRAPH, match_node_data,
                       path_only(load_node_data))
