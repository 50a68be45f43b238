"""The graph tool's part of the demo workspace: a MACs overlay for the U-Net (Model Explorer JSON)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.jobs import CancelToken, Progress


def add_to_demo(folder: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, list[Path]]:
    """Write ``graph/unet_macs.json`` (each U-Net node's share of the MACs) unless it is there."""
    model = Path(folder) / "models" / "unet.onnx"
    out = Path(folder) / "graph" / "unet_macs.json"
    if out.is_file():
        return [out]
    if not model.is_file():
        return []
    yield Progress(None, "graph: MACs per node of the U-Net")
    from studio.tools.graph.macs import write_node_data
    from studio.tools.graph.reader import read_model

    graph = read_model(model, cancel).main
    out.parent.mkdir(parents=True, exist_ok=True)
    write_node_data(graph, out)
    return [out]
