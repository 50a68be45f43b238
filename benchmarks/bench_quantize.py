"""INT8 on the demo U-Net: ``studio quantize`` (calibrate, rank every layer, search the rollback set)
against doing the same by hand with ONNX Runtime's quantisation tools.

Both sides get the same model, the same calibration samples (an .npz of seeded pictures) and the
same target (every output's cosine against FP32 at least 0.99 on every sample):

* ours: ``studio quantize unet.onnx -o OUT --calib calib.npz --min-cosine 0.99 --no-timing`` in a
  fresh process (calibrates once and reuses the ranges for every build; delta debugging and the
  ranked binary search both run);
* the peer, as a competent user scripts it with ``onnxruntime.quantization``: one calibration (the
  fully quantised model, its ranges saved with ``calibration_cache_path``), then ``quantize_static``
  reading that table for each layer alone (sensitivity, 1 - min cosine of the outputs) and for a
  binary search over the layers ranked most sensitive first for the fewest to exclude
  (``nodes_to_exclude``); the FP32 outputs computed once.

Wall time of each; ``--repeat N`` runs ours and the script alternately N times each and reports
the medians (the range goes to stderr). ``--quick``: 2 samples instead of 8. The set sizes both
found go to stderr.
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
    table = work / "ranges.json"  # calibrated once (the first build), read by every later one
    builds = 0

    def build(**kw) -> float:
        nonlocal builds
        builds += 1
        out = work / f"b{builds}.onnx"
        quantize_static(str(model_path), str(out), None if table.is_file() else _Reader(samples),
                        quant_format=QuantFormat.QDQ, op_types_to_quantize=list(COMPUTE_OPS),
                        calibration_cache_path=str(table), **kw)
        return _min_cosine(ref, _outputs(out, samples))

    build()  # the fully quantised model: calibrates and saves the table

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


def _ours(model_path: Path, work: Path) -> tuple[float, int]:
    """``studio quantize`` in a fresh process, as a user runs it: (seconds, layers left in float)."""
    ranges = work / "ours.ranges.json"
    ranges.unlink(missing_ok=True)  # each run calibrates, as the script does
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "studio", "quantize", str(model_path), "-o",
                           str(work / "ours.onnx"), "--calib", str(work / "calib.npz"), "--min-cosine",
                           str(TARGET), "--no-timing", "--json"], capture_output=True, text=True, timeout=7200)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return seconds, len(json.loads(done.stdout)["fallback"])


def _hand(model_path: Path, samples, work: Path, run: int) -> tuple[float, int, int]:
    folder = work / f"hand{run}"
    folder.mkdir()
    start = time.perf_counter()
    size, builds = by_hand(model_path, samples, folder)
    return time.perf_counter() - start, size, builds


def main() -> int:
    quick = "--quick" in sys.argv
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 1
    import statistics

    import onnx

    from studio.tools.demo.models import build_unet

    with scratch_folder("bench_quantize_") as work:
        model = build_unet()
        model_path = work / "unet.onnx"
        onnx.save(model, str(model_path))
        samples = _samples(model, 2 if quick else 8)
        np.savez(work / "calib.npz", **samples)
        ours, peer = [], []
        for run in range(repeat):  # alternated, so a change in the machine's load hits both sides
            try:
                seconds, ours_size = _ours(model_path, work)
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
                return 1
            ours.append(seconds)
            seconds, size, builds = _hand(model_path, samples, work, run)
            peer.append(seconds)
            print(f"run {run + 1}: ours {ours[-1]:.2f} s ({ours_size} layers left in float); by hand "
                  f"{seconds:.2f} s ({size} layers, {builds} builds)", file=sys.stderr)
        if repeat > 1:
            print(f"ours: median {statistics.median(ours):.2f} s, range {min(ours):.2f}-{max(ours):.2f}; by hand: "
                  f"median {statistics.median(peer):.2f} s, range {min(peer):.2f}-{max(peer):.2f}", file=sys.stderr)
        emit(f"INT8 quantize + sensitivity + search (U-Net, {len(next(iter(samples.values())))} samples)", "s",
             statistics.median(ours), statistics.median(peer),
             "onnxruntime.quantization by hand: one calibration, quantize_static per layer + ranked bisection",
             "faster than the script (candidates edited from the quantised graph)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
