"""The Converter's local (ONNX) conversion as the operation :mod:`studio.ops.convert`, here or
with Studio's engine on an SSH host; the wizard's AIPP config is written first (it is the user's
file, next to the output). The job returns the conversion's report, as the panel shows it."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress


def convert_job(context, host: str | None, options, cancel: CancelToken, aipp_path: Path | None = None,
                aipp_text: str | None = None) -> Generator[Progress, None, object]:
    """Convert ``options.model`` here or on ``host``; returns the (localised) ConvertReport."""
    from studio.ops import convert
    from studio.tools.convert.convert import write_text_then

    def run() -> Generator[Progress, None, object]:
        return (yield from convert.run(convert.Request(options), host, context, cancel)).report

    return (yield from write_text_then(aipp_path, aipp_text, run()))
