"""The signals panels use to ask each other for things, without importing each other.

The main window owns one ``PanelLinks`` and hands it to every panel. A panel that can serve a
request connects to its signal (the graph panel listens to ``show_node`` and ``overlay``); a panel
that wants something emits it (the profiler emits ``show_node`` for a clicked op). ``focus`` asks
the main window to bring a panel's dock to the front.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, Signal


@dataclass
class Overlay:
    """Numbers attached to node names, drawn by the graph panel as colours with a legend.

    ``thresholds`` split values into bands (e.g. ``[0.05, 0.10]`` for time share, ``[0.99]``
    for cosine similarity); ``higher_is_better`` says which end of the scale is green.
    ``model`` names the model the values belong to, when known. ``verdicts`` (node name ->
    ``"pass"`` / ``"fail"``) colour by verdict instead of by value; ``labels`` replace the value
    shown beside a box.
    """

    title: str
    values: dict[str, float]
    thresholds: list[float] = field(default_factory=list)
    higher_is_better: bool = False
    unit: str = ""
    model: Path | None = None
    verdicts: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


class PanelLinks(QObject):
    """Cross-panel requests. All arguments are plain Python objects.

    Signals:
        focus(str): bring the panel with this NAME to the front.
        show_node(object, str): (model path or None for the model on screen, node name) —
            the graph panel opens the model if needed and selects the node.
        overlay(Overlay): the graph panel colours nodes by these values.
        compare_models(object, object): (golden model, converted model) — the accuracy panel
            prepares a comparison of the two (dump both, compare).
        compare_graphs(object, object): (left model, right model) — the graph panel shows
            the two side by side.
        node_selected(object, str): (model path or None, node name) — the graph panel emits it
            when a node is clicked; the accuracy panel's msprobe view follows a module graph's
            clicks (construct.json) to that module's rows.
        convert_model(object): a model path — the converter loads it on its first page and
            brings itself to the front (the graph panel's "Convert…" emits it).
        convert_original(object, object): the original model and a repro made from it — "Convert…"
            on a repro converts the original; the converter's status says so (one message, not two).
        profile_model(object): an ONNX model path — the profiler runs a local ONNX Runtime
            profile of it (as `studio profile run` does), opens the result and brings itself to
            the front (the graph panel's "Profile" emits it).
        check_fp16(object): an ONNX model path — the accuracy panel dumps it in FP32 and in FP16
            simulation with the same seeded input, compares the two, shows the result, sends the
            verdict overlay to the graph and brings itself to the front (the graph panel's
            "FP16 check" emits it).
        show_time_range(object, object, object): (profile path or None for the profile on screen, start ns,
            end ns from the trace start) — the profiler opens the profile if needed, zooms its timeline
            to the range and aggregates it (the advisor emits it for a finding's time range).
        host_action(str, str): ("profile", "bench", "dump" or "dump_compare", the panel it came from) —
            the Run controls open that host action's dialog (the profiler's and accuracy panel's
            toolbar buttons emit it); the result comes back to the front only in that panel.
        model_converted(object): a model path the converter just wrote — offered where a model path
            is asked for (the graph panel's pipeline editor offers it for ``modelPath``).
        add_host(): the Hosts panel asks for a new SSH host (its "Add host" dialog) and saves it
            before the emit returns (the Deployment panel's Add dialog emits it when no host exists).
        edit_run_configurations(): the Run controls open the run configurations dialog (the Run
            panel's empty state emits it).
        show_wall_range(object, object, object): (profile path, start ns, end ns as the profile's files stamp
            them, i.e. the host's wall clock) — as show_time_range once the profile's origin is known (the
            Cluster panel emits it for a collective of one rank).
        rank_timelines(object): a multi-rank folder — the profiler opens every rank's timeline on
            one timeline, a lane group per rank (the Cluster panel's "All ranks' timelines" emits it).
        open_terminal(str): a host entry name — the terminal panel opens a new tab with a
            shell on that host (the Hosts panel's "Open terminal" emits it).
    """

    focus = Signal(str)
    show_node = Signal(object, str)
    overlay = Signal(object)
    compare_models = Signal(object, object)
    compare_graphs = Signal(object, object)
    node_selected = Signal(object, str)
    open_terminal = Signal(str)
    edit_run_configurations = Signal()
    add_host = Signal()
    host_action = Signal(str, str)
    convert_model = Signal(object)
    convert_original = Signal(object, object)  # the original model, the repro it was asked for from
    profile_model = Signal(object)
    check_fp16 = Signal(object)
    model_converted = Signal(object)  # a path: the converter wrote this model (offered where a model is asked for)
    show_time_range = Signal(object, object, object)  # ns values pass 2**31: not Qt ints
    rank_timelines = Signal(object)  # a multi-rank folder: the profiler shows every rank's lanes on one timeline
    show_wall_range = Signal(object, object, object)  # (profile path, start ns, end ns on the profile's own clock)
