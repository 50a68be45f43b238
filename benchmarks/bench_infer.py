"""Pictures per second of ``studio infer`` against a plain ONNX Runtime loop over the same preprocessing.

The demo U-Net (1x3x256x256, segmentation) over N demo pictures (N = 60, ``--quick``: 20):

* ours: ``run_infer`` with masks as ground truth, overlays written (what a user runs);
* the peer: read each picture with OpenCV, resize, normalise, ``session.run`` — nothing else.

Both runs are interleaved (ours, peer, ours, peer, ...) ``--rounds`` times and the medians compared;
goal: ours >= 0.9x the peer's pictures per second.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_common import emit


def _setup(root: Path, count: int) -> tuple[Path, Path, Path]:
    import cv2
    import numpy as np
    import onnx

    from studio.tools.demo.images import make_demo_images
    from studio.tools.demo.models import build_unet

    model = root / "unet.onnx"
    onnx.save(build_unet(), model)
    pictures, masks = root / "pictures", root / "masks"
    pictures.mkdir()
    masks.mkdir()
    seed = 0
    while len(list(pictures.iterdir())) < count:
        for name, image in make_demo_images(seed=seed).items():
            if len(list(pictures.iterdir())) >= count:
                break
            cv2.imwrite(str(pictures / f"{name}_{seed}.png"), image)
            mask = np.zeros(image.shape[:2], np.uint8)
            mask[image.shape[0] // 4:, :] = 1
            cv2.imwrite(str(masks / f"{name}_{seed}.png"), mask)
        seed += 1
    return model, pictures, masks


def _plain_loop(model: Path, pictures: Path) -> float:
    import cv2
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    files = sorted(pictures.iterdir())
    start = time.perf_counter()
    for path in files:
        image = cv2.imread(str(path))
        x = cv2.resize(image, (256, 256))[:, :, ::-1].astype(np.float32) / 127.5 - 1
        session.run(None, {"image": np.ascontiguousarray(x.transpose(2, 0, 1)[None])})
    return len(files) / (time.perf_counter() - start)


def _ours(model: Path, pictures: Path, masks: Path, out: Path) -> float:
    from studio.core.jobs import run_job
    from studio.tools.infer.runner import InferOptions, run_infer

    shutil.rmtree(out, ignore_errors=True)
    count = len(list(pictures.iterdir()))
    start = time.perf_counter()
    run_job(run_infer(InferOptions(model, pictures, out, "segment", truth=masks, preset="symmetric")))
    return count / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    count = 20 if args.quick else 60
    root = Path(tempfile.mkdtemp(prefix="bench_infer_"))
    try:
        model, pictures, masks = _setup(root, count)
        ours, peer = [], []
        for _ in range(args.rounds):
            ours.append(_ours(model, pictures, masks, root / "out"))
            peer.append(_plain_loop(model, pictures))
        print(f"ours {ours}, peer {peer} pictures/s", file=sys.stderr)
        # A rate: bigger is better, so the row's ratio is peer time over our time per picture.
        emit(f"infer: {count} pictures, U-Net 256 (s per picture)", "s", 1 / statistics.median(ours),
             1 / statistics.median(peer), "plain ORT loop, same preprocessing", "<= 1.11 (>= 0.9x pictures/s)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
