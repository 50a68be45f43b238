"""What the stand-in CANN tools share: seeded latencies, numpy-equal percentiles, a record file.

The stand-ins replace msprof, npu-smi, msame and ais_bench on a test "host" (this machine, or the
loopback sshd). They use only the standard library, since the host's python3 has nothing else.
Environment knobs (all optional):

* ``STANDIN_LATENCY_MS`` (default 7.2) and ``STANDIN_SEED`` (default 0): the timings printed;
* ``STANDIN_RECORD``: a file where the tool writes the raw per-loop times it printed (JSON), so a
  test can compute the statistics independently;
* ``STANDIN_NO_NPU=1``: behave as on a host whose NPU driver does not answer;
* ``STANDIN_DISK_FULL=1``: msprof fails writing its data with ENOSPC;
* ``STANDIN_ASCEND_FIXTURES``: ../shared/fixtures/ascend, whose real files msprof copies into PROF_;
* ``STANDIN_MSPROF_NO_EXPORT=1``: msprof collects but leaves the export to ``msprof --export=on``;
* ``STANDIN_MSPROF_PAD_MB``: size of raw device data written into each PROF_ folder;
* ``STANDIN_APP_SLEEP``: seconds the stand-in tools wait before printing results (cancel tests);
* ``STANDIN_PYTHON``: an interpreter with numpy and onnxruntime, which runs the ONNX model an .om
  names in its ``atc_cmdline`` (``--model=X.onnx``) over a folder of inputs (``standin_twin.py``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

OM_MAGIC = b"IMOD"


def latencies(count: int, cold_first: bool = True) -> list[float]:
    """``count`` per-loop times in ms: a base latency with +-3 % jitter; the first loop is slower."""
    base = float(os.environ.get("STANDIN_LATENCY_MS", "7.2"))
    rng = random.Random(int(os.environ.get("STANDIN_SEED", "0")))
    times = [round(base * (1 + rng.uniform(-0.03, 0.03)), 3) for _ in range(count)]
    if cold_first and times:
        times[0] = round(times[0] * 1.4, 3)
    return times


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, as numpy.percentile computes it by default."""
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (pos - low)


def record(name: str, payload: dict) -> None:
    """Append what a tool printed to ``$STANDIN_RECORD`` (a JSON list) for the test to check."""
    path = os.environ.get("STANDIN_RECORD")
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as handle:
            items = json.load(handle)
    except (OSError, ValueError):
        items = []
    items.append({"tool": name, "argv": sys.argv[1:], **payload})
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(items, handle)


def check_om(path: str) -> str | None:
    """An error line when ``path`` is not a readable OM file, as the ACL loader reports it."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError:
        return f"[ERROR] load model from file failed, model file is {path}"
    if magic != OM_MAGIC:
        return f"[ERROR] load model from file failed, model file is {path}"
    return None


def om_twin(path: str) -> str | None:
    """The ONNX model an OM was converted from, as its ``atc_cmdline`` names it, or None."""
    import re

    with open(path, "rb") as handle:
        found = re.search(rb"--model=(\S+?\.onnx)", handle.read())
    return found.group(1).decode() if found else None


def run_twin(model: str, folder: str, out: str, tool: str) -> int:
    """Run the OM's ONNX twin over the input files of ``folder`` into ``out`` (standin_twin.py)."""
    import subprocess

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin_twin.py")
    python = os.environ.get("STANDIN_PYTHON") or sys.executable
    return subprocess.call([python, script, om_twin(model), folder, out, tool])


def no_npu() -> bool:
    return os.environ.get("STANDIN_NO_NPU") == "1"


def pause() -> None:
    seconds = float(os.environ.get("STANDIN_APP_SLEEP", "0") or 0)
    if seconds:
        sys.stdout.flush()
        time.sleep(seconds)


def say(line: str = "") -> None:
    print(line, flush=True)
