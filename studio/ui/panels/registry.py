"""The tool panels the main window docks, in menu order.

A tool adds its panel by giving its own class here (``studio.ui.panels.<tool>``); until then the
tool is represented by a FileListPanel with its title and description.
"""

from __future__ import annotations

from studio import formats
from studio.ui.panels.base import FileListPanel, Panel


def _file_list_panel(name: str, title: str, description: str) -> type[Panel]:
    return type(f"{title.replace(' ', '')}Panel", (FileListPanel,),
                {"NAME": name, "TITLE": title, "DESCRIPTION": description})


def tool_panels() -> list[type[Panel]]:
    """Panel classes, one per tool, in the order of the Tools menu."""
    from studio.ui.panels.deploy import DeployPanel

    return [
        _file_list_panel(formats.GRAPH, "Graph",
                         "ONNX and OM models (IMOD), and graphs that atc --mode=1 wrote as JSON."),
        _file_list_panel(formats.PROFILER, "Profiler",
                         "Chrome and msprof timelines, PROF_* and ASCEND_PROFILER_OUTPUT folders, "
                         "msprof and PyTorch-NPU summary CSVs, ONNX Runtime profiles."),
        _file_list_panel(formats.ACCURACY, "Accuracy",
                         "Tensor dumps (.npy folders, NPU dump files), acl.json dump configurations "
                         "and comparison results."),
        _file_list_panel(formats.CONVERT, "Converter",
                         "Models to convert (ONNX, TensorFlow .pb, Caffe), AIPP configurations and "
                         "ATC fusion switch files."),
        DeployPanel,
    ]
