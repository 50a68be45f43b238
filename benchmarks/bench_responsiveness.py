"""Responsiveness: the event loop of the real main window while long jobs run.

A 5 ms QTimer ticks on the GUI thread of Studio's main window (all panels built, offscreen) while
each job runs as a user starts it (``responsiveness_child.py``): opening a 1M-event trace, a
100,000-node model and a 200 MB ONNX file (``open_paths``); converting the demo U-Net to FP16 with
validation (Converter panel); comparing two dump folders of 2 GB each (Accuracy panel, .npy dumps
written under the work folder and deleted after); uploading 5,000 files (Deployment panel, dry run
then apply, to a real sshd on 127.0.0.1); running a small segmentation model over 10,000 small
pictures from the Gallery panel, shown while the run streams and its results open. Printed: the worst and the 99th percentile gap between
ticks (goal: worst < 50 ms) and the load average while the rows ran.

Peers, same run, same window: for the three opens, the same job with the parsing done by a thread
of the GUI's own interpreter, as before (``OFFLOAD_BYTES`` raised so the profiler reads in-thread;
``onnx.load`` in one piece and shape inference in-thread for models). For the other rows, the
window with no job at all for 5 s: the gaps the machine itself causes (other processes on the
cores), the floor no job can go under.

    python benchmarks/run.py bench_responsiveness.py            # full sizes
    python benchmarks/run.py bench_responsiveness.py --quick    # 200k events, 20k nodes, 50 MB, 2x256 MB, 1,000 files,
                                                                # 2,000 pictures
    python benchmarks/run.py bench_responsiveness.py --only convert,upload
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

CHILD = HERE / "responsiveness_child.py"

from bench_common import scratch_folder  # noqa: E402 (benchmarks/ is on the path: the script's folder)


STALLS_DIR: Path | None = None  # --stalls DIR: each child writes the GUI thread's stacks in long gaps


def measure(kind: str, arg: str, in_thread: bool = False, env: dict | None = None) -> dict:
    """Run one job in a fresh window (its own interpreter and STUDIO_HOME); the child's figures.

    A failed job or child is an error. A job the loaded machine did not finish in the child's time
    limit is not: its figures are reported, marked unfinished (a benchmark reports timings, it does
    not assert them)."""
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
        env = {**os.environ, **(env or {}), "STUDIO_HOME": home, "QT_QPA_PLATFORM": "offscreen",
               "PYTHONPATH": str(REPO)}
        argv = [sys.executable, str(CHILD), kind, arg] + (["--in-thread"] if in_thread else [])
        if STALLS_DIR is not None and not in_thread:
            argv += ["--stalls", str(STALLS_DIR / f"{kind}.txt")]
        try:
            result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600, cwd=REPO)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"responsiveness child ({kind}) still running after 3600 s (hung?)") from None
    lines = result.stdout.strip().splitlines()
    data = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    if result.returncode != 0 or not data:
        raise SystemExit(f"responsiveness child ({kind}) failed: {data.get('error', '')}\n{result.stderr[-3000:]}")
    if not data["done"]:
        print(f"{kind} {arg}: not finished after {data['seconds']:.0f} s (load average "
              f"{os.getloadavg()[0]:.1f}); its gaps up to then are reported", file=sys.stderr)
    return data


def big_weights_model(path: Path, megabytes: int) -> Path:
    """A small graph carrying ``megabytes`` of float32 weights (like an exported LLM block)."""
    if path.is_file():
        return path
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    side = 1024
    count = max(1, megabytes * (1 << 20) // (side * side * 4))
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(count):
        inits.append(numpy_helper.from_array(rng.standard_normal((side, side), dtype=np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"], name=f"layer{i}/MatMul"))
        x = f"h{i}"
    graph = helper.make_graph(nodes, "weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, side])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, side])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def dump_folders(root: Path, megabytes: int) -> tuple[Path, Path]:
    """Two framework-style .npy dump folders of ``megabytes`` each: 4 MB tensors, the target the
    golden plus a little noise (as an FP16 run differs from FP32)."""
    import numpy as np
    from accuracy_helpers import write_npy_dump

    rng = np.random.default_rng(0)
    golden, target = root / "golden", root / "target"
    for i in range(max(1, megabytes // 4)):
        a = rng.standard_normal(1 << 20, dtype=np.float32).reshape(1, 256, 64, 64)
        b = a + rng.standard_normal(a.shape, dtype=np.float32) * np.float32(1e-3)
        name = f"layer{i:04}_conv"
        write_npy_dump(golden, [(name, a)], start=1700000000000000 + i)
        write_npy_dump(target, [(name, b)], start=1700000000000000 + i)
    return golden, target


def file_tree(root: Path, count: int, size: int = 4096) -> Path:
    """``count`` files of ``size`` random bytes in 100 folders (as bench_deploy.py uploads)."""
    for i in range(count):
        path = root / f"d{i % 100:02}" / f"f{i:05}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    return root


def _print(label: str, ours: dict, peer: dict, peer_name: str) -> None:
    if not ours["done"] or not peer["done"]:
        label += f" (unfinished after {max(ours['seconds'], peer['seconds']):.0f} s)"
    for stat, name in (("worst", "worst"), ("p99", "99th percentile")):
        print(json.dumps({"figure": f"event-loop gap, {name}: {label}", "unit": "ms",
                          "ours": round(ours[stat], 1), "peer": round(peer[stat], 1),
                          "peer_name": peer_name, "goal": "< 50 ms" if stat == "worst" else "-"}), flush=True)


def small_pictures(root: Path, count: int) -> Path:
    """``count`` 96x96 pictures (a disc on noise) in ``root`` and a 64x64 two-class
    segmentation model (one convolution) to run over them; returns the model."""
    import cv2
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        image = rng.integers(0, 60, (96, 96, 3), dtype=np.uint8)
        cv2.circle(image, (int(rng.integers(16, 80)), int(rng.integers(16, 80))), int(rng.integers(8, 28)),
                   (200, 180, 40), -1)
        cv2.imwrite(str(root / f"p{i:05}.png"), image)
    weight = numpy_helper.from_array(rng.standard_normal((2, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["image", "w"], ["scores"], pads=[1, 1, 1, 1])], "seg",
                              [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 64, 64])],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 64, 64])], [weight])
    model = root.parent / "seg64.onnx"
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8  # what the installed onnxruntime reads
    onnx.save(proto, str(model))
    return model


ROWS = ("trace", "model", "weights", "convert", "accuracy", "upload", "gallery")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=",".join(ROWS), help="comma-separated rows: " + ", ".join(ROWS))
    parser.add_argument("--stalls", type=Path, metavar="DIR",
                        help="write the stacks of every thread during each gap over 30 ms to DIR/<row>.txt")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "studio_bench_responsiveness")
    args = parser.parse_args()
    global STALLS_DIR
    if args.stalls is not None:
        args.stalls.mkdir(parents=True, exist_ok=True)
        STALLS_DIR = args.stalls.absolute()
    only = set(args.only.split(","))
    from profiler_tracegen import generate

    from studio.tools.graph.synthetic import write_synthetic

    args.dir.mkdir(parents=True, exist_ok=True)
    events, nodes, megabytes = (200_000, 20_000, 50) if args.quick else (1_000_000, 100_000, 200)
    dump_mb, files = (256, 1000) if args.quick else (2048, 5000)
    pictures = 2000 if args.quick else 10_000
    loads = [os.getloadavg()[0]]
    idle = measure("idle", "5")
    opens = []
    if "trace" in only:
        opens.append((f"open a {events // 1000}k-event trace", "trace", generate(args.dir / f"trace_{events}.json", events)))
    if "model" in only:
        synthetic = args.dir / f"synthetic_{nodes}.onnx"
        opens.append((f"open a {nodes // 1000}k-node model", "model",
                      synthetic if synthetic.is_file() else write_synthetic(synthetic, nodes)))
    if "weights" in only:
        opens.append((f"open a {megabytes} MB ONNX file", "model",
                      big_weights_model(args.dir / f"weights_{megabytes}mb.onnx", megabytes)))
    for label, kind, path in opens:
        ours = measure(kind, str(path))
        peer = measure(kind, str(path), in_thread=True)
        loads.append(os.getloadavg()[0])
        _print(label, ours, peer, f"parsed in a GUI-process thread (job {peer['seconds']:.1f} s vs ours "
                                  f"{ours['seconds']:.1f} s)")
    floor = f"the window with no job, same run ({idle['ticks']} ticks in 5 s)"

    def against_floor(label: str, ours: dict) -> None:
        loads.append(os.getloadavg()[0])
        _print(f"{label} ({ours['seconds']:.1f} s)", ours, idle, floor)

    if "convert" in only:
        import onnx

        from studio.tools.demo.models import build_unet

        with scratch_folder("convert-", args.dir) as work:
            onnx.save(build_unet(), work / "unet.onnx")
            ours = measure("convert", str(work / "unet.onnx"))
        against_floor("convert the demo U-Net to FP16 with validation", ours)
    if "accuracy" in only:
        with scratch_folder("dumps-", args.dir) as work:
            golden, target = dump_folders(work, dump_mb)
            ours = measure("accuracy", f"{golden}|{target}")
        against_floor(f"compare two dump folders of {dump_mb / 1024:g} GB", ours)
    if "upload" in only:
        from sshd_server import sshd_missing_reason, start_sshd

        reason = sshd_missing_reason()
        if reason:
            from bench_common import skipping

            skipping("the upload row (it uploads to a loopback sshd)", reason)
        else:
            with scratch_folder("upload-", args.dir) as work:
                sshd = start_sshd(work / "sshd")
                try:
                    spec = {"host": sshd.host, "port": sshd.port, "user": sshd.user, "key": str(sshd.client_key),
                            "local": str(file_tree(work / "local", files)), "remote": str(work / "remote")}
                    ours = measure("upload", json.dumps(spec), env={"STUDIO_KNOWN_HOSTS": str(sshd.known_hosts)})
                    uploaded = sum(1 for p in (work / "remote").rglob("*") if p.is_file())
                    if uploaded != files:
                        raise SystemExit(f"upload row: {uploaded} of {files} files arrived")
                finally:
                    sshd.stop()
            against_floor(f"upload {files:,} files", ours)
    if "gallery" in only:
        with scratch_folder("gallery-", args.dir) as work:
            model = small_pictures(work / "pictures", pictures)
            spec = {"model": str(model), "pictures": str(work / "pictures"), "out": str(work / "out"),
                    "count": pictures}
            ours = measure("gallery", json.dumps(spec))
        against_floor(f"infer over {pictures:,} pictures with the Gallery shown", ours)
    print(json.dumps({"figure": "load average (1 min) while the rows ran, min-max", "unit": "",
                      "ours": f"{min(loads):.2f}-{max(loads):.2f}", "peer": "-", "peer_name": "-",
                      "goal": "-"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
