"""``read_graph(path, cancel)``: the job that opens any model the graph tool knows.

Reads through the reader registry (:func:`studio.core.formats.detect`, magic bytes first), so a ``.om``
without the ``IMOD`` magic is refused with the sniffer's message and a renamed ONNX still opens.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core import formats
from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.gc_pause import paused_gc
from studio.tools.graph.model import Model

GRAPH_FORMATS = ("onnx", "om", "om_json", "mindx_pipeline", "msprobe_construct")


def read_model(path: Path | str, cancel: CancelToken | None = None) -> Model:
    """Read a model synchronously (tests, CLI helpers)."""
    path = Path(path)
    detected = formats.detect(path)
    with paused_gc():
        return _read(path, detected, cancel)


def _read(path: Path, detected, cancel) -> Model:
    if detected.format.id not in GRAPH_FORMATS:
        raise UserError(f"Not a model the graph viewer can open ({detected.format.label})", path,
                        "Open an ONNX model, an Ascend OM model (IMOD), the JSON that atc --mode=1 writes or a MindX "
                        "SDK pipeline or the construct.json of an msprobe dump.")
    return detected.format.open(path, cancel)  # the reader of the module whose match chose the format


def read_graph(path: Path | str, cancel: CancelToken | None = None) -> Generator[Progress, None, Model]:
    """Job: read the model at ``path`` and derive its edges."""
    path = Path(path)
    yield Progress(None, f"reading {path.name}")
    model = read_model(path, cancel)
    if cancel is not None:
        cancel.raise_if_cancelled()
    yield Progress(0.9, "indexing edges")
    for graph in model.graphs:
        graph.edges()
    yield Progress(1.0, f"read {len(model.main.nodes):,} nodes")
    return model
