"""Progress output for headless commands: one updating line on a terminal, nothing otherwise."""

from __future__ import annotations

import os
import sys

from studio.core.jobs import Progress


def print_progress(step: Progress) -> None:
    """Show ``step`` on stderr when it is a terminal (pipes and CI logs stay clean)."""
    if os.environ.get("STUDIO_PROGRESS") == "lines":  # Studio's engine on a host: parsed by the caller
        fraction = "-" if step.fraction is None else f"{step.fraction:.4f}"
        sys.stderr.write(f"studio-progress {fraction} {step.message}\n")
        sys.stderr.flush()
        return
    if not sys.stderr.isatty():
        return
    percent = "" if step.fraction is None else f"{step.fraction * 100:5.1f}% "
    sys.stderr.write(f"\r\x1b[2K{percent}{step.message}")
    sys.stderr.flush()
    if step.fraction is not None and step.fraction >= 1.0:
        sys.stderr.write("\n")
