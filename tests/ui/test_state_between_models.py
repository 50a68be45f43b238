"""Nothing of one model leaks into the next, nor of one copy of a workspace into another: a
profile's time-share overlay of the U-Net does not grey a MindX pipeline opened next, and a copied
workspace's advisor inputs and run configuration point into the copy and at the Studio that opens
it, not at the original copy's files or a clone's ``.venv/bin/python``."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import onnx
import pytest

from studio.core.formats import detect
from studio.core.jobs import run_job
from studio.ui.links import Overlay
from studio.ui.panels.advisor import AdvisorPanel
from studio.ui.panels.graph import GraphPanel

PIPELINE = {"segment": {
    "stream_config": {"deviceId": "0"},
    "appsrc0": {"props": {"blocksize": "409600"}, "factory": "appsrc", "next": "mxpi_imagedecoder0"},
    "mxpi_imagedecoder0": {"factory": "mxpi_imagedecoder", "next": "mxpi_imageresize0"},
    "mxpi_imageresize0": {"props": {"resizeHeight": "256", "resizeWidth": "256"}, "factory": "mxpi_imageresize",
                          "next": "mxpi_tensorinfer0"},
    "mxpi_tensorinfer0": {"props": {"modelPath": "../model/unet.om"}, "factory": "mxpi_tensorinfer",
                          "next": "appsink0"},
    "appsink0": {"props": {"blocksize": "4096000"}, "factory": "appsink"},
}}


def _open(qtbot, graph, path: Path) -> None:
    graph.open_file(detect(path))
    qtbot.waitUntil(lambda: graph.left.model is not None and graph.left.model.path == path, timeout=20000)


def test_a_models_overlay_does_not_grey_the_pipeline_opened_next(qtbot, make_panels, tmp_path):
    from studio.tools.demo.models import build_unet

    graph, links = make_panels(GraphPanel)
    unet = tmp_path / "unet.onnx"
    onnx.save(build_unet(), unet)
    _open(qtbot, graph, unet)
    names = [n.name for n in onnx.load(unet).graph.node]
    conv = [n for n in names if "conv" in n.lower()]
    links.overlay.emit(Overlay("time share", {n: 0.5 / len(conv) for n in conv}, [0.05, 0.10], model=unet))
    qtbot.waitUntil(lambda: bool(graph.left.canvas.state.overlay), timeout=5000)
    assert graph.left.canvas.legend  # the U-Net shows its time share

    pipeline = tmp_path / "segment.pipeline"
    pipeline.write_text(json.dumps(PIPELINE))
    _open(qtbot, graph, pipeline)
    elements = {n.name for n in graph.left.model.main.nodes}
    assert elements and not elements & set(conv)  # independently: no element has a time share
    assert graph.left.canvas.state.overlay == {} and graph.left.canvas.legend == []
    assert graph.overlay is None


@pytest.fixture
def copied(tmp_path):
    """A workspace with an advisor report and the demo's run configuration, copied elsewhere and
    the original removed (a colleague's copy, or the folder moved)."""
    from studio.core.workspace import Workspace
    from studio.tools.advisor import write_report
    from studio.tools.advisor.engine import advise
    from studio.tools.bench.demo import add_to_demo
    from studio.tools.demo.journeys import JOURNEY_MODELS

    original = tmp_path / "original"
    Workspace.create(original)
    model = original / "models" / "mish_cnn.onnx"
    model.parent.mkdir()
    onnx.save(JOURNEY_MODELS["mish_cnn"].build(), model)
    write_report(run_job(advise(model=model, measure_budget_s=0.5)), original / "advisor" / "report.json")
    run_job(add_to_demo(original))
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    shutil.rmtree(original)
    return copy


def test_a_copied_workspace_points_into_the_copy(qtbot, make_panel, copied, tmp_path):
    advisor = make_panel(AdvisorPanel)
    advisor.open_file(detect(copied / "advisor" / "report.json"))
    qtbot.waitUntil(lambda: advisor.report is not None, timeout=10000)
    assert advisor.inputs()["model"] == copied / "models" / "mish_cnn.onnx"
    assert advisor.inputs()["model"].is_file()
    stored = json.loads((copied / "advisor" / "report.json").read_text())["inputs"]["model"]
    assert stored == "../models/mish_cnn.onnx"


def test_the_copied_run_configuration_runs_the_studio_that_opens_it(copied):
    from studio.core.workspace import Workspace
    from studio.runs.config import load_configs
    from studio.runs.runner import run_configuration
    from studio.targets.local import LocalTarget

    config = load_configs(Workspace.open(copied))[0]
    text = (copied / "studio.toml").read_text()
    assert str(tmp_path_of(copied) / "original") not in text and sys.executable not in text
    assert config.command.split()[0] == Path(sys.executable).name
    # run it as it is stored, but ask only for the version (the bench itself takes minutes here)
    config.command = config.command.split(" bench ")[0] + " --version"
    outcome = run_job(run_configuration(config, LocalTarget(), workdir=str(copied)))
    from studio import __version__

    assert outcome.exit_code == 0 and f"studio {__version__}" in "\n".join(outcome.output)


def tmp_path_of(copied: Path) -> Path:
    return copied.parent
