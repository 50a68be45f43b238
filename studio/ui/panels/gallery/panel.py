"""The gallery: the pictures of an infer run with their overlays, sorted by a metric, two runs compared."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListView,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio.core.formats import Detected
from studio.ui.panels.base import Panel
from studio.ui.panels.gallery.list_model import ROW_ROLE, GalleryModel
from studio.ui.panels.gallery.preview import Preview
from studio.ui.panels.gallery.run_dialog import InferDialog
from studio.ui.panels.gallery.state import METRICS, GalleryState, Run
from studio.ui.panels.gallery.thumbs import ThumbCache, thumbnails_job
from studio.ui.widgets.empty_state import EmptyState

SHOW = (("all pictures", 0), ("worst 20", 20), ("worst 100", 100), ("failed only", -1))
MARGIN_ROWS = 40  # thumbnails read beyond those on screen, so a small scroll finds them ready


def _button(text: str, tip: str, handler, parent: QWidget) -> QToolButton:
    button = QToolButton(parent)
    button.setText(text)
    button.setToolTip(tip)
    button.setAutoRaise(True)
    button.clicked.connect(handler)
    return button


class GalleryPanel(Panel):
    """Results of `studio infer` as thumbnails (see docs/infer.md)."""

    NAME = "gallery"
    TITLE = "Gallery"
    AREA = Qt.DockWidgetArea.RightDockWidgetArea

    def __init__(self, runner, parent=None, links=None):
        super().__init__(runner, parent, links)
        self.state = GalleryState()
        self.cache = ThumbCache()
        self.model = GalleryModel(self.state, self.cache, self)
        self._thumb_job = None
        self._preview_job = None
        self._thumb_range = (0, -1)
        self._loading_compare = False
        self.last_request = None  # the Run… dialog starts from the last run's model and pictures
        self.last_host: str | None = None
        self._build()

    def _build(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(_button("Run…", "Run an ONNX model over a folder of pictures (as studio infer does)",
                              self._on_run_clicked, self))
        bar.addWidget(_button("Open…", "Open the output folder of a studio infer run", self._on_open_clicked, self))
        self.compare_button = _button("Compare with…", "Put a second run of the same pictures beside this one "
                                      "(e.g. FP32 ONNX here vs FP16 OM on the host)", self._on_compare_clicked, self)
        bar.addWidget(self.compare_button)
        bar.addStretch(1)
        self.view_bar = QWidget(self)  # sorting on a row of its own: the panel fits a laptop's dock
        view_row = QHBoxLayout(self.view_bar)
        view_row.setContentsMargins(0, 0, 0, 0)
        bar_row = bar
        bar = view_row
        bar.addWidget(QLabel("Sort", self))
        self.sort_combo = QComboBox(self)
        self.sort_combo.currentIndexChanged.connect(self._on_view_changed)
        bar.addWidget(self.sort_combo)
        self.worst_first = QCheckBox("worst first", self)
        self.worst_first.setChecked(True)
        self.worst_first.toggled.connect(self._on_view_changed)
        bar.addWidget(self.worst_first)
        self.show_combo = QComboBox(self)
        for text, _limit in SHOW:
            self.show_combo.addItem(text)
        self.show_combo.currentIndexChanged.connect(self._on_view_changed)
        bar.addWidget(self.show_combo)
        self.summary = QLabel(self.state.summary_text(), self)
        self.summary.setWordWrap(True)
        self.grid = QListView(self)
        self.grid.setViewMode(QListView.ViewMode.IconMode)
        self.grid.setResizeMode(QListView.ResizeMode.Adjust)
        self.grid.setUniformItemSizes(True)
        self.grid.setLayoutMode(QListView.LayoutMode.Batched)  # 10,000 cells laid out across event-loop turns
        self.grid.setBatchSize(1000)
        self.grid.setMovement(QListView.Movement.Static)
        self.grid.setWordWrap(True)
        self.grid.setSpacing(6)
        self.grid.setModel(self.model)
        self.grid.selectionModel().currentChanged.connect(self._on_current_changed)
        self.grid.verticalScrollBar().valueChanged.connect(lambda _v: self._thumb_timer.start())
        self.preview = Preview(self)
        split = self.split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.grid)
        split.addWidget(self.preview)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        self.empty = EmptyState("No pictures yet", "Run an ONNX model over a folder of pictures to see each "
                                "picture with the model's answer, worst first (also: <code>studio infer</code>).",
                                self)
        self.empty.add_action("Run a model over pictures…", self._on_run_clicked)
        self.empty.add_action("Open a results folder…", self._on_open_clicked, "The output folder of studio infer")
        view_row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(bar_row)
        layout.addWidget(self.view_bar)
        layout.addWidget(self.summary)
        layout.addWidget(self.empty, 1)
        layout.addWidget(split, 1)
        self._show_empty()
        # Scrolling fires many times a second: thumbnails are asked for once it settles.
        self._thumb_timer = QTimer(self, singleShot=True, interval=60)
        self._thumb_timer.timeout.connect(self._request_thumbnails)

    # ------------------------------------------------------------------ runs
    def open_file(self, detected: Detected) -> None:
        self.open_results(detected.path)

    def open_results(self, path: Path, compare: bool = False):
        """Show the run in ``path`` (or put it beside the one shown); returns the job handle."""
        handle = self.runner.start(f"Reading {Path(path).name}", lambda cancel: _load_job(Path(path)))
        self._loading_compare = compare
        # Bound methods, not lambdas: Qt drops the connection when the panel goes, a lambda would
        # still run on a deleted panel when a job ends late.
        handle.finished.connect(self._on_loaded)
        return handle

    def _on_loaded(self, run: Run) -> None:
        compare = self._loading_compare
        if compare and self.state.run is not None:
            self.state.other = run
        else:
            self.state.run, self.state.other = run, None
            self.cache.clear()
            self.grid.selectionModel().clear()
            if self._preview_job is not None and self._preview_job.active:
                self._preview_job.cancel()  # its pictures are the last run's
            self.preview.show_row(None)  # the last run's picture is not this run's
        self._fill_sort_combo()
        self._on_view_changed()
        self._show_empty()
        self.status.emit(f"Gallery: {self.state.summary_text()}")

    def _show_empty(self) -> None:
        has = self.state.run is not None
        self.split.setVisible(has)
        self.summary.setVisible(has)  # the empty state says it
        self.view_bar.setVisible(has)  # nothing to sort or filter yet (an empty Sort box looked broken)
        self.compare_button.setEnabled(has)  # a second run goes beside a first one
        self.empty.setVisible(not has)

    def run_infer(self, options, host: str | None = None):
        """Run a model over pictures (a :mod:`studio.ops.infer` request, or InferOptions) here or on
        ``host`` as a job and show the result; returns the job handle."""
        from studio.ops import infer

        request = options if isinstance(options, infer.Request) else infer.Request.of(options)
        self.last_request, self.last_host = request, host
        context = self.host_context if host else None
        handle = self.runner.start(f"Running {request.model.name} over {request.images.name}"
                                   + (f" on {host}" if host else ""),
                                   lambda cancel: infer.run(request, host, context, cancel),
                                   key=f"host:{host}" if host else None)
        handle.finished.connect(self._on_run_finished)
        return handle

    def _on_run_finished(self, result) -> None:
        self.open_results(result.infer.out)

    def _on_run_clicked(self) -> None:
        dialog = self.run_dialog = InferDialog(self.workspace_folder, self, sorted(self.host_context.store.hosts))
        if self.last_request is not None:
            dialog.fill(self.last_request)
            dialog.where.setCurrentIndex(max(dialog.where.findData(self.last_host), 0))
        dialog.accepted.connect(lambda: self.run_infer(dialog.request(), dialog.host()))
        dialog.open()  # not exec(): the window (and its jobs' progress) keeps running meanwhile

    def _on_open_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a studio infer output folder",
                                                  str(self.workspace_folder or ""))
        if folder:
            self.open_results(Path(folder))

    def _on_compare_clicked(self) -> None:
        if self.state.run is None:
            self.status.emit("Gallery: open a run first, then compare another run of the same pictures with it")
            return
        folder = QFileDialog.getExistingDirectory(self, "Compare with another studio infer run",
                                                  str(self.state.run.folder.parent))
        if folder:
            self.open_results(Path(folder), compare=True)

    # ------------------------------------------------------------------ view
    def _fill_sort_combo(self) -> None:
        current = self.sort_combo.currentData()
        self.sort_combo.blockSignals(True)
        self.sort_combo.clear()
        self.sort_combo.addItem("name", "image")
        for key in self.state.metrics():
            self.sort_combo.addItem(METRICS[key][0], key)
            if self.state.other is not None:
                self.sort_combo.addItem(f"change of {METRICS[key][0]}", f"delta:{key}")
        index = self.sort_combo.findData(current)
        if index < 0 and self.state.metrics():  # a new run: its first metric, worst first
            index = 1
        self.sort_combo.setCurrentIndex(max(index, 0))
        self.sort_combo.blockSignals(False)

    def _on_view_changed(self, *_args) -> None:
        self.state.sort_key = self.sort_combo.currentData() or "image"
        self.state.worst_first = self.worst_first.isChecked()
        limit = SHOW[max(self.show_combo.currentIndex(), 0)][1]
        self.state.failed_only = limit < 0
        self.state.limit = max(limit, 0)
        self.model.refresh()
        self.summary.setText(self.state.summary_text())
        self._thumb_timer.start()

    def _visible_range(self) -> tuple[int, int]:
        """The rows on screen, and a margin around them."""
        if not self.model.rows:
            return 0, -1
        viewport = self.grid.viewport().rect()
        cell = self.model.data(self.model.index(0), Qt.ItemDataRole.SizeHintRole)
        step_w, step_h = cell.width() + 2 * self.grid.spacing(), cell.height() + 2 * self.grid.spacing()
        per_row = max(1, viewport.width() // step_w)
        first = self.grid.indexAt(QPoint(self.grid.spacing() + 2, self.grid.spacing() + 2)).row()
        first = max(first, 0)
        last = first + per_row * (viewport.height() // step_h + 2)
        return max(0, first - MARGIN_ROWS), min(len(self.model.rows) - 1, last + MARGIN_ROWS)

    def _request_thumbnails(self) -> None:
        run = self.state.run
        if run is None:
            return
        first, last = self._visible_range()
        wanted = []
        for row in self.model.rows[first:last + 1]:
            key = self.model.key(row)
            picture = run.picture(row)
            if key not in self.cache and picture is not None:
                wanted.append((key, picture))
        if not wanted:
            return
        if self._thumb_job is not None and self._thumb_job.active:
            self._thumb_job.cancel()
        self._thumb_range = (first, last)
        self._thumb_job = self.runner.start("Thumbnails", lambda cancel: thumbnails_job(wanted, cancel))
        self._thumb_job.finished.connect(self._on_thumbnails)

    def _on_thumbnails(self, images: dict) -> None:
        self.cache.put_images(images)
        self.model.thumbnails_changed(*self._thumb_range)

    def _on_current_changed(self, current, _previous) -> None:
        row = current.data(ROW_ROLE) if current.isValid() else None
        other = self.state.other_row(row) if row is not None else None
        titles = (self.state.run.folder.name, self.state.other.folder.name if self.state.other else "") \
            if self.state.run else ("", "")
        self.preview.show_row(row, other, titles)
        if row is None:
            return
        left = self.state.run.picture(row)
        right = self.state.other.picture(other) if other is not None else None
        if self._preview_job is not None and self._preview_job.active:
            self._preview_job.cancel()
        self._preview_job = self.runner.start("Reading the picture",
                                              lambda cancel: _read_pictures(left, right, other is not None))
        self._preview_job.finished.connect(self._on_pictures)

    def _on_pictures(self, pictures) -> None:
        self.preview.show_pictures(*pictures)


def _load_job(path: Path):
    yield from ()
    return Run.load(path)


def _read_pictures(left: Path | None, right: Path | None, two: bool):
    yield from ()
    read = (lambda p: (p, QImage(str(p)) if p is not None else QImage()))
    return read(left), (read(right) if two else None)
