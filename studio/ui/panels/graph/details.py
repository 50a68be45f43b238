"""The side panel: everything about the selected node, group, input or output."""

from __future__ import annotations

from collections import Counter

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from studio.tools.graph.model import Graph, Model, Tensor
from studio.ui.widgets.elided_label import FitTextDelegate

ROLE = Qt.ItemDataRole.UserRole


def _short(name: str) -> str:
    """The end of a tensor name (``…/attn/q`` for ``stage3/block2/attn/q``, only the last part when the
    last two are long); the tooltip has it all."""
    parts = name.split("/")
    if len(parts) <= 2:
        return name
    tail = "/".join(parts[-2:])
    return "…/" + (tail if len(tail) <= 24 else parts[-1])


class DetailsTree(QTreeWidget):
    """Signals: open_subgraph(object graph, str title), stats_requested(object tensor, object row),
    edit_requested(node, prop, value) for a pipeline property, node_requested(node) for a finding."""

    open_subgraph = Signal(object, str)
    stats_requested = Signal(object, object)
    edit_requested = Signal(str, str, object)  # pipeline element (node name), property, current value
    node_requested = Signal(str)               # a finding's element (node name): select it

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setHeaderLabels(["Property", "Value"])
        self.setColumnCount(2)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.header().setStretchLastSection(True)
        self.setColumnWidth(0, 150)
        # Long scoped names keep their informative end; every cell's tooltip has the full text.
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setItemDelegateForColumn(1, FitTextDelegate(self))  # values: never a number cut in two
        self.itemDoubleClicked.connect(self._on_double_click)
        self.show_empty()

    def show_empty(self) -> None:
        self.clear()
        hint = self._row(None, "Click a node to see its details.")
        hint.setFirstColumnSpanned(True)  # one sentence, not a key and a value
        hint.setForeground(0, self.palette().placeholderText())

    def _fit_key_column(self) -> None:
        """Give the keys the room they need (attribute names are not cut), at most half the width."""
        self._fit_pending = False
        metrics, indent = self.fontMetrics(), self.indentation()
        needed, stack = 0, [(self.topLevelItem(i), 1) for i in range(self.topLevelItemCount())]
        while stack:
            item, depth = stack.pop()
            if not item.isFirstColumnSpanned():
                needed = max(needed, metrics.horizontalAdvance(item.text(0)) + indent * depth + 16)
            stack.extend((item.child(i), depth + 1) for i in range(item.childCount()))
        if needed:
            self.setColumnWidth(0, max(80, min(needed, self.viewport().width() // 2)))

    def resizeEvent(self, event) -> None:  # Qt override: the cap follows the pane's width
        super().resizeEvent(event)
        self._schedule_fit()

    def _schedule_fit(self) -> None:
        if not getattr(self, "_fit_pending", False):
            self._fit_pending = True
            QTimer.singleShot(0, self, self._fit_key_column)  # once, after the rows of a show_* are in

    def _row(self, parent, key: str, value="", data=None, tip: str | None = None) -> QTreeWidgetItem:
        text = str(value)
        item = QTreeWidgetItem([key, text.replace("\n", " ")])
        item.setToolTip(0, tip or key)  # full text: the cell itself may be elided
        item.setToolTip(1, text if len(text) < 4000 else text[:4000] + "…")
        if data is not None:
            item.setData(0, ROLE, data)
        if parent is None:
            self.addTopLevelItem(item)
        else:
            parent.addChild(item)
        self._schedule_fit()
        return item

    def _section(self, title: str, hint: str = "") -> QTreeWidgetItem:
        """A bold title row; ``hint`` (what double-clicking its rows does) is its tooltip."""
        item = self._row(None, title, tip=f"{title}\n{hint}" if hint else None)
        font = item.font(0)
        font.setBold(True)
        item.setFont(0, font)
        item.setFirstColumnSpanned(True)
        item.setExpanded(True)
        return item

    def show_model(self, model: Model, graph: Graph) -> None:
        """Model properties (shown when nothing is selected)."""
        self.clear()
        sec = self._section("Model")
        self._row(sec, "file", str(model.path))
        self._row(sec, "format", model.format)
        self._row(sec, "graph", graph.name)
        folded = f" (+ {len(graph.folded):,} constant nodes shown as weights)" if graph.folded else ""
        pipeline = model.format == "mindx_pipeline"
        self._row(sec, "elements" if pipeline else "nodes", f"{len(graph.nodes):,}{folded}")
        for key, value in ([] if pipeline else model_facts(model, graph)):  # no weights, MACs or shapes
            self._row(sec, key, value)
        for key, value in model.metadata.items():
            if value not in ("", None, []):
                self._row(sec, key, value)
        if model.opsets:
            self._row(sec, "opsets", ", ".join(f"{k} {v}" for k, v in model.opsets.items()))
        if model.findings:
            self._findings_section(model)
        if model.warnings:
            warn = self._section("Warnings")
            for w in model.warnings:
                self._row(warn, "⚠", w)
        if not pipeline:
            self._io_section("Inputs", graph, graph.inputs)
            self._io_section("Outputs", graph, graph.outputs)
        sec.setExpanded(True)

    def _findings_section(self, model: Model) -> None:
        errors = sum(1 for f in model.findings if f.severity == "error")
        others = len(model.findings) - errors
        # what to do with a row goes in the tooltip: in the title it was cut in a narrow pane
        sec = self._section(f"Check: {errors} error(s)" + (f", {others} other" if others else ""),
                            "Double-click a finding to select its element")
        marks = {"error": "✖", "warning": "⚠", "info": "ℹ"}
        for finding in model.findings:
            where = f"{finding.element}" + (f".{finding.prop}" if finding.prop else "")
            full = f"{finding.severity}, line {finding.line}: {finding.stream}/{where}\n{finding.message}"
            row = self._row(sec, f"{marks.get(finding.severity, '')} {finding.element}", f"{finding.prop}: "
                            f"{finding.message}" if finding.prop else finding.message,
                            data=("node", f"{finding.stream}/{finding.element}"), tip=full)
            row.setToolTip(1, full)

    def _io_section(self, title: str, graph: Graph, names: list[str]) -> None:
        sec = self._section(title)
        for name in names:
            self._row(sec, name, graph.value(name).type_text())

    def show_node(self, graph: Graph, index: int) -> None:
        node = graph.nodes[index]
        self.clear()
        sec = self._section("Node")
        self._row(sec, "type", node.type + (f"  ({node.domain})" if node.domain else ""))
        self._row(sec, "name", node.name)
        if node.domain == "mindx":  # a pipeline element: its props, editable in place
            attrs = self._section("Properties", "Double-click a value to change it")
            for key, value in node.attributes.items():
                if key == "role":
                    self._row(sec, "role", value)
                else:
                    self._row(attrs, key, value, data=("prop", node.name, key, value))
            self._row(attrs, "+ add…", "double-click to add a property", data=("prop", node.name, "", ""))
        elif node.attributes:
            attrs = self._section("Attributes")
            for key, value in node.attributes.items():
                self._row(attrs, key, value)
        ins = self._section("Inputs")
        for slot, name in enumerate(node.inputs):
            if not name:
                self._row(ins, f"#{slot}", "(unused)")
                continue
            tensor = graph.weight(name)
            text = "link" if node.domain == "mindx" else graph.value(name).type_text()
            row = self._row(ins, _short(name), text + ("  [weight]" if tensor else ""), tip=name)
            if tensor is not None:
                self._tensor_rows(row, tensor)
        for name in node.implicit_inputs:
            self._row(ins, _short(name), graph.value(name).type_text() + "  [used by a subgraph]", tip=name)
        for name in node.control_inputs:
            self._row(ins, _short(name), "reference (reads from it)" if node.domain == "mindx" else "control edge",
                      tip=name)
        outs = self._section("Outputs")
        for name in node.outputs:
            self._row(outs, _short(name), "link" if node.domain == "mindx" else graph.value(name).type_text(), tip=name)
        if node.subgraphs:
            subs = self._section("Subgraphs (double-click to open)")
            for slot, sub in node.subgraphs.items():
                self._row(subs, slot, f"{sub.name}: {len(sub.nodes):,} nodes", data=("graph", sub, f"{node.name} › {slot}"))

    def _tensor_rows(self, row: QTreeWidgetItem, tensor: Tensor) -> None:
        self._row(row, "shape", "[" + ",".join(str(d) for d in tensor.shape) + "]")
        self._row(row, "dtype", tensor.dtype)
        self._row(row, "elements", f"{tensor.size:,}")
        if tensor.origin:
            self._row(row, "stored in", f"node {tensor.origin}", tip="The file holds this weight in a Constant "
                      "(or ConstantOfShape) node, as PaddlePaddle exports do; it is drawn as a weight of the nodes "
                      "that read it")
        if tensor.location:
            self._row(row, "external data", tensor.location)
        if tensor.problem:
            self._row(row, "problem", tensor.problem)
        else:
            self._row(row, "statistics", "double-click to compute min / max / mean / std / sparsity",
                      data=("stats", tensor))

    def show_group(self, graph: Graph, path: str, members: list[int]) -> None:
        self.clear()
        sec = self._section("Group")
        self._row(sec, "scope", path or graph.name)
        self._row(sec, "nodes", f"{len(members):,}")
        ops = Counter(graph.nodes[i].type for i in members)
        hist = self._section("Op types")
        for op, count in ops.most_common(30):
            self._row(hist, op, count)
        self._row(None, "Double-click the box", "to expand the group")

    def show_terminal(self, graph: Graph, kind: str, name: str) -> None:
        self.clear()
        sec = self._section("Graph " + kind)
        self._row(sec, "name", name)
        self._row(sec, "type", graph.value(name).type_text())

    def show_statistics(self, row: QTreeWidgetItem, stats: dict) -> None:
        """Fill a 'statistics' row with the computed numbers."""
        row.setText(1, ", ".join(f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}" for k, v in stats.items()))
        row.setToolTip(1, row.text(1))

    def _on_double_click(self, item: QTreeWidgetItem, column: int) -> None:
        data = item.data(0, ROLE)
        if not data:
            return
        if data[0] == "graph":
            self.open_subgraph.emit(data[1], data[2])
        elif data[0] == "stats":
            item.setText(1, "computing…")
            self.stats_requested.emit(data[1], item)
        elif data[0] == "prop":
            self.edit_requested.emit(data[1], data[2], data[3])
        elif data[0] == "node":
            self.node_requested.emit(data[1])


_FACTS: dict[tuple[int, int], tuple[Graph, object, list[tuple[str, str]]]] = {}


def _with_si(count: int, exact: str) -> str:
    """A big count with its size first ("3.41 G · 3,413,377,024"); small ones as they are."""
    from studio.ui.numfmt import si

    return f"{si(count)} · {exact}" if count >= 10_000 else exact


def model_facts(model: Model, graph: Graph) -> list[tuple[str, str]]:
    """Parameters, MACs and what the shapes rest on (given, from a run, inferred; dims unknown).

    A walk over every node (MACs) takes tens of ms for 100k nodes, so the graph panel's open job
    calls this first, off the GUI thread, and the details pane finds the rows here. The rows are
    kept per graph and shape source: every change of shapes sets a new ``model.shape_source``.
    The entry holds both objects, so their ids cannot be reused while it exists.
    """
    from studio.tools.graph.macs import graph_macs, left_out, macs_text
    from studio.tools.graph.shapes import shape_source

    key = (id(graph), id(model.shape_source))
    hit = _FACTS.get(key)
    if hit is not None and hit[0] is graph and hit[1] is model.shape_source:
        return hit[2]
    macs = graph_macs(graph)
    source = (shape_source(model).text(fix="Run shapes asks for their sizes") if graph is model.main
              else "shapes of this subgraph as the file has them")
    total = sum(macs.values())
    exact = macs_text(total, *left_out(graph, macs))
    rows = [("parameters", _with_si(graph.parameters(), exact=f"{graph.parameters():,}")),
            ("MACs", _with_si(total, exact)),
            ("shapes", source)]
    if len(_FACTS) >= 8:  # a few graphs are shown at a time; the old ones may go
        _FACTS.clear()
    _FACTS[key] = (graph, model.shape_source, rows)
    return rows
