"""INT8 on the demo U-Net: ``studio quantize`` (calibrate, rank every layer, search the rollback set)
against doing the same by hand with ONNX Runtime's quantisation tools.

Both sides get the same model, the same calibration samples (an .npz of seeded pictures) and the
same target (every output's cosine against FP32 at least 0.99 on every sample):

* ours: ``studio quantize unet.onnx -o OUT --calib calib.npz --min-cosine 0.99 --no-timing`` in a
  fresh process (calibrates once and reuses the ranges for every build; delta debugging and the
  ranked binary search both run);
* the peer, as a user scripts it with ``onnxruntime.quantization``: ``quantize_static`` for each
  layer alone (sensitivity, 1 - min cosine of the outputs), then a binary search over the layers
  ranked most sensitive first for the fewest to exclude (``nodes_to_exclude``) — each build
  calibrating again, as ``quantize_static`` does without a cache.

Wall time of each (one run each: minutes on the full U-Net; ``--quick``: fewer, smaller samples).
The set sizes both found go to stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench_common import emit, scratch_folder

TARGET = 0.99
COMPUTE_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul")


def _samples(model, count: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    name = model.graph.input[0].name
    dims = [d.dim_value or 1 for d in model.graph.input[0].type.tensor_type.shape.dim]
    return {name: rng.random((count, *dims[1:]), dtype=np.float32)}


class _Reader:
    """The calibration samples, one at a time, as ``quantize_static`` reads them."""

    def __init__(self, samples: dict[str, np.ndarray]):
        self.samples, self.i = samples, 0

    def get_next(self):
        name, data = next(iter(self.samples.items()))
        if self.i >= len(data):
            return None
        self.i += 1
        return {name: data[self.i - 1:self.i]}


def _outputs(path: Path, samples: dict[str, np.ndarray]) -> list[list[np.ndarray]]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name, data = next(iter(samples.items()))
    return [session.run(None, {name: data[i:i + 1]}) for i in range(len(data))]


def _min_cosine(ref, got) -> float:
    worst = 1.0
    for a_list, b_list in zip(ref, got):
        for a, b in zip(a_list, b_list):
            a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
            worst = min(worst, float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)))
    return worst


def by_hand(model_path: Path, samples: dict[str, np.ndarray], work: Path) -> tuple[int, int]:
    """The peer's script: per-layer sensitivity, then a ranked binary search; (set size, builds)."""
    import onnx
    from onnxruntime.quantization import QuantFormat, quantize_static

    model = onnx.load(str(model_path))
    layers = [n.name for n in model.graph.node if n.op_type in COMPUTE_OPS and n.name]
    ref = _outputs(model_path, samples)
    builds = 0

    def build(**kw) -> float:
        nonlocal builds
        builds += 1
        out = work / f"b{builds}.onnx"
        quantize_static(str(model_path), str(out), _Reader(samples), quant_format=QuantFormat.QDQ,
                        op_types_to_quantize=list(COMPUTE_OPS), **kw)
        return _min_cosine(ref, _outputs(out, samples))

    error = {layer: 1.0 - build(nodes_to_quantize=[layer]) for layer in layers}
    ranked = sorted(layers, key=lambda n: -error[n])
    lo, hi = 0, len(ranked)  # the fewest excluded (most sensitive first) that meets the target
    while lo < hi:
        mid = (lo + hi) // 2
        if build(nodes_to_exclude=ranked[:mid]) >= TARGET:
            hi = mid
        else:
            lo = mid + 1
    return lo, builds


def main() -> int:
    quick = "--quick" in sys.argv
    import onnx

    from studio.tools.demo.models import build_unet

    with scratch_folder("bench_quantize_") as work:
        model = build_unet()
        model_path = work / "unet.onnx"
        onnx.save(model, str(model_path))
        samples = _samples(model, 2 if quick else 8)
        np.savez(work / "calib.npz", **samples)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "studio", "quantize", str(model_path), "-o",
                               str(work / "ours.onnx"), "--calib", str(work / "calib.npz"), "--min-cosine",
                               str(TARGET), "--no-timing", "--json"], capture_output=True, text=True, timeout=7200)
        ours = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return 1
        found = json.loads(done.stdout)
        (work / "hand").mkdir()
        start = time.perf_counter()
        size, builds = by_hand(model_path, samples, work / "hand")
        peer = time.perf_counter() - start
        print(f"ours: {len(found['fallback'])} layers left in float; by hand: {size} layers, {builds} builds",
              file=sys.stderr)
        emit(f"INT8 quantize + sensitivity + search (U-Net, {len(next(iter(samples.values())))} samples)", "s",
             ours, peer, "onnxruntime.quantization by hand: quantize_static per layer + ranked bisection",
             "faster than the script (one calibration, cached ranges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
