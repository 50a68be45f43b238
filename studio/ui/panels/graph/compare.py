"""The graph panel's side-by-side compare: two models, nodes found on one side only marked with a
coloured dashed border.

:class:`SideBySide` shows and hides the right side and marks both sides of its named collaborator,
the panel's :class:`~.views.GraphViews`; the panel opens the models.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QSplitter

from studio.ui.panels.graph.render import ONLY_LEFT, ONLY_RIGHT


class SideBySide(QObject):
    """The right side's visibility and the only-on-one-side marks.

    Signals:
        closed(): back to one model (the toolbar follows).
        status(str): a short message for the status bar.
    """

    closed = Signal()
    status = Signal(str)

    def __init__(self, views, canvases: QSplitter, parent: QObject | None = None):
        super().__init__(parent)
        self.views = views  # GraphViews: the two sides
        self.canvases = canvases  # the splitter holding both canvases

    @property
    def showing(self) -> bool:
        """True while the right side is on screen."""
        return self.views.right.canvas.isVisible()

    def show(self) -> None:
        """Make room for the right side (the panel then opens the models)."""
        self.views.right.canvas.show()
        self.canvases.setSizes([1, 1])

    def close(self) -> None:
        """Back to one model: hide the right side and drop the marks."""
        left, right = self.views.left, self.views.right
        right.canvas.hide()
        right.model, right.stack = None, []
        right.canvas.set_view(None)
        self.views.active = left
        self.apply_marks()
        self.views.update_caption(left)
        left.canvas.update()
        self.closed.emit()

    def apply_marks(self) -> None:
        """Mark the nodes whose name the other side lacks (both sides shown), and say how many."""
        left, right = self.views.left, self.views.right
        for side in (left, right):
            side.canvas.state.marks.clear()
            side.only_here = 0
        if left.graph is None or right.graph is None or not self.showing:
            return
        left_names = set(left.graph.node_index())
        right_names = set(right.graph.node_index())
        for side, own, other, colour in ((left, left_names, right_names, ONLY_LEFT),
                                         (right, right_names, left_names, ONLY_RIGHT)):
            view = side.view
            if view is None:
                continue
            only = [i for i, node in enumerate(view.graph.nodes) if node.name not in other]
            for item in set(view.item_of_node[only].tolist()) if only else ():
                side.canvas.state.marks[int(item)] = colour
            side.only_here = len(only)
            self.views.update_caption(side)
            side.canvas.update()
        self.status.emit(f"Graph compare: {len(left_names - right_names):,} nodes only left, "
                         f"{len(right_names - left_names):,} only right")
