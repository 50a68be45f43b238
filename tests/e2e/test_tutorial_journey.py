"""The first tutorial's journey, end to end, as a user runs it from the CLI against the real
loopback sshd: the demo U-Net converted with its AIPP file, the MindX pipeline pointed at it
(and checked on the host), the app folder deployed, the app run there, its result masks fetched
back and its printed Dice/IoU read into a table — equal to a numpy computation made here."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import cv2
import numpy as np
import onnxruntime as ort

from standins import write_host
from test_cli import run_studio

from studio.runs.config import RunConfig, save_config
from studio.core.workspace import Workspace

MAIN = Path(__file__).resolve().parents[1] / "cann_standins" / "app" / "mindx_unet_main.py"
PIPELINE = "app/pipeline/unet_simple_opencv.pipeline"


def _ok(result):
    assert result.returncode == 0, result.stderr + result.stdout
    return result


def _pictures(ws: Path) -> dict[str, np.ndarray]:
    """Three 640x640 camera frames (the AIPP's source size) and their 256x256 truth masks."""
    frame = cv2.imread(str(ws / "images" / "aipp_640.png"))
    (ws / "app/data/images").mkdir(parents=True)
    (ws / "app/data/masks").mkdir(parents=True)
    frames = {"0001.png": frame, "0002.png": frame[:, ::-1].copy(), "0003.png": frame[::-1].copy()}
    rng = np.random.default_rng(7)
    for name, picture in frames.items():
        cv2.imwrite(str(ws / "app/data/images" / name), picture)
        truth = np.zeros((256, 256), np.uint8)
        y, x = rng.integers(32, 160, size=2)
        truth[y:y + 96, x:x + 96] = 255
        cv2.imwrite(str(ws / "app/data/masks" / name), truth)
    return frames


def _expected(model: Path, ws: Path, frames: dict) -> dict[str, tuple[float, float, np.ndarray]]:
    """Dice, IoU and the mask of each picture, computed here on the same model."""
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    out = {}
    for name, bgr in frames.items():
        scores = session.run(None, {"image": bgr[..., ::-1][None].astype(np.uint8)})[0]
        mask = scores[0].argmax(0).astype(bool)
        truth = cv2.imread(str(ws / "app/data/masks" / name), cv2.IMREAD_GRAYSCALE) > 0
        both, either = np.logical_and(mask, truth).sum(), np.logical_or(mask, truth).sum()
        out[name] = (2 * both / (mask.sum() + truth.sum()), both / either, mask)
    return out


def test_unet_tutorial_convert_point_deploy_run_fetch_and_score(sshd, studio_home, tmp_path):
    ws = tmp_path / "demo"
    _ok(run_studio("demo", "create", str(ws), home=studio_home))
    frames = _pictures(ws)
    shutil.copy(MAIN, ws / "app" / "main.py")
    # 1. convert with the AIPP file: the model now takes 640x640 RGB uint8 frames
    model = ws / "app" / "model" / "unet.onnx"
    model.parent.mkdir()
    _ok(run_studio("convert", str(ws / "models/unet.onnx"), "--insert-op-conf", str(ws / "convert/unet_aipp.cfg"),
                   "-o", str(model), "--json", home=studio_home))
    # 2. point the pipeline at it; the check finds the resize element still at 256x256
    pipeline = ws / PIPELINE
    _ok(run_studio("pipeline", "set", str(pipeline), "mxpi_tensorinfer0.modelPath=./model/unet.onnx", home=studio_home))
    check = run_studio("pipeline", "check", str(pipeline), "--project", str(ws / "app"), "--json", home=studio_home)
    sizes = [f for f in json.loads(check.stdout)["findings"] if "resizes to 256x256" in f["message"]]
    assert check.returncode == 1 and sizes and sizes[0]["element"] == "mxpi_tensorinfer0"
    _ok(run_studio("pipeline", "set", str(pipeline), "mxpi_imageresize0.resizeHeight=640",
                   "mxpi_imageresize0.resizeWidth=640", home=studio_home))
    # 3. deploy the app folder to the host, and check the pipeline's files there
    write_host(studio_home, sshd)
    remote = tmp_path / "host home" / "unet_app"
    _ok(run_studio("deploy", "add", "unet", "--host", "box", "--local", str(ws / "app"), "--remote", str(remote),
                   home=studio_home))
    _ok(run_studio("deploy", "upload", "unet", "--yes", home=studio_home))
    there = _ok(run_studio("pipeline", "check", str(pipeline), "--project", str(ws / "app"), "--host", "box",
                           "--json", home=studio_home))
    data = json.loads(there.stdout)
    assert data["host"]["project"] == str(remote) and data["errors"] == 0
    # 4. run the app there (run.sh's job), its masks fetched back, its Dice/IoU read
    workspace = Workspace.open(ws)
    save_config(workspace, RunConfig("unet", f"{shlex.quote(sys.executable)} main.py {PIPELINE.split('/', 1)[1]}",
                                     target="box", workdir=str(remote), fetch=["result/*.png"]))
    run = json.loads(_ok(run_studio("run", "unet", "--workspace", str(ws), "--json", home=studio_home)).stdout)
    rows = run["metrics"]["rows"]
    expected = _expected(model, ws, frames)
    assert [r["label"] for r in rows[:3]] == [f"image {name}" for name in expected]
    for row, (name, (dice, iou, mask)) in zip(rows, expected.items()):
        assert row["values"]["dice"] == round(dice, 4) and row["values"]["iou"] == round(iou, 4)
        fetched = cv2.imread(str(Path(run["results"]) / "result" / name), cv2.IMREAD_GRAYSCALE)
        assert np.array_equal(fetched > 0, mask)
    assert rows[3]["values"] == {"Cross Valid dice coeff": round(sum(d for d, _, _ in expected.values()) / 3, 4)}
    assert run["metrics"]["means"]["dice"] == sum(round(d, 4) for d, _, _ in expected.values()) / 3
