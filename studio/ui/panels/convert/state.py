"""What the Converter panel keeps and shows, without Qt: the conversion's streamed log lines, its
result and the model it came from, where the AIPP config goes, and the readers its jobs run.

The panel (``panel.py``) lays out the three pages and wires them to this state.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.core.jobs import Progress

# finish()'s default: ask where a local conversion runs when SSH hosts exist.
ASK = "ask"

STEPS = ("1  Model && inputs", "2  Pre-processing (AIPP)", "3  Advanced && command", "4  Quantize (INT8)")
QUANTIZE_STEP = 3  # its own Quantize button runs it; the wizard's Convert is hidden there
# AIPP files may name their model and a picture in comments ("# model: ../models/unet.onnx").
_HINT = re.compile(r"^#\s*(model|preview):\s*(.+?)\s*$", re.MULTILINE)


def call_job(function, *args):
    """Run a quick reader as a job (files are read on the worker thread, never the GUI's)."""
    yield Progress(None, "reading")
    return function(*args)


def read_aipp(path: Path):
    """An AIPP config and the files its comments name that exist ({"model"/"preview": path})."""
    from studio.tools.convert.aipp import load_aipp

    config = load_aipp(path)
    hints = {key: (path.parent / value).resolve()
             for key, value in _HINT.findall(path.read_text(encoding="utf-8", errors="replace"))}
    return config, {key: value for key, value in hints.items() if value.is_file()}


def aipp_config_path(output: str) -> Path:
    """Where a config written from the AIPP page goes: next to the output, named after it."""
    output = output.strip() or "converted"
    base = Path(output[:-5] if output.endswith(".onnx") else output)
    return base.with_name(base.name + "_aipp.cfg")


@dataclass
class Finished:
    """What the panel says and does when a conversion job returns."""

    log: str
    status: str
    path: Path | None = None  # the converted model, opened in the graph panel
    comparable: bool = False  # "Compare with original" works on it


def finished(result: Any) -> Finished:
    """Read a job's result: a ConvertReport (local passes), an AtcResult (ATC here or on a host), or
    nothing (ATC that wrote no .om back)."""
    from studio.tools.convert.convert import ConvertReport

    if isinstance(result, ConvertReport):
        path = Path(result.output)
        return Finished(result.summary(), f"Converter: wrote {path.name}", path, comparable=True)
    if getattr(result, "local_om", None) is not None:
        path = Path(result.local_om)
        return Finished(f"ATC finished on {result.host}: wrote {path} (output kept in {result.host}:{result.log})",
                        f"Converter: wrote {path.name} (ATC on {result.host})", path)
    return Finished("ATC finished", "Converter: ATC finished")


@dataclass
class ConvertState:
    """The conversion running or last run."""

    result_path: Path | None = None  # the converted model
    last_report: Any = None  # the ConvertReport of the latest local conversion
    original: Path | None = None  # the model the latest conversion started from
    lines: deque[str] = field(default_factory=deque)  # job lines, filled on the worker thread (thread-safe)

    def take_lines(self) -> str | None:
        """Every line queued since the last call, as one text (None when there is none)."""
        taken = []
        while self.lines:
            taken.append(self.lines.popleft())
        return "\n".join(taken) if taken else None

    def record(self, result: Any) -> Finished:
        """Note what a finished job made; returns what to say about it."""
        done = finished(result)
        if done.comparable:
            self.last_report = result
        if done.path is not None:
            self.result_path = done.path
        return done
