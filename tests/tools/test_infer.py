"""``studio infer``: metrics against hand computations, and a run on the demo U-Net checked with numpy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.infer import metrics, postprocess
from studio.tools.infer.preprocess import apply, make_preprocess
from studio.tools.infer.runner import InferOptions, run_infer


def test_dice_and_iou_by_hand():
    a = np.zeros((4, 4), np.uint8)
    b = np.zeros((4, 4), np.uint8)
    a[:2, :2] = 1          # 4 pixels
    b[:2, :3] = 2          # 6 pixels, 4 shared
    assert metrics.dice_iou(a, b) == (2 * 4 / 10, 4 / 6)
    assert metrics.dice_iou(np.zeros((2, 2)), np.zeros((2, 2))) == (1.0, 1.0)


def test_average_precision_all_points():
    # 3 detections of one class, ground truth 2 boxes: TP, FP, TP -> recall .5 .5 1, precision 1 .5 .667
    ap = metrics.average_precision(np.array([0.5, 0.5, 1.0]), np.array([1.0, 0.5, 2 / 3]))
    assert ap == pytest.approx(0.5 * 1.0 + 0.5 * 2 / 3)
    truth = {"a": (np.array([[0, 0, 10, 10], [20, 20, 30, 30]], float), ["cat", "cat"])}
    found = {"a": (np.array([[0, 0, 10, 10], [50, 50, 60, 60], [21, 21, 30, 30]], float),
                   np.array([0.9, 0.8, 0.7]), ["cat", "cat", "cat"])}
    value, per_class = metrics.mean_ap(found, truth)
    assert value == pytest.approx(0.5 + 0.5 * 2 / 3) and set(per_class) == {"cat"}


def test_nms_keeps_the_best_of_overlapping_boxes_per_class():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [0, 0, 10, 10], [30, 30, 40, 40]], float)
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    classes = np.array([0, 0, 1, 0])
    assert postprocess.nms(boxes, scores, classes, 0.5).tolist() == [0, 2, 3]


def test_yolo5_and_yolo8_layouts_decode_alike():
    rows = np.array([[50, 50, 20, 20, 0.9, 0.1, 0.8], [52, 50, 20, 20, 0.8, 0.1, 0.9], [10, 10, 4, 4, 0.1, 0.9, 0.1]]
                    + [[70, 70, 5, 5, 0.01, 0.5, 0.5]] * 8)  # heads have many more rows than channels
    five = postprocess.detect([rows[None]], "yolo5", (100, 100))
    assert len(five) == 1 and five.classes.tolist() == [1] and five.boxes[0].tolist() == [40, 40, 60, 60]
    eight_rows = np.concatenate([rows[:, :4], rows[:, 5:] * rows[:, 4:5]], axis=1)
    eight = postprocess.detect([eight_rows.T[None]], "yolo8", (100, 100))
    np.testing.assert_allclose(eight.boxes, five.boxes)
    np.testing.assert_allclose(eight.scores, five.scores)


def test_letterbox_boxes_map_back_to_the_picture():
    pre = make_preprocess((1, 3, 100, 100), "detect")
    picture = np.zeros((50, 100, 3), np.uint8)
    tensor, placement = apply(pre, picture)
    assert tensor.shape == (1, 3, 100, 100) and placement.offset_y == 25
    assert placement.to_image(np.array([[0, 25, 100, 75]], float)).tolist() == [[0, 0, 100, 50]]
    assert "--preset unit" in pre.describe() and "--resize letterbox" in pre.describe()


def _unet(tmp_path: Path) -> Path:
    from studio.tools.demo.models import build_unet

    path = tmp_path / "unet.onnx"
    onnx.save(build_unet(), path)
    return path


def _pictures(tmp_path: Path) -> Path:
    from studio.tools.demo.images import make_demo_images

    folder = tmp_path / "pictures"
    folder.mkdir()
    for name, image in make_demo_images().items():
        cv2.imwrite(str(folder / f"{name}.png"), image)
    return folder


def test_demo_unet_dice_and_iou_equal_a_numpy_computation(tmp_path):
    import onnxruntime as ort

    model, pictures = _unet(tmp_path), _pictures(tmp_path)
    masks = tmp_path / "masks"
    masks.mkdir()
    truth = {}
    for k, path in enumerate(sorted(pictures.iterdir())):
        image = cv2.imread(str(path))
        mask = np.zeros(image.shape[:2], np.uint8)
        mask[image.shape[0] // 4 + k: image.shape[0] * 3 // 4, image.shape[1] // 5:] = 1  # a different box each
        cv2.imwrite(str(masks / path.name), mask)
        truth[path.name] = mask
    result = run_job(run_infer(InferOptions(model, pictures, tmp_path / "out", "segment", truth=masks,
                                            preset="symmetric")))
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    dices, ious = [], []
    for row in result.rows:
        image = cv2.imread(str(pictures / row["image"]))
        x = cv2.resize(image, (256, 256), interpolation=cv2.INTER_LINEAR)[:, :, ::-1].astype(np.float32) / 127.5 - 1
        probs = session.run(None, {"image": x.transpose(2, 0, 1)[None]})[0][0]
        mask = cv2.resize(probs.argmax(axis=0).astype(np.uint8), image.shape[1::-1], interpolation=cv2.INTER_NEAREST)
        a, b = mask > 0, truth[row["image"]] > 0
        dice = 2 * (a & b).sum() / (a.sum() + b.sum())
        iou = (a & b).sum() / (a | b).sum()
        assert row["dice"] == pytest.approx(dice, abs=1e-6) and row["iou"] == pytest.approx(iou, abs=1e-6)
        dices.append(dice), ious.append(iou)
    assert result.summary["dice_mean"] == pytest.approx(np.mean(dices), abs=1e-6)
    assert result.summary["iou_mean"] == pytest.approx(np.mean(ious), abs=1e-6)
    assert len(list((tmp_path / "out" / "overlays").glob("*.png"))) == len(result.rows)
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["summary"]["dice_mean"] == result.summary["dice_mean"] and len(saved["images"]) == len(result.rows)


def test_classifier_accuracy_against_labels(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    # the class is the channel with the largest mean: red, green or blue (RGB order after preprocessing)
    graph = helper.make_graph([helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=0),
                               helper.make_node("Softmax", ["m"], ["y"], axis=1)], "g", [x], [y])
    model = tmp_path / "colour.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), model)
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    for name, bgr in {"red": (0, 0, 255), "green": (0, 255, 0), "blue": (255, 0, 0), "redish": (0, 0, 200)}.items():
        cv2.imwrite(str(pictures / f"{name}.png"), np.full((16, 16, 3), bgr, np.uint8))
    (tmp_path / "names.txt").write_text("red\ngreen\nblue\n")
    (tmp_path / "labels.csv").write_text("image,label\nred.png,red\ngreen.png,1\nblue.png,green\nredish.png,red\n")
    result = run_job(run_infer(InferOptions(model, pictures, tmp_path / "out", "classify",
                                            labels=tmp_path / "names.txt", truth=tmp_path / "labels.csv",
                                            preset="unit", resize="stretch")))
    by_name = {r["image"]: r for r in result.rows}
    assert by_name["blue.png"]["top1_name"] == "blue" and by_name["blue.png"]["correct_top1"] == 0
    assert result.summary["top1_accuracy"] == 0.75 and result.summary["top5_accuracy"] == 1.0


def test_bad_input_is_a_clear_error(tmp_path):
    model = _unet(tmp_path)
    with pytest.raises(UserError, match="no pictures"):
        (tmp_path / "empty").mkdir()
        run_job(run_infer(InferOptions(model, tmp_path / "empty", tmp_path / "o", "segment")))
    pictures = tmp_path / "p"
    pictures.mkdir()
    (pictures / "broken.png").write_bytes(b"not a png")
    result = run_job(run_infer(InferOptions(model, pictures, tmp_path / "o", "segment")))
    assert result.rows[0]["error"] == "not a readable picture" and result.summary["failed"] == 1
    done = subprocess.run([sys.executable, "-m", "studio", "infer", str(model), str(pictures), "-o",
                           str(tmp_path / "o2"), "--task", "segment", "--mean", "1,2,3"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "--mean and --std go together" in done.stderr


def test_cli_json_has_an_entry_per_picture(tmp_path):
    model, pictures = _unet(tmp_path), _pictures(tmp_path)
    done = subprocess.run([sys.executable, "-m", "studio", "infer", str(model), str(pictures), "-o",
                           str(tmp_path / "o"), "--task", "segment", "--json", "--no-overlays"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert len(data["images"]) == len(list(pictures.iterdir())) and data["summary"]["failed"] == 0
    assert not (tmp_path / "o" / "overlays").exists()
    assert "not given" in data["notes"][0]  # the default preprocessing is said
