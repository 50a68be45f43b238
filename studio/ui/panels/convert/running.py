"""The Converter panel's run: Convert (local passes here or on a host, or ATC), the streamed log,
the result and what follows it; a mixin of :class:`~studio.ui.panels.convert.panel.ConvertPanel`."""

from __future__ import annotations

from studio.core.errors import StudioError, UserError
from studio.core.jobs import Progress
from studio.ui.jobs import tee
from studio.ui.panels.convert.atc_jobs import atc_job, with_percent
from studio.ui.panels.convert.model_page import ATC
from studio.ui.panels.convert.state import ASK


class Running:
    """Run the conversion as a job, stream its log, show its result."""

    def finish(self, where: str | None = ASK) -> None:
        """Run the conversion (local job, or ATC) with the log streamed below the pages.

        A local (ONNX) conversion runs on this computer (``where`` None) or with Studio's engine on
        the SSH host ``where``; by default the user is asked when hosts exist.
        """
        host, key = None, None
        try:
            options = self.options()
            aipp_path, aipp_text = self.planned_aipp()
            if self.model_page.mode == ATC:
                from studio.tools.convert.atc_command import build_atc_argv, preview

                argv = build_atc_argv(options, check_files=aipp_text is None)
                if self.model_page.host_picker.current_name() is None:
                    self._log(f"$ {preview(argv)}")  # nowhere to run it: the command can still be copied
                host = self.model_page.host_picker.current_host()
                make, key, message = atc_job(options, host, self.host_context, aipp_path, aipp_text)
                self._log(message)
                title = f"ATC on {host.name}: {options.model.name}" if host else f"ATC: {options.model.name}"
            else:
                if options.output is None:
                    raise UserError("No output path", "page 1, Output", "Give the converted model's path.")
                if where == ASK:
                    hosts = sorted(self.host_context.store.hosts)
                    if hosts:
                        self._ask_where(options.model.name, hosts)
                        return
                    where = None
                self._log(f"$ {' '.join(options.cli_argv())}" + (f" --host {where}" if where else ""))
                from studio.ui.panels.convert.on_engine import convert_job

                context = self.host_context if where else None
                make = lambda cancel: convert_job(context, where, options, cancel,  # noqa: E731
                                                  aipp_path, aipp_text)
                title = f"Converting {options.model.name}" + (f" on {where}" if where else "")
        except StudioError as exc:
            self._log(f"error: {exc}")
            self.status.emit(f"Converter: {getattr(exc, 'what', exc)}")
            return
        self.state.original = options.model
        self.open_button.setEnabled(False)
        self.compare_button.setEnabled(False)
        self.state.lines.clear()
        self.job = self.runner.start(title, lambda cancel: tee(make(cancel), self.state.lines, label=with_percent),
                                     key=key)
        self.job.progress.connect(self._on_progress)
        self.job.finished.connect(self._on_finished)
        self.job.failed.connect(self._on_job_failed)
        self.job.ended.connect(self._on_ended)
        self.finish_button.setEnabled(False)
        self.cancel_button.show()

    def _ask_where(self, model_name: str, hosts: list[str]) -> None:
        """"Run on": this computer or a host, where Studio's engine converts and validates."""
        from studio.ui.widgets.run_on import RunOnDialog

        validated = " and validate it with ONNX Runtime" if self.advanced_page.validate_box.isChecked() else ""
        dialog = self.run_on_dialog = RunOnDialog(
            model_name, hosts, self, verb="Convert", ok_text="Convert",
            what="the converted model and its report come back next to Output",
            intro=f"Convert {model_name} with Studio's passes{validated}.")
        dialog.accepted.connect(lambda: self.finish(where=dialog.host()))
        dialog.open()

    def _on_progress(self, _step: Progress) -> None:
        self._drain()

    def _drain(self) -> None:
        """Move every line the job queued into the log (progress signals are throttled; lines are not)."""
        text = self.state.take_lines()
        if text is not None:
            self._log(text)

    def _on_finished(self, result) -> None:
        self._drain()
        done = self.state.record(result)
        self._log(done.log)
        self.status.emit(done.status)
        if done.path is not None:
            self.open_button.setEnabled(True)
            self.compare_button.setEnabled(done.comparable)
            self.links.model_converted.emit(done.path)
            self.request_load.emit(done.path)  # into the graph panel, behind the log being read

    def _on_job_failed(self, exc: BaseException, _text: str) -> None:
        # The runner posts the failure on the notice board (dialog and status line). The error
        # line stays at the end of the conversion's log too, under the tool output that led to it
        # (ATC's own error codes), where the user reads the run.
        self._drain()
        self._log(f"error: {exc}" if isinstance(exc, StudioError) else f"error: {type(exc).__name__}: {exc}")

    def _on_ended(self) -> None:
        self._drain()
        self.finish_button.setEnabled(True)
        self.cancel_button.hide()

    def _on_cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()
            self._log("cancelled")

    def _on_open_result(self) -> None:
        if self.state.result_path is not None:
            self.request_open.emit(self.state.result_path)

    def _on_compare(self) -> None:
        if self.state.result_path is not None:
            self.links.compare_models.emit(self.state.original, self.state.result_path)
            self.links.focus.emit("accuracy")
