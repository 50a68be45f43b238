"""The infer run's pipeline: pictures post-processed on a pool come out in the pictures' order
(in results.csv too, and when the first picture is the slowest), overlays are lossless PNGs of
what was drawn, and a cancel keeps every row finished before it."""

from __future__ import annotations

import csv
import threading
import time

import cv2
import numpy as np
import onnx
import pytest

from studio.core.errors import Cancelled
from studio.core.jobs import CancelToken, run_job
from studio.tools.infer import results
from studio.tools.infer.runner import InferOptions, run_infer


@pytest.fixture
def unet_run(tmp_path):
    from studio.tools.demo.images import make_demo_images
    from studio.tools.demo.models import build_unet

    onnx.save(build_unet(), tmp_path / "unet.onnx")
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    for seed in range(3):
        for name, image in make_demo_images(seed=seed).items():
            cv2.imwrite(str(pictures / f"{seed}_{name}.png"), image)
    return InferOptions(tmp_path / "unet.onnx", pictures, tmp_path / "out", "segment", preset="symmetric")


def test_rows_keep_the_pictures_order_when_the_first_is_answered_last(unet_run, monkeypatch):
    answer = results._answer
    first = sorted(unet_run.images.iterdir())[0].stem

    def slow_first(opts, pre, outputs, placement, image, stem, *rest):
        if stem == first:
            time.sleep(0.5)  # the others finish meanwhile on the pool's other thread
        return answer(opts, pre, outputs, placement, image, stem, *rest)

    monkeypatch.setattr(results, "_answer", slow_first)
    result = run_job(run_infer(unet_run))
    names = sorted(p.name for p in unet_run.images.iterdir())
    assert [r["image"] for r in result.rows] == names
    with open(unet_run.out / "results.csv", newline="") as handle:
        assert [row["image"] for row in csv.DictReader(handle)] == names
    # the overlay files hold exactly what was drawn (lossless), for every picture
    from studio.tools.infer import overlay, postprocess
    from studio.tools.infer.preprocess import apply, make_preprocess
    import onnxruntime as ort

    session = ort.InferenceSession(str(unet_run.model), providers=["CPUExecutionProvider"])
    pre = make_preprocess((1, 3, 256, 256), "segment", "symmetric")
    for row in result.rows[:3]:
        image = cv2.imread(str(unet_run.images / row["image"]))
        tensor, placement = apply(pre, image)
        mask = postprocess.segment(session.run(None, {"image": tensor})[0])
        mask = cv2.resize(mask, image.shape[1::-1], interpolation=cv2.INTER_NEAREST)
        assert np.array_equal(cv2.imread(str(unet_run.out / row["overlay"])), overlay.draw_mask(image, mask))


def test_a_cancel_keeps_the_rows_finished_before_it(unet_run):
    cancel = CancelToken()
    seen = []

    def on_step(step) -> None:
        seen.append(step)
        if len(seen) == 3:  # after 9 pictures (progress every 8): cancel from another thread
            threading.Thread(target=cancel.cancel).start()
            time.sleep(0.2)

    with pytest.raises(Cancelled):
        run_job(run_infer(unet_run, cancel), on_progress=on_step)
    with open(unet_run.out / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    names = sorted(p.name for p in unet_run.images.iterdir())
    assert 9 <= len(rows) < len(names) and [r["image"] for r in rows] == names[:len(rows)]
    assert all(r["foreground_share"] for r in rows)
