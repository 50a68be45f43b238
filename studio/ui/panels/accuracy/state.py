"""What the Accuracy panel shows, without Qt: the comparison on screen, the dump waiting for a
partner, the dumps the comparison came from, and the texts, overlay and input questions derived
from them.

The panel (``panel.py``) lays out widgets and wires them to this state; everything here can be
tested without a display.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio.tools.accuracy.advisor import CONSISTENT, GOLDEN_NONFINITE, OVERFLOW, PROBLEM, UNDERFLOW
from studio.tools.accuracy.dumpset import MODE_LABELS

if TYPE_CHECKING:  # the engine (numpy) is imported by the jobs, not when the window opens
    from studio.tools.accuracy.compare import CompareResult

_FINDING_COLOURS = {OVERFLOW: "#d73a49", UNDERFLOW: "#d73a49", GOLDEN_NONFINITE: "#d73a49", PROBLEM: "#d73a49",
                    CONSISTENT: "#2ea043", "nonfinite_output": "#d73a49", "attention_mask": "#8b949e"}


@dataclass
class AccuracyState:
    """The comparison on screen and the dumps around it."""

    result: CompareResult | None = None
    pending: list[Path] = field(default_factory=list)  # dump folders waiting for a partner
    last_pair: tuple[Path, Path] | None = None  # the dumps of the comparison shown

    def queue_dump(self, path: Path) -> tuple[Path, Path] | None:
        """Queue a dump as golden; with a second one, returns (golden, target) to compare (the
        queue empties). A dump queued again moves to the end."""
        self.pending = [p for p in self.pending if p != path] + [path]
        if len(self.pending) < 2:
            self.result = None  # the golden waits alone: the old comparison goes
            return None
        golden, target = self.pending[-2:]
        self.pending = []
        return golden, target

    def show(self, result: CompareResult, pair: tuple[Path, Path] | None = None) -> None:
        """Make ``result`` the comparison on screen; without ``pair`` (e.g. read from a CSV) its rows'
        dump folders are the pair when both still exist."""
        self.result = result
        if pair is None:
            golden, target = Path(result.golden), Path(result.target)
            pair = (golden, target) if golden.is_dir() and target.is_dir() else None
        self.last_pair = pair

    def clear(self) -> None:
        self.result, self.pending, self.last_pair = None, [], None

    def can_remap(self) -> bool:
        """A shown comparison of two dump folders can run again through a mapping."""
        return self.result is not None and self.last_pair is not None

    def can_reduce_fp16(self) -> bool:
        """A failing comparison of two dump folders: the FP16 tools can narrow it down."""
        return self.can_remap() and not self.result

    def waiting_text(self) -> str | None:
        """The header while no comparison is shown (rich text), or None when one is."""
        if self.result is not None:
            return None
        if not self.pending:
            return "<b>Accuracy</b> — compare two runs op by op"
        return (f"Golden: <b>{html.escape(self.pending[0].name)}</b> — open a second dump folder as the target "
                "to compare")

    def golden_read_text(self, path: Path, description: str) -> str | None:
        """The header once the waiting golden dump is read (its mode), or None when it no longer waits."""
        if self.pending != [path] or self.result is not None:
            return None
        return (f"Golden: <b>{html.escape(path.name)}</b> — {html.escape(description)}<br>Open a second dump "
                "folder as the target to compare")


def sources_text(result: CompareResult) -> str:
    """The header over a comparison: both sides with their modes, then the summary (rich text)."""
    g_mode = MODE_LABELS.get(result.golden_mode, result.golden_mode)
    t_mode = MODE_LABELS.get(result.target_mode, result.target_mode)
    return (f"Golden: <b>{html.escape(Path(result.golden).name)}</b> <i>({html.escape(g_mode)})</i>"
            f" &nbsp;vs&nbsp; Target: <b>{html.escape(Path(result.target).name)}</b> "
            f"<i>({html.escape(t_mode)})</i><br>{html.escape(result.summary())}")


def finding_colour(kind: str) -> str:
    """The dot colour of a finding: red for what is broken, green for consistent, amber otherwise."""
    return _FINDING_COLOURS.get(kind, "#d29922")


def findings_text(result: CompareResult) -> str:
    """The verdict on the outputs (the diagnosis every FP16 tool gives), then every finding with its
    advice, one coloured dot each (rich text)."""
    return diagnosis_text(getattr(result, "diagnosis", None)) + "".join(
        f"<div><span style='color:{finding_colour(f.type)}'>●</span> {html.escape(f.message)}"
        f"<br><span style='color:gray'>{html.escape(f.advice)}</span></div>" for f in result.findings)


def diagnosis_text(diagnosis) -> str:
    """The diagnosis as one block: verdict and cause in colour, what, the fix, notes, the thresholds."""
    if diagnosis is None:
        return ""
    from studio.core.diagnosis_text import ALWAYS, describe_thresholds

    colour = "#2ea043" if diagnosis else "#d73a49"
    cause = "" if diagnosis.cause == "none" else f" — {diagnosis.cause.replace('_', ' ')}"
    where = f" at <b>{html.escape(diagnosis.op)}</b> ({html.escape(diagnosis.op_type)})" if diagnosis.op else ""
    parts = [f"<span style='color:{colour}'><b>Verdict on the outputs: {diagnosis.verdict.upper()}{cause}</b></span>"
             f"{where}: {html.escape(diagnosis.message)}"]
    if diagnosis.fix:
        parts.append(f"<b>Fix:</b> {html.escape(diagnosis.fix)}")
    # The limits stay on screen (every verdict prints what it judged by); notes and the fixed rules
    # share one grey line, so the table keeps its rows on a 720 px screen.
    grey = [f"Thresholds: {describe_thresholds(diagnosis.thresholds, short=True)} ({ALWAYS})"]
    grey += [f"Note: {note}" for note in diagnosis.notes]
    parts.append(f"<span style='color:gray'>{html.escape('. '.join(grey))}</span>")
    return "<div style='margin-bottom:4px'>" + "<br>".join(parts) + "</div>"


def first_finding_row(result: CompareResult) -> int | None:
    """The row the verdict points at (the op it names), else the first finding's: selected when the
    result shows, or None."""
    diagnosis = getattr(result, "diagnosis", None)
    if diagnosis is not None and diagnosis.op:
        row = next((r.index for r in result.rows if r.name == diagnosis.op), None)
        if row is not None:
            return row
    return next((f.row for f in result.findings if f.row is not None), None)


@dataclass
class Verdicts:
    """Each compared op's verdict, named as one side's model names it (the graph overlay)."""

    side: str  # "target" (the converted model's names) or "golden"
    model: Path | None
    values: dict[str, float]  # cosine similarity per op
    verdicts: dict[str, str]  # "pass" / "fail" per op
    labels: dict[str, str]  # the text beside each op's box


def verdicts(result: CompareResult, label) -> Verdicts:
    """The overlay of ``result``: names of the side whose model is known (the target's first: the
    converted model; else the golden one, e.g. an NPU dump against an ONNX run). ``label(row)`` is
    the text beside a box."""
    side = "target" if result.model else "golden"
    model = Path(result.model) if result.model else (Path(result.golden_model) if result.golden_model else None)
    out = Verdicts(side, model, {}, {}, {})
    for row in result.compared:
        entry = row.target if side == "target" else row.golden
        out.values[entry.op_name] = float(row.metrics.cosine)
        out.verdicts[entry.op_name] = "fail" if row.violations else "pass"
        out.labels[entry.op_name] = label(row)
    return out


def graph_target(result: CompareResult, row: Any, side: str, model: Path | None) -> tuple[Path | None, str] | None:
    """(model, op name) "Show in graph" selects for ``row`` (the first failing row when None); a
    one-side-only op of the other side is not in ``model``: then the model is None and the graph
    looks the name up in the model on screen."""
    row = row or next((x for x in result.rows if x.passed is False), None)
    if row is None:
        return None
    own = row.target if side == "target" else row.golden
    entry = own or row.target or row.golden
    return (model if entry is own else None), entry.op_name


def plan_inputs(asked: list, known: dict) -> tuple[dict, list]:
    """Which inputs of a model to ask for. ``asked``: (name, dims, dtype) of its inputs to consider;
    ``known``: sizes another model fixes. Returns (the sizes taken from ``known``, the inputs still
    to ask for): ask when a dynamic size is missing, or when an integer/boolean input would get
    random values; a dim is never guessed."""
    dynamic = [entry for entry in asked if any(not isinstance(d, int) for d in entry[1])]
    shapes = {name: known[name] for name, dims, _ in dynamic if name in known and len(known[name]) == len(dims)}
    open_dims = [entry for entry in dynamic if entry[0] not in shapes]
    valued = [entry for entry in asked if not entry[2].startswith("float")]
    left = [entry for entry in asked if entry[0] not in shapes] if (open_dims or valued) else []
    return shapes, left


def as_job(func, *args):
    """Run a plain function as a one-step job."""
    yield from ()
    return func(*args)
