"""``studio infer MODEL.om IMAGES --host NAME``: the OM run by msame / ais_bench on the real loopback
sshd (the stand-ins run the OM's ONNX twin, named by its atc_cmdline), pre- and post-processing
here: the same per-picture answers and metrics as ONNX Runtime here, one tool run for all pictures,
and clear errors for a missing tool, a wrong input size, a lost connection; cancel stops the host."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest

from standins import make_standin_toolkit, om_with_twin, recorded, write_host
from test_cli import run_studio


@pytest.fixture
def unet(tmp_path) -> dict:
    """The demo U-Net as .onnx and as the .om converted from it, 7 pictures and their masks."""
    from studio.tools.demo.images import make_demo_images
    from studio.tools.demo.models import build_unet

    onnx_path = tmp_path / "model" / "unet.onnx"
    onnx_path.parent.mkdir()
    onnx.save(build_unet(), onnx_path)
    om = om_with_twin(tmp_path / "model" / "unet.om", onnx_path)
    pictures, masks = tmp_path / "my pictures", tmp_path / "masks"
    pictures.mkdir()
    masks.mkdir()
    rng = np.random.default_rng(3)
    for seed in (0, 1):
        for name, image in make_demo_images(seed=seed).items():
            if len(list(pictures.iterdir())) < 7:
                cv2.imwrite(str(pictures / f"{name} {seed}.png"), image)
                mask = np.zeros(image.shape[:2], np.uint8)
                y = int(rng.integers(0, image.shape[0] // 2))
                mask[y:, :] = 1
                cv2.imwrite(str(masks / f"{name} {seed}.png"), mask)
    (pictures / "broken.png").write_bytes(b"not a picture")
    return {"onnx": onnx_path, "om": om, "pictures": pictures, "masks": masks}


@pytest.fixture
def box(sshd, studio_home, tmp_path) -> Path:
    """Host "box" whose toolkit puts the stand-in msame and ais_bench on PATH."""
    toolkit = make_standin_toolkit(tmp_path / "cann", STANDIN_PYTHON=sys.executable)
    write_host(studio_home, sshd, toolkit, deploy_root=str(tmp_path / "host root"))
    return toolkit


def _infer(unet, model: Path, out: Path, home: Path, *extra: str):
    return run_studio("infer", str(model), str(unet["pictures"]), "-o", str(out), "--task", "segment", "--truth",
                      str(unet["masks"]), "--json", *extra, home=home)


def _rows(out: Path) -> list[dict]:
    rows = json.loads((out / "results.json").read_text())["images"]
    return [{k: v for k, v in row.items() if k != "ms"} for row in rows]


@pytest.mark.parametrize("tool", ["msame", "ais_bench"])
def test_om_on_the_host_gives_the_local_runs_answers(unet, box, studio_home, tmp_path, tool):
    here = _infer(unet, unet["onnx"], tmp_path / "here", studio_home)
    assert here.returncode == 0, here.stderr
    there = _infer(unet, unet["om"], tmp_path / "there", studio_home, "--host", "box", "--tool", tool)
    assert there.returncode == 0, there.stderr
    data = json.loads(there.stdout)
    assert data["ran_on"]["host"] == "box" and data["tool"] == tool
    assert [r["image"] for r in data["images"]] == sorted(p.name for p in unet["pictures"].iterdir())
    assert {"image": "broken.png", "error": "not a readable picture"} in data["images"]
    # the same answers and metrics per picture, the same summary and overlays
    assert _rows(tmp_path / "there") == _rows(tmp_path / "here")
    assert len([r for r in data["images"] if "dice" in r]) == 7
    local = json.loads(here.stdout)["summary"]
    assert (data["summary"]["dice_mean"], data["summary"]["iou_mean"]) == (local["dice_mean"], local["iou_mean"])
    for overlay in (tmp_path / "here" / "overlays").iterdir():
        assert np.array_equal(cv2.imread(str(overlay)), cv2.imread(str(tmp_path / "there" / "overlays" / overlay.name)))
    if tool == "msame":  # msame prints each picture's time: the rows carry them
        assert all(r["ms"] > 0 for r in data["images"] if "dice" in r)
    # all pictures in one run of the tool (one upload, one command), not one per picture
    runs = [r for r in recorded(box) if r["tool"] == tool]
    assert len(runs) == 1 and "--input" in runs[0]["argv"]
    model = runs[0]["argv"][runs[0]["argv"].index("--model") + 1]
    assert not Path(model).parent.exists(), "the work folder on the host is removed"


def test_a_host_without_msame_and_a_wrong_size_are_clear_errors(unet, sshd, studio_home, tmp_path):
    bare = tmp_path / "bare toolkit"
    bare.mkdir()
    (bare / "set_env.sh").write_text("export PATH=/usr/bin:/bin\n")  # CANN without msame built
    write_host(studio_home, sshd, bare, deploy_root=str(tmp_path / "host root"))
    missing = _infer(unet, unet["om"], tmp_path / "a", studio_home, "--host", "box")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "msame was not found on box" in missing.stderr and "tools/msame" in missing.stderr
    wrong = _infer(unet, unet["om"], tmp_path / "b", studio_home, "--host", "box", "--size", "320x320")
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert "--size 320x320 does not fit the OM's input" in wrong.stderr and "--size 256x256" in wrong.stderr


def _run_op(unet, tmp_path, cancel=None, on_step=None):
    from studio.core.jobs import run_job
    from studio.ops import infer
    from studio.remote.context import HostContext

    request = infer.Request(unet["om"], unet["pictures"], tmp_path / "out", "segment", truth=unet["masks"])
    context = HostContext()  # this test's hosts.toml
    try:
        return run_job(infer.run(request, "box", context, cancel), on_progress=on_step)
    finally:
        context.close()


def test_cancel_stops_msame_on_the_host(unet, sshd, studio_home, tmp_path):
    from studio.core.errors import Cancelled
    from studio.core.jobs import CancelToken

    toolkit = make_standin_toolkit(tmp_path / "cann", STANDIN_PYTHON=sys.executable, STANDIN_APP_SLEEP="60")
    write_host(studio_home, sshd, toolkit, deploy_root=str(tmp_path / "host root"))
    cancel = CancelToken()

    def on_step(step) -> None:
        if step.message.startswith("$ msame"):
            threading.Timer(1.0, cancel.cancel).start()

    start = time.monotonic()
    with pytest.raises(Cancelled):
        _run_op(unet, tmp_path, cancel, on_step)
    assert time.monotonic() - start < 30
    time.sleep(0.5)
    assert not [line for line in Path("/proc").glob("[0-9]*/cmdline")
                if b"cann_standins/bin/msame" in _read(line)], "msame still runs on the host"


def test_a_lost_connection_is_a_clear_error(unet, sshd, studio_home, tmp_path):
    from studio.core.errors import RemoteError, UserError

    toolkit = make_standin_toolkit(tmp_path / "cann", STANDIN_PYTHON=sys.executable, STANDIN_APP_SLEEP="60")
    write_host(studio_home, sshd, toolkit, deploy_root=str(tmp_path / "host root"))

    def on_step(step) -> None:
        if step.message.startswith("$ msame"):
            threading.Timer(1.0, sshd.kill_sessions).start()

    with pytest.raises((RemoteError, UserError)) as info:
        _run_op(unet, tmp_path, on_step=on_step)
    assert "connection" in str(info.value).lower() and "lost" in str(info.value).lower(), str(info.value)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_an_aipp_model_takes_raw_pixels_here_and_on_the_host(unet, box, studio_home, tmp_path):
    """A model with AIPP takes uint8 NHWC pixels (normalised on the NPU): both runs feed them raw."""
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.random.default_rng(1).standard_normal((2, 3, 3, 3)).astype(np.float32), "w")
    scale = numpy_helper.from_array(np.array(1 / 255, np.float32), "scale")
    nodes = [helper.make_node("Cast", ["image"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["f", "scale"], ["u"]),
             helper.make_node("Transpose", ["u"], ["x"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["x", "w"], ["scores"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "aipp", [helper.make_tensor_value_info("image", TensorProto.UINT8, [1, 64, 64, 3])],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 64, 64])],
                              [weight, scale])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    model = tmp_path / "model" / "aipp.onnx"
    onnx.save(proto, model)
    om = om_with_twin(tmp_path / "model" / "aipp.om", model)
    here = _infer(unet, model, tmp_path / "here", studio_home)
    there = _infer(unet, om, tmp_path / "there", studio_home, "--host", "box")
    assert here.returncode == 0 and there.returncode == 0, here.stderr + there.stderr
    rows = _rows(tmp_path / "here")
    assert len([r for r in rows if "dice" in r]) == 7 and rows == _rows(tmp_path / "there")
    assert "preset raw" in json.loads(here.stdout)["notes"][0] and json.loads(there.stdout)["preprocess"]["layout"] == "NHWC"


def test_a_wrong_size_output_is_refused_on_the_host_before_it_is_downloaded(unet, sshd, studio_home, tmp_path):
    toolkit = make_standin_toolkit(tmp_path / "cann", STANDIN_PYTHON=sys.executable)
    wrappers = tmp_path / "wrappers"
    wrappers.mkdir()
    # msame answers, then its first picture's output 0 is 64 MiB (a sparse file: nothing to write here)
    (wrappers / "msame").write_text(f"""#!/bin/sh
PATH=$(echo "$PATH" | cut -d: -f2-) msame "$@"; rc=$?
out=; prev=; for a in "$@"; do [ "$prev" = "--output" ] && out=$a; prev=$a; done
f=$(find "$out" -name '*_output_0.bin' | sort | head -1); truncate -s 64M "$f"
exit $rc
""")
    (wrappers / "msame").chmod(0o755)
    with open(toolkit / "set_env.sh", "a") as handle:
        handle.write(f'export PATH="{wrappers}:$PATH"\n')
    write_host(studio_home, sshd, toolkit, deploy_root=str(tmp_path / "host root"))
    wrong = _infer(unet, unet["om"], tmp_path / "out", studio_home, "--host", "box")
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr, wrong.stderr[-2000:]
    expected = 1 * 2 * 256 * 256 * 4  # the U-Net's mask output: float32 [1, 2, 256, 256]
    assert f"has {64 * 2**20:,} bytes" in wrong.stderr and f"({expected:,} bytes)" in wrong.stderr, wrong.stderr[-1500:]
    assert "nothing was downloaded" in wrong.stderr and "box:" in wrong.stderr
