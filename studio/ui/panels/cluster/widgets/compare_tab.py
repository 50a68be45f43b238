"""The Compare tab: the open folder of ranks (the baseline) against a second one (the comparison) —
the step split per rank before and after with the differences and, where ranks have repeated steps,
their significance; the matrix links and each op type's links, before and after; the operator memory
op by op. The same comparison as ``studio profile compare BASE NEW`` (and ``studio profile memory BASE
--compare NEW``), run as a job (:func:`..compare_data.compare_job`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QWidget,
)

from studio.core.errors import UserError
from studio.ui.panels.cluster.compare_data import (
    LINK_HEADERS,
    MEMORY_HEADERS,
    OP_LINK_HEADERS,
    STEP_HEADERS,
    compare_job,
    link_rows,
    memory_rows,
    step_rows,
    summary_text,
)
from studio.ui.panels.cluster.widgets.parts import column, message_label, titled
from studio.ui.panels.cluster.widgets.tables import fill, small_table

HINT = ("Compare this folder of ranks (the baseline) with another run's: click \"Compare with…\" and choose its "
        "folder. From a terminal: <code>studio profile compare BASE_DIR NEW_DIR</code>.")


class CompareTab(QWidget):
    """``set_base(folder)`` when a folder opens; ``compare_with(folder)`` runs the comparison."""

    def __init__(self, runner, parent=None):
        super().__init__(parent)
        self.runner, self.handle, self.base, self.new, self.result = runner, None, None, None, None
        self._generation = 0
        self.button = QPushButton("Compare with…", self)
        self.button.setToolTip("Choose a second folder of ranks: the comparison against this one (the baseline)")
        self.button.clicked.connect(self._on_choose)
        self.folders = QLabel(self)
        self.folders.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.steps = small_table(STEP_HEADERS, self, stretch=-1)
        self.links = small_table(LINK_HEADERS, self, stretch=-1)
        self.op_links = small_table(OP_LINK_HEADERS, self, stretch=-1)
        self.memory = small_table(MEMORY_HEADERS, self, stretch=-1)
        self.lower = QTabWidget(self)
        self.lower.addTab(self.links, "Links")
        self.lower.addTab(self.op_links, "Links by op type")
        self.lower.addTab(self.memory, "Memory by op")
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(titled("Step split per rank: base → new (ms)", self.steps, split))
        split.addWidget(self.lower)
        split.setSizes([260, 300])
        content = QWidget(self)
        column(content, 0, self.summary, split)
        self.message = message_label(HINT, self)
        self.stack = QStackedWidget(self)
        self.stack.addWidget(self.message)
        self.stack.addWidget(content)
        bar = QHBoxLayout()
        bar.addWidget(self.button)
        bar.addWidget(self.folders, 1)
        column(self, 4, bar, self.stack)

    def set_base(self, folder: Path) -> None:
        """A new baseline: the last comparison no longer applies."""
        self._generation += 1
        if self.handle is not None:
            self.handle.cancel()
        self.base, self.new, self.result = Path(folder), None, None
        self._show_folders(self.base, None)
        self.message.setText(HINT)
        self.stack.setCurrentWidget(self.message)

    def _show_folders(self, base: Path, new: Path | None) -> None:
        # the last two parts of each path (full ones in the tooltip): two full paths widened the window
        short = lambda p: "/".join(p.parts[-2:])  # noqa: E731
        self.folders.setText(f"baseline: {short(base)}" + (f"    comparison: {short(new)}" if new else ""))
        self.folders.setToolTip(f"baseline: {base}" + (f"\ncomparison: {new}" if new else ""))

    def _on_choose(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Compare with a folder of ranks",
                                                  str(self.base.parent if self.base else ""))
        if folder:
            self.compare_with(Path(folder))

    def compare_with(self, folder: Path):
        """Compare the baseline with ``folder`` as a job; returns its handle."""
        if self.base is None:
            return None
        self._generation += 1
        generation, base, self.new = self._generation, self.base, Path(folder)
        if self.handle is not None:
            self.handle.cancel()
        self._show_folders(base, self.new)
        self.message.setText(f"Comparing {base.name} with {self.new.name} …")
        self.stack.setCurrentWidget(self.message)
        self.handle = self.runner.start(f"Comparing {base.name} with {self.new.name}",
                                        lambda cancel: compare_job(base, self.new))
        self.handle.finished.connect(lambda result: generation == self._generation and self.show_result(result))
        self.handle.failed.connect(lambda exc, _tb: generation == self._generation and self._on_failed(exc))
        return self.handle

    def show_result(self, result: dict) -> None:
        self.result = result
        cluster = result.get("cluster") or {}
        self.summary.setText(summary_text(result))
        fill(self.steps, step_rows(cluster))
        fill(self.links, link_rows(cluster.get("links", [])))
        fill(self.op_links, link_rows(cluster.get("op_links", []), op_type=True))
        fill(self.memory, memory_rows(result.get("memory")))
        self.stack.setCurrentIndex(1)

    def _on_failed(self, exc: BaseException) -> None:
        text = exc.format() if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
        self.message.setText(f"Cannot compare these folders.\n\n{text}")
        self.stack.setCurrentWidget(self.message)
