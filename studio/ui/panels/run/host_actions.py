"""The host actions — Profile on host, Dump on host (and compare), Benchmark .om — in one place.

The Run menu and the panels' toolbars (profiler: Profile on host…, Benchmark .om…; accuracy:
Dump on host…, Dump on host and compare…) all end here: a panel emits
``links.host_action(kind)``, the Run menu calls :meth:`HostActions.ask` directly. Each action
asks with its dialog (which also picks the run configuration), runs the engine job in a Run
console on the configuration's target, and opens the result in the panel the action belongs to:
PROF_ folders and benchmarks in the profiler, dumps and comparisons in the accuracy panel. Focus
stays with the user: an action started from that panel's toolbar brings the panel back when its
result is in; one started from the Run menu (the user is reading the Run console) loads it behind,
and the status bar says where it went.

Without a workspace or a run configuration the actions stay enabled: a click says what is
missing and opens Edit Configurations… (or says how to open a workspace).
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QObject

from studio.core.errors import UserError
from studio.runs.config import load_configs
from studio.ui.widgets.host_button import KINDS


class HostActions(QObject):
    """Host actions bound to a main window (``workspace``, ``panels``, ``notifier``, ``show_panel``)."""

    def __init__(self, window, edit_configs, current_name):
        """``edit_configs()`` opens Edit Configurations… and returns its dialog; ``current_name()``
        is the Run toolbar's chosen configuration (preselected in the dialogs)."""
        super().__init__(window)
        self.window = window
        self._edit_configs = edit_configs
        self._current_name = current_name
        self.dialog = None  # the last options dialog opened (tests fill and accept it)
        links = getattr(window, "links", None)
        if links is not None and hasattr(links, "host_action"):
            links.host_action.connect(self.ask)

    @property
    def workspace(self):
        return getattr(self.window, "workspace", None)

    def config_names(self) -> list[str]:
        return [c.name for c in load_configs(self.workspace)] if self.workspace is not None else []

    # ---------------------------------------------------------------- asking
    def ask(self, kind: str, origin: str = ""):
        """Open the dialog of action ``kind`` (a key of :data:`KINDS`) asked from the panel
        ``origin`` ("" for the Run menu); returns it, or None when a workspace or run configuration
        is missing (then that is explained instead)."""
        from studio.ui.panels.run import host_dialogs as dialogs

        title = KINDS[kind]
        names = self._guard(self.config_names, title)
        if names is None or not self._explain_missing(title, names):
            return None
        current = self._current_name()
        start = Path(self.workspace.folder)
        if kind == "profile":
            dialog = dialogs.MsprofDialog(names, current, self.window)
            dialog.accepted.connect(lambda: self.profile(dialog.config_name(), dialog.options(),
                                                         dialog.collect.text().strip() or None, origin=origin))
        elif kind == "bench":
            dialog = dialogs.BenchDialog(names, current, start, self.window)
            dialog.accepted.connect(lambda: self.ask_bench_shapes(dialog.config_name(), origin=origin,
                                                                  **dialog.values()))
        else:
            compare = kind == "dump_compare"
            dialog = dialogs.DumpDialog(names, current, start, self.window, compare=compare)
            dialog.accepted.connect(lambda: self._dump_accepted(dialog, compare, origin))
        self.dialog = dialog
        dialog.open()  # window-modal; the GUI thread goes on
        return dialog

    def _explain_missing(self, title: str, names: list[str]) -> bool:
        if self.workspace is None:
            self.window.notifier.report_exception(UserError(
                f"{title} runs a run configuration, and run configurations live in a workspace",
                title, "Open or create a workspace (File > New Workspace…), then add a configuration in "
                       "Run > Edit Configurations…: the host, its working folder and the app's command line."),
                context=title)
            return False
        if not names:
            dialog = self._edit_configs()
            if dialog is not None:
                dialog.problem.setText(f"{title} runs a run configuration on its host, and this workspace has "
                                       "none yet. Add one here (Run on: the host, working folder, command line), "
                                       f"Save, then choose {title}… again.")
            self.window.statusBar().showMessage(f"{title}: add a run configuration first", 10000)
            return False
        return True

    def _dump_accepted(self, dialog, compare: bool, origin: str) -> None:
        values = dialog.values()
        model = values.pop("model")
        if compare:
            values.pop("op_switch")
            self.dump_compare(dialog.config_name(), model, origin=origin, **values)
        else:
            self.dump(dialog.config_name(), model, origin=origin, **values)

    def ask_bench_shapes(self, name: str, model: Path, reference: Path | None = None, origin: str = "", **options):
        """Benchmark; with an original .onnx whose inputs have dynamic dims, ask their sizes first
        (read in a job; nothing is set to 1 behind the user's back)."""
        if reference is None:
            return self.bench(name, model, origin=origin, **options)

        def read(cancel):
            from studio.core.jobs import Progress
            from studio.tools.profiler.local_inputs import missing_shapes, model_inputs

            yield Progress(None, f"reading the inputs of {Path(reference).name}")
            if not Path(reference).is_file():
                raise UserError("Original model not found", reference, "Choose the .onnx the .om was converted from.")
            specs = model_inputs(Path(reference))
            return specs if missing_shapes(specs, {}, {}) else None

        def then(specs) -> None:
            if specs is None:
                self.bench(name, model, reference=reference, origin=origin, **options)
                return
            from studio.ui.widgets.shape_dialog import ShapeDialog

            shapes = self.dialog = ShapeDialog(Path(reference).name, specs, self.window, action="benchmark")
            shapes.accepted.connect(lambda: self.bench(name, model, reference=reference, shapes=shapes.shapes(),
                                                       origin=origin, **options))
            shapes.open()

        handle = self.window.runner.start(f"Reading the inputs of {Path(reference).name}", read)
        handle.finished.connect(then)
        return handle

    # ---------------------------------------------------------------- running
    def _config(self, name: str):
        config = next((c for c in load_configs(self.workspace) if c.name == name), None) if self.workspace else None
        if config is None:
            raise UserError(f"No run configuration called {name!r}", "Run configurations",
                            "Add one in Run > Edit Configurations….")
        return config

    def _out(self, kind: str) -> Path:
        return Path(self.workspace.folder) / kind / f"host-{time.strftime('%Y%m%d-%H%M%S')}"

    def _guard(self, action, context: str = "Run"):
        try:
            return action()
        except UserError as exc:
            self.window.notifier.report_exception(exc, context=context)
            return None

    def _launch(self, title: str, config, make, on_result):
        panel = self.window.panels["run"]
        console = panel.launch(title, panel.target_for(config), make, on_result)
        self.window.show_panel("run")
        return console

    def _context(self):
        return getattr(getattr(self.window, "links", None), "host_context", None)

    def profile(self, name: str, options=None, collect: str | None = None, origin: str = ""):
        """Profile the configuration ``name`` on its target; the PROF_ folder opens in the profiler
        (in front when ``origin``, the panel the user asked from, is the profiler)."""
        def start():
            from studio.ops import msprof

            config = self._config(name)
            request = msprof.Request(self._out("profiles"), name, collect=collect,
                                     msprof_options=options.switches() if options is not None else [])
            make = lambda cancel: msprof.run(request, config.target, self._context(), cancel, config=config)  # noqa: E731
            return self._launch(f"Profile {name}", config, make,
                                lambda r: self.window.open_paths([r.profile.folder], focus=origin == "profiler"))
        return self._guard(start)

    def dump(self, name: str, model: Path, layers=None, mode: str = "output", op_switch: str = "off",
             origin: str = ""):
        """Dump the configuration ``name`` on its target; the dump folder opens in the accuracy panel
        (in front when the user asked from it)."""
        def start():
            from studio.ops import npu_dump

            config = self._config(name)
            if not Path(model).is_file():
                raise UserError("Model not found", model, "Choose the .om file the app loads.")
            request = npu_dump.Request(self._out("dumps"), name, Path(model), layers=list(layers or []), mode=mode,
                                       op_switch=op_switch)
            make = lambda cancel: npu_dump.run(request, config.target, self._context(), cancel, config=config)  # noqa: E731
            return self._launch(f"Dump {name}", config, make,
                                lambda r: self.window.open_paths([r.dump.folder], focus=origin == "accuracy"))
        return self._guard(start)

    def dump_compare(self, name: str, model: Path, reference: Path, inputs: dict, layers=None, mode: str = "output",
                     origin: str = ""):
        """Journey 3 in one action: dump on the host and here with the same inputs, compare; the
        comparison opens in the accuracy panel."""
        def start():
            from studio.ops import npu_dump

            config = self._config(name)
            for path, what in ((Path(model), "the .om"), (Path(reference), "the original .onnx"),
                               *((Path(p), f"input {n}") for n, p in inputs.items())):
                if not path.is_file():
                    raise UserError(f"File not found: {what}", path, "Choose an existing file.")
            request = npu_dump.Request(self._out("dumps"), name, Path(model), layers=list(layers or []), mode=mode,
                                       npy=[f"{n}={p}" for n, p in inputs.items()], reference=Path(reference))
            make = lambda cancel: npu_dump.run(request, config.target, self._context(), cancel, config=config)  # noqa: E731

            def show(done) -> None:
                both = done.both
                self.window.panels["accuracy"].set_result(both.result, (both.cpu_dump, both.host.folder))
                self._bring("accuracy", origin, f"Dump and compare {name}")

            return self._launch(f"Dump and compare {name}", config, make, show)
        return self._guard(start)

    def bench(self, name: str, model: Path, tool: str = "msame", loop: int = 100, warmup: int = 5, device: int = 0,
              reference: Path | None = None, shapes: dict | None = None, origin: str = ""):
        """Time ``model`` with ``tool`` where the configuration ``name`` runs; the result opens in the
        profiler's Summary. With ``reference`` (the original .onnx) it is also timed here with ONNX
        Runtime, same loops and warm-ups, and the profiler's Compare tab shows NPU against it."""
        def start():
            from studio.ops import bench_om

            config = self._config(name)
            target = self.window.panels["run"].target_for(config)
            out = self._out("profiles")
            request = bench_om.Request(Path(model), tool, loop, warmup, device, output=out.with_name(f"bench-{out.name}"),
                                       reference=reference, shapes=dict(shapes or {}))

            def make(cancel):
                return (yield from bench_om.run(request, target=target, cancel=cancel))

            return self._launch(f"Benchmark {Path(model).name}", config, make,
                                lambda result: self._show_bench(result, origin == "profiler"))
        return self._guard(start)

    def _show_bench(self, result, focus: bool) -> None:
        if result.reference is None:
            self.window.open_paths([result.folder], focus=focus)
            return
        profiler = self.window.panels["profiler"]
        profiler.compare_paths(result.reference.folder, result.folder)  # ONNX Runtime here = baseline
        self.window.open_paths([result.reference.folder, result.folder], focus=focus)

    def _bring(self, panel: str, origin: str, what: str) -> None:
        """Bring ``panel`` to the front if the user asked from it; else say where the result went."""
        if origin == panel:
            self.window.show_panel(panel)
        elif not self.window.is_in_front(panel):
            title = self.window.panel_title(panel)
            self.window.statusBar().showMessage(f"{what}: the result is in the {title} panel (Tools › {title})", 10000)

