"""The Quantize page's run: ``studio.ops.quantize`` (the operation ``studio quantize`` runs) as a job
on the shared runner, its progress on the page, its result in the page's view, the sensitivity
overlay sent to the graph panel, and the mixed model opened there on request.

An object joined to the page by signals; the Converter panel makes one and hands it the page, the
runner, the links and four callables (the window's host context, log a line, say a status, open a
file). With a host chosen under Ascend the job is ``studio quantize --host NAME``'s: the search here,
AMCT and ATC there, their files fetched back (one job at a time per host, as every host job).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject

from studio.core.errors import StudioError
from studio.ops.quantize import DEFAULT_MIN_COSINE
from studio.ui.panels.convert import quantize_state as qs


class QuantizeJob(QObject):
    """Runs the page's request; keeps the latest result (``result``) and its request."""

    def __init__(self, page, runner, links, model_path: Callable[[], Path | None], log: Callable[[str], None],
                 status: Callable[[str], None], open_path: Callable[[Path], None], parent: QObject | None = None,
                 host_context: Callable[[], object] | None = None):
        super().__init__(parent)
        self.page, self.runner, self.links = page, runner, links
        self.model_path, self.log, self.status, self.open_path = model_path, log, status, open_path
        self.host_context = host_context
        self.handle = None
        self.result = None
        self.request = None
        page.run_requested.connect(self.start)
        page.cancel_requested.connect(self.cancel)
        page.view.show_in_graph.connect(self.show_in_graph)
        page.view.open_mixed.connect(self.open_mixed)
        page.view.layer_clicked.connect(self._on_layer_clicked)

    def start(self):
        """Build the request from the page and run it; returns the job handle (None on a form error)."""
        from studio.ops import quantize

        try:
            request = self.page.request(self.model_path())
            host = self.page.host()
        except StudioError as exc:
            self.log(f"error: {exc}")
            self._say(f"Converter: {getattr(exc, 'what', exc)}")
            return None
        argv = request.to_argv() + (["--host", host] if host else [])
        self.log("$ studio quantize " + " ".join(_quoted(a) for a in argv))
        self.page.set_running(True)
        self.page.show_step(None, f"quantising {request.model.name}")
        context = self.host_context() if host and self.host_context is not None else None
        title = f"Quantizing {request.model.name}" + (f" (AMCT and ATC on {host})" if host else "")
        self.handle = self.runner.start(title, lambda cancel: quantize.run(request, host, context, cancel),
                                        key=f"host:{host}" if host else None)
        self.handle.progress.connect(lambda step: self.page.show_step(step.fraction, step.message))
        self.handle.finished.connect(lambda result: self._on_finished(request, result))
        self.handle.failed.connect(self._on_failed)
        self.handle.cancelled.connect(self._on_cancelled)
        self.handle.ended.connect(lambda: self.page.set_running(False))
        return self.handle

    def cancel(self) -> None:
        if self.handle is not None and self.handle.active:
            self.handle.cancel()
            self.page.show_step(None, "cancelling…")

    # -- results --------------------------------------------------------------------------------
    def _on_finished(self, request, result) -> None:
        self.request, self.result = request, result
        self.page.view.set_result(result)
        self.page.show_step(1.0, f"finished: wrote {Path(result.out).name}")
        self.log(qs.summary(result))
        for cells, _tips in qs.table_rows(result):
            self.log("  " + " | ".join(cells))
        self._say(f"Converter: wrote {Path(result.out).name} ({len(result.fallback)} layer(s) left in float)")
        if result.sensitivity:
            self.links.overlay.emit(self.overlay())  # quietly: the page stays in front

    def _on_failed(self, exc: BaseException, _text: str) -> None:
        text = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.log(f"error: {text}")
        # The runner posts the failure on the notice board (dialog and status line); the error line
        # stays in the run's log, under the steps that led to it, and the step line stops running.
        self.page.show_step(None, "failed")

    def _on_cancelled(self) -> None:
        self.log("quantisation cancelled: nothing written")
        self.page.show_step(None, "cancelled: nothing written")

    def overlay(self, model: Path | None = None):
        """The sensitivity overlay of the latest result (on the FP32 model unless ``model``)."""
        min_cosine = self._min_cosine()
        return qs.sensitivity_overlay(self.result, min_cosine, model)

    def _min_cosine(self) -> float | None:
        if self.request is None:
            return None
        task_target = any(getattr(self.request, f) is not None
                          for f in ("max_top1_drop", "max_map_drop", "max_dice_drop", "max_iou_drop"))
        if task_target:  # the target names no cosine: the overlay's bands say so
            return None
        return self.request.min_cosine if self.request.min_cosine is not None else DEFAULT_MIN_COSINE

    def show_in_graph(self) -> None:
        if self.result is None:
            return
        self.links.overlay.emit(self.overlay())
        self.links.focus.emit("graph")

    def open_mixed(self) -> None:
        """The mixed model in the graph panel, its layers coloured by sensitivity (the rolled-back
        ones marked)."""
        if self.result is None:
            return
        out = Path(self.result.out)
        if self.result.sensitivity:  # the graph panel opens the overlay's model, then colours it
            self.links.overlay.emit(self.overlay(out))
        else:
            self.open_path(out)
        self.links.focus.emit("graph")

    def _on_layer_clicked(self, name: str) -> None:
        if self.result is not None:
            self.links.show_node.emit(Path(self.result.model), name)

    def _say(self, text: str) -> None:
        self.status(text)


def _quoted(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
