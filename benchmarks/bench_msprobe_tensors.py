"""msprobe tensor-mode comparison: ``studio compare`` against ``msprobe compare`` on the same dump pair.

A torch network of large linear layers runs in FP32 (golden) and BF16 (target), dumped in msprobe's
tensor layout (``task: tensor``, every argument's tensor saved as ``.pt`` beside dump.json, as
msprobe's dump writes it; the writer is the tests' ``msprobe_tensor_helpers.Recorder``). Both tools
compare the pair from a fresh process each time (median of the repeats); the figure names the
dump size, and the rate (GB of tensors read per second) is printed on stderr. The page cache is
warm for both (each tool's first run is a warm-up).

Needs torch and mindstudio-probe (the test extra installs them); without them the figure is skipped.
``--quick``: a smaller network and fewer repeats.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bench_common import emit, scratch_folder, skipping


def _dump_pair(root: Path, layers: int, width: int, batch: int) -> tuple[Path, Path, int]:
    """Golden (FP32) and target (BF16) tensor dumps of ``layers`` linear layers; their dump.json
    paths and the bytes of tensors both hold."""
    import torch
    import torch.nn.functional as F
    from msprobe_tensor_helpers import Recorder

    paths = []
    for side, dtype in (("golden", torch.float32), ("target", torch.bfloat16)):
        recorder = Recorder(root / side / "step0" / "rank0", "pytorch")
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(batch, width, generator=gen).to(dtype)
        for _ in range(layers):
            w = (torch.randn(width, width, generator=gen) / width ** 0.5).to(dtype)
            b = (torch.randn(width, generator=gen) * 0.1).to(dtype)
            x = recorder.call("Functional.linear", F.linear, x, w, b)
            x = recorder.call("Functional.relu", F.relu, x)
        paths.append(recorder.write("tensor"))
    size = sum(f.stat().st_size for f in root.rglob("*.pt"))
    return paths[0], paths[1], size


def _median_run(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs + 1):  # the first run warms the page cache and the imports
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, timeout=3600)
        times.append(time.perf_counter() - start)
    times = sorted(times[1:])
    return times[len(times) // 2]


def _median_in_process(golden: Path, target: Path, runs: int) -> float:
    """The comparison without the process start-up (imports, numba's cache load): a small pair
    measures mostly that; a large one mostly this."""
    from studio.tools.accuracy.msprobe_compare import compare_msprobe

    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        compare_msprobe(golden, target)
        times.append(time.perf_counter() - start)
    times = sorted(times[1:])
    return times[len(times) // 2]


def main() -> int:
    quick = "--quick" in sys.argv
    try:
        import torch  # noqa: F401
    except ImportError:
        skipping("the msprobe tensor-mode figure", "torch is not installed (pip install -e '.[test]')")
        return 0
    msprobe = Path(sys.executable).with_name("msprobe")
    if not msprobe.exists():
        skipping("the msprobe tensor-mode figure", "msprobe is not installed (mindstudio-probe, the test extra)")
        return 0
    layers, width, batch, runs = (4, 1024, 256, 1) if quick else (12, 2048, 512, 3)
    with scratch_folder("bench_msprobe_") as root:
        golden, target, size = _dump_pair(root, layers, width, batch)
        ours = _median_run([sys.executable, "-m", "studio", "compare", str(golden), str(target), "--json"], runs)
        out = root / "msprobe_out"
        out.mkdir()
        peer = _median_run([str(msprobe), "compare", "-tp", str(target), "-gp", str(golden), "-o", str(out)], runs)
        gb = size / 1e9
        inside = _median_in_process(golden, target, runs)
        print(f"tensors read: {gb:.2f} GB; studio {gb / ours:.2f} GB/s, msprobe {gb / peer:.2f} GB/s; "
              f"studio's comparison alone (in one process, no start-up) {gb / inside:.2f} GB/s", file=sys.stderr)
        emit(f"msprobe tensor compare ({size / 2**20:.0f} MiB of .pt)", "s", ours, peer,
             "msprobe compare (mindstudio-probe 26.2) on the same pair",
             ">= 0.3 GB/s of dump read (msprobe states 0.1-0.3 GB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
