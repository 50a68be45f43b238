"""The advisor: advice on the demo U-Net, the closed loop, and msprof-analyze on the same Ascend data.

Figures (each from this run, on this machine):

1. ``studio advise`` on the demo U-Net with its local profile and its FP16 check (model + profile
   + accuracy CSV), end to end as a CLI process, and the same job inside a running app (imports
   done), with ``studio graph summary`` of the same model as the floor a CLI process costs.
   Goal: under 2 s. This computer's roofs are measured on the first run and kept in the
   device table, as in use. Peer: msprof-analyze advisor
   (the field's engine) on the PyTorch-NPU fixture, its smallest real input.
2. Our rules on that PyTorch-NPU fixture (``studio advise --profile ... --no-msprof-analyze``)
   against msprof-analyze advisor on the same folder.
3. The closed loop on the demo U-Net (``studio advise --model M --profile P --apply -o F``: apply
   the exact fusions, profile again with the profile's settings, check every output, report
   before / after) against the same steps by hand: ``studio convert M -o F --validate`` (apply +
   per-output check), ``studio profile run`` of M and of F (same iterations and warm-ups, back to
   back as the loop does), ``studio profile compare BEFORE AFTER`` (before / after per op).

Every figure is the median of ``--runs`` (default 3) runs: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench_common import emit

SHARED = Path(os.environ.get("STUDIO_SHARED", ROOT.parent / "shared"))
NPU_FIXTURE = SHARED / "fixtures" / "ascend" / "pytorch_npu"


def studio(*args: str, env=None) -> float:
    """Wall time of one `studio ...` process (raises when it fails)."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "studio", *map(str, args)], capture_output=True, text=True,
                            cwd=ROOT, env=env)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"studio {' '.join(map(str, args))} failed (exit {result.returncode}):\n"
                           f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return elapsed


def median(fn, runs: int) -> float:
    return statistics.median(fn() for _ in range(runs))


def prepare_demo(folder: Path) -> tuple[Path, Path, Path]:
    """The demo U-Net, its local profile and its FP16 check CSV (as `studio --demo` writes them)."""
    from studio.core.jobs import run_job
    from studio.tools.accuracy import demo as accuracy_demo
    from studio.tools.demo.workspace import create_demo_workspace
    from studio.tools.profiler import demo as profiler_demo

    run_job(create_demo_workspace(folder))
    (profile,) = run_job(profiler_demo.add_to_demo(folder))
    (csv,) = run_job(accuracy_demo.add_to_demo(folder))
    return folder / "models" / "unet.onnx", profile, csv


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="bench-advisor-") as tmp:
        tmp = Path(tmp)
        env["STUDIO_HOME"] = str(tmp / "home")
        model, profile, csv = prepare_demo(tmp / "demo")
        from studio.tools.advisor.msprof_analyze import find_executable

        exe = find_executable()
        npu = None
        if exe and NPU_FIXTURE.is_dir():
            npu = tmp / "npu"
            shutil.copytree(NPU_FIXTURE, npu / "ASCEND_PROFILER_OUTPUT")

        def peer_msprof() -> float:
            out = tmp / f"ma-{time.monotonic_ns()}"
            start = time.perf_counter()
            subprocess.run([exe, "advisor", "all", "-d", str(npu), "-o", str(out), "-l", "en"],
                           capture_output=True, check=True)
            return time.perf_counter() - start

        ours = median(lambda: studio("advise", "--model", model, "--profile", profile, "--accuracy", csv,
                                     "--json", env=env), args.runs)
        peer = median(peer_msprof, args.runs) if npu else float("nan")
        emit("advise demo U-Net (model+profile+FP16 CSV), CLI", "s", ours, peer,
             "msprof-analyze advisor all on the PyTorch-NPU fixture", "< 2 s")
        startup = median(lambda: studio("graph", "summary", model, "--json", env=env), args.runs)
        emit("advise demo U-Net, CLI vs reading the model alone", "s", ours, startup,
             "studio graph summary MODEL --json (process start + imports + model read)", "< 2 s")
        os.environ["STUDIO_HOME"] = env["STUDIO_HOME"]  # the device table measured by the CLI runs above
        from studio.core.jobs import run_job
        from studio.tools.advisor.engine import advise

        def in_process() -> float:
            start = time.perf_counter()
            run_job(advise(model, profile, csv, msprof=False))
            return time.perf_counter() - start

        in_process()  # imports once, as in the app
        emit("advise demo U-Net, in the app (imports done)", "s", median(in_process, args.runs), peer,
             "msprof-analyze advisor all on the PyTorch-NPU fixture", "< 2 s")
        if npu:
            ours = median(lambda: studio("advise", "--profile", npu / "ASCEND_PROFILER_OUTPUT", "--no-msprof-analyze",
                                         "--json", env=env), args.runs)
            emit("advise PyTorch-NPU fixture, our rules (CLI)", "s", ours, peer,
                 "msprof-analyze advisor all, same folder", "faster than the peer")

        def ours_loop() -> float:
            return studio("advise", "--model", model, "--profile", profile, "--apply", "-o",
                          tmp / "fixed_loop.onnx", "--json", env=env)

        settings = json.loads((profile / "studio_profile.json").read_text())

        def by_hand() -> float:
            fixed, stamp = tmp / "fixed_hand.onnx", time.monotonic_ns()
            runs = ("--iterations", settings["iterations"], "--warmup", settings["warmup"])
            return (studio("convert", model, "-o", fixed, "--validate", env=env)
                    + studio("profile", "run", model, "-o", tmp / f"before-{stamp}", *runs, env=env)
                    + studio("profile", "run", fixed, "-o", tmp / f"after-{stamp}", *runs, env=env)
                    + studio("profile", "compare", tmp / f"before-{stamp}", tmp / f"after-{stamp}", env=env))

        emit("closed loop on the demo U-Net (apply, re-profile, re-check)", "s", median(ours_loop, args.runs),
             median(by_hand, args.runs), "studio convert --validate + 2x profile run + profile compare by hand",
             "no slower than by hand")
    return 0


if __name__ == "__main__":
    sys.exit(main())
