"""The gallery's Run… dialog offers the hosts: an .om run there with the stand-in msame (the real
loopback sshd) as a job, its results shown like a local run's."""

from __future__ import annotations

import sys

import cv2
import onnx
import pytest

from standins import make_standin_toolkit, om_with_twin, recorded, write_host
from studio.ui.panels.gallery import GalleryPanel
from studio.ui.panels.gallery.run_dialog import InferDialog
from studio.ui.widgets.run_on import HERE


@pytest.fixture
def panel(make_panel):
    return make_panel(GalleryPanel)


def test_run_an_om_on_a_host_from_the_dialog(qtbot, panel, sshd, studio_home, tmp_path):
    from studio.tools.demo.images import make_demo_images
    from studio.tools.demo.models import build_unet

    toolkit = make_standin_toolkit(tmp_path / "cann", STANDIN_PYTHON=sys.executable)
    write_host(studio_home, sshd, toolkit, deploy_root=str(tmp_path / "host root"))
    onnx.save(build_unet(), tmp_path / "unet.onnx")
    om = om_with_twin(tmp_path / "unet.om", tmp_path / "unet.onnx")
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    for name, image in list(make_demo_images().items())[:3]:
        cv2.imwrite(str(pictures / f"{name}.png"), image)
    dialog = InferDialog(tmp_path, panel, sorted(panel.host_context.store.hosts))
    qtbot.addWidget(dialog)
    assert [dialog.where.itemText(i) for i in range(dialog.where.count())] == [HERE, "box"]
    dialog.model.edit.setText(str(om))
    dialog.images.edit.setText(str(pictures))
    dialog.task.setCurrentText("segment")
    dialog.where.setCurrentIndex(1)
    assert dialog.tool.isEnabled() and dialog.host() == "box"
    handle = panel.run_infer(dialog.request(), dialog.host())
    qtbot.waitUntil(lambda: panel.state.run is not None, timeout=60000)
    assert handle.key == "host:box" and len(panel.model.rows) == 3
    assert (tmp_path / "infer" / "unet_pictures" / "results.csv").is_file()
    assert [r["tool"] for r in recorded(toolkit)] == ["msame"]
