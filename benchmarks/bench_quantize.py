"""INT8 on the demo U-Net: ``studio quantize`` (calibrate, rank every layer, search the rollback set)
against doing the same by hand with ONNX Runtime's quantisation tools.

Both sides get the same model, the same calibration samples (an .npz of seeded pictures) and the
same target (every output's cosine against FP32 at least 0.99 on every sample):

* ours: ``studio quantize unet.onnx -o OUT --calib calib.npz --min-cosine 0.99 --no-timing`` (one
  calibration; each candidate edited from the quantised graph);
* the peer, as a competent user scripts it with ``onnxruntime.quantization``: one calibration (the
  fully quantised model, its ranges saved with ``calibration_cache_path``), then ``quantize_static``
  reading that table for each layer alone (sensitivity, 1 - min cosine of the outputs) and for a
  binary search over the layers ranked most sensitive first for the fewest to exclude
  (``nodes_to_exclude``); the FP32 outputs computed once.

Ours runs twice: with both searches (the default: delta debugging and the ranked bisection, their
set sizes compared) and with ``--search ranked``, the same search as the script. Every side runs
in a fresh process (start-up and imports counted). Wall time of each; ``--repeat N`` alternates
the three N times and reports the medians (the ranges go to stderr). ``--quick``: 2 samples
instead of 8. The set sizes found go to stderr.
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


def _timed(argv: list[str]) -> tuple[float, dict]:
    """Run ``argv`` in a fresh process (its start-up and imports counted, as a user pays them):
    (seconds, its JSON output)."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=7200)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return seconds, json.loads(done.stdout)


def _ours(model_path: Path, work: Path, search: str) -> tuple[float, int]:
    """``studio quantize`` (``--search``): (seconds, layers left in float)."""
    (work / "ours.ranges.json").unlink(missing_ok=True)  # each run calibrates, as the script does
    seconds, found = _timed([sys.executable, "-m", "studio", "quantize", str(model_path), "-o", str(work / "ours.onnx"),
                             "--calib", str(work / "calib.npz"), "--min-cosine", str(TARGET), "--no-timing",
                             "--search", search, "--json"])
    return seconds, len(found["fallback"])


def _hand(model_path: Path, work: Path, run: int) -> tuple[float, int, int]:
    """The script in a fresh process: (seconds, set size, builds)."""
    folder = work / f"hand{run}"
    folder.mkdir()
    seconds, found = _timed([sys.executable, __file__, "--by-hand", str(model_path), str(work / "calib.npz"),
                             str(folder)])
    return seconds, found["size"], found["builds"]


def _hand_main(model_path: str, npz: str, folder: str) -> int:
    """``--by-hand``: the script on its own, as a user runs it; prints its set size and builds."""
    with np.load(npz) as data:
        samples = {name: data[name] for name in data.files}
    size, builds = by_hand(Path(model_path), samples, Path(folder))
    print(json.dumps({"size": size, "builds": builds}))
    return 0


def _spread(values: list[float]) -> str:
    import statistics

    return f"median {statistics.median(values):.2f} s, range {min(values):.2f}-{max(values):.2f}"


def main() -> int:
    if "--by-hand" in sys.argv:
        at = sys.argv.index("--by-hand")
        return _hand_main(*sys.argv[at + 1:at + 4])
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
        both, ranked, peer = [], [], []
        for run in range(repeat):  # alternated, so a change in the machine's load hits every side
            try:
                seconds, both_size = _ours(model_path, work, "both")
                both.append(seconds)
                seconds, ranked_size = _ours(model_path, work, "ranked")
                ranked.append(seconds)
                seconds, size, builds = _hand(model_path, work, run)
                peer.append(seconds)
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
                return 1
            print(f"run {run + 1}: ours (both searches) {both[-1]:.2f} s, {both_size} layers left in float; ours "
                  f"(--search ranked) {ranked[-1]:.2f} s, {ranked_size} layers; by hand {peer[-1]:.2f} s, {size} "
                  f"layers, {builds} builds", file=sys.stderr)
        print(f"ours, both searches: {_spread(both)}; ours, --search ranked: {_spread(ranked)}; by hand: "
              f"{_spread(peer)}", file=sys.stderr)
        count = len(next(iter(samples.values())))
        script = "onnxruntime.quantization by hand: one calibration, quantize_static per layer + ranked bisection"
        emit(f"INT8 quantize + sensitivity + the same search (U-Net, {count} samples)", "s",
             statistics.median(ranked), statistics.median(peer), script,
             "faster than the script (candidates edited from the quantised graph)")
        emit(f"INT8 quantize + sensitivity + both searches (U-Net, {count} samples)", "s",
             statistics.median(both), statistics.median(peer), script,
             "near the script while also running delta debugging")
    return 0


if __name__ == "__main__":
    sys.exit(main())
