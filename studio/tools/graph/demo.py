"""The graph tool's part of the demo workspace: a MACs overlay for the U-Net (Model Explorer JSON) and
a MindX SDK app's pipeline for it (``app/pipeline/unet_simple_opencv.pipeline``)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress


# The segmentation app of the MindX SDK tutorial: decode, resize to the U-Net's 256x256, infer, serialize.
# Its model is the U-Net converted to OM, which the journey builds (model/unet.om is not there yet).
_PIPELINE = """{
    "unet_mindx": {
        "stream_config": {
            "deviceId": "0"
        },
        "appsrc0": {
            "props": {
                "blocksize": "409600"
            },
            "factory": "appsrc",
            "next": "mxpi_imagedecoder0"
        },
        "mxpi_imagedecoder0": {
            "props": {
                "cvProcessor": "opencv",
                "outputDataFormat": "RGB"
            },
            "factory": "mxpi_imagedecoder",
            "next": "mxpi_imageresize0"
        },
        "mxpi_imageresize0": {
            "props": {
                "cvProcessor": "opencv",
                "resizeHeight": "256",
                "resizeWidth": "256"
            },
            "factory": "mxpi_imageresize",
            "next": "mxpi_tensorinfer0"
        },
        "mxpi_tensorinfer0": {
            "props": {
                "dataSource": "mxpi_imageresize0",
                "modelPath": "./model/unet.om"
            },
            "factory": "mxpi_tensorinfer",
            "next": "mxpi_dataserialize0"
        },
        "mxpi_dataserialize0": {
            "props": {
                "outputDataKeys": "mxpi_tensorinfer0"
            },
            "factory": "mxpi_dataserialize",
            "next": "appsink0"
        },
        "appsink0": {
            "props": {
                "blocksize": "4096000"
            },
            "factory": "appsink"
        }
    }
}
"""


def _write_pipeline(folder: Path) -> Path:
    path = Path(folder) / "app" / "pipeline" / "unet_simple_opencv.pipeline"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_PIPELINE, encoding="utf-8")
    return path


def add_to_demo(folder: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, list[Path]]:
    """Write ``graph/unet_macs.json`` (each U-Net node's share of the MACs) and the app's pipeline
    unless they are there."""
    model = Path(folder) / "models" / "unet.onnx"
    out = Path(folder) / "graph" / "unet_macs.json"
    _write_pipeline(folder)
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
