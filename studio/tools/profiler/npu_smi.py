"""``npu-smi info`` sampled on a host while a profiled run goes, written into the profile as
counter tracks (AI Core %, memory and HBM use, temperature, power per NPU).

* :func:`sampler_script` is the shell snippet that starts the sampler in the run's own SSH
  session: a background loop that stamps each ``npu-smi info`` with the host's clock
  (``date +%s%N`` before and after it) and appends it to a log, until the shell that started it
  (which ``exec``s msprof, so it is msprof) is gone. Its output is its own, so the session ends
  when msprof does.
* :func:`parse_log` reads that log: the table of every release seen (910B: ``AICore(%)
  Memory-Usage(MB) HBM-Usage(MB)`` on the chip row; 310: ``AICore(%) Memory-Usage(MB)``) by its
  own header, so a column is never taken for another; a sample cut short is dropped.
* :func:`write_samples` writes them as a Chrome trace of counter events
  (:data:`SAMPLES_FILE`) beside the profile; the folder reader adds it to whatever timeline the
  folder draws. Times are the host's wall clock in microseconds, as msprof's timeline stamps its
  events, so the counters line up with the run.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

SAMPLES_FILE = "npu_smi_samples.json"
LOG_NAME = "npu_smi_info.log"
INTERVAL_S = 1.0
TIMEOUT_S = 10.0  # one ``npu-smi info`` answers in well under a second; a hung driver never does
# Plausible host clocks: 2001-09-09 .. 2100-01-01 in ns (a clock outside is not one, and its
# samples would be drawn far from the run).
_MIN_NS, _MAX_NS = 10**18, 4_102_444_800 * 10**9
_NUMBER = re.compile(r"[0-9]{1,6}")  # an NPU or chip number (ASCII digits, a handful of them)
_BEGIN = "@@studio-npu-smi"
_END = "@@studio-npu-smi-end"
_PID_BASE = 7_000_000  # counter processes of the samples file (far from msprof's pids)
_VALUE = re.compile(r"(NA|-|\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?")


@dataclass
class Sample:
    """One reading of one NPU chip: ``values`` by npu-smi's column name (``AICore(%)``, ...)."""

    time_ns: int
    npu: int
    chip: int
    name: str
    values: dict[str, float] = field(default_factory=dict)


def smi_command(timeout_s: float = TIMEOUT_S) -> str:
    """``npu-smi`` limited to ``timeout_s`` seconds on the host (``timeout`` sends TERM, then KILL a
    second later; exit status 124) where coreutils' ``timeout`` is installed, plain ``npu-smi``
    otherwise. A driver that hangs must not hang the run, nor be left running after it."""
    return (f"$(command -v timeout >/dev/null 2>&1 && echo 'timeout -k 1 {timeout_s:g}') npu-smi")


def sampler_script(log_path: str, interval_s: float = INTERVAL_S, timeout_s: float = TIMEOUT_S) -> str:
    """The snippet that samples ``npu-smi info`` every ``interval_s`` into ``log_path`` for as long as
    the calling shell (``$$``, which becomes msprof by ``exec``) lives; each reading is limited to
    ``timeout_s`` (:func:`smi_command`), so the loop ends soon after the run. Fits between ``&&``s."""
    log = shlex.quote(log_path)
    loop = (f"while kill -0 $$ 2>/dev/null; do t0=$(date +%s%N); s=$({smi_command(timeout_s)} info 2>&1); "
            "t1=$(date +%s%N); "
            f"printf '%s %s %s\\n%s\\n%s\\n' {_BEGIN} \"$t0\" \"$t1\" \"$s\" {_END} >> {log}; "
            f"sleep {interval_s:g}; done")
    return f"{{ ( {loop} ) </dev/null >/dev/null 2>&1 & }}"


def parse_log(text: str) -> list[Sample]:
    """Every complete sample in a sampler log (an unfinished last one is left out)."""
    samples: list[Sample] = []
    block: list[str] | None = None
    stamp = 0
    for line in text.splitlines():
        if line.startswith(_BEGIN + " "):
            parts = line.split()
            times = [_ns(p) for p in parts[1:3]]
            times = [t for t in times if t is not None]
            block, stamp = ([], sum(times) // len(times)) if times else (None, 0)
        elif line == _END:
            if block is not None:
                samples += parse_info(block, stamp)
            block = None
        elif block is not None:
            block.append(line)
    return samples


def parse_info(lines: list[str], time_ns: int) -> list[Sample]:
    """The per-chip readings of one ``npu-smi info`` output (its device table, not its process table)."""
    headers: list[list[str]] = []
    out: list[Sample] = []
    npu_row: tuple[int, str, dict[str, float]] | None = None
    for line in lines:
        if "Process id" in line or "Process name" in line:
            break  # the process table follows the device table
        if not line.lstrip().startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        if cells[1] in ("Health", "Bus-Id"):  # the two header rows name the columns of the third cell
            headers.append(cells[2].split())
            continue
        first = cells[0].split()
        if len(headers) < 2 or not first or not (first[0].isascii() and first[0].isdigit()):
            continue
        # A number no NPU has (thousands of digits) keeps its row's place in the NPU/chip pairs
        # but gives no sample.
        number = int(first[0]) if _NUMBER.fullmatch(first[0]) else None
        values = _values(headers[0] if npu_row is None else headers[1], cells[2])
        if npu_row is None:
            npu_row = (number, " ".join(first[1:]), values)
        else:
            npu, name, top = npu_row
            if npu is not None and number is not None:
                out.append(Sample(time_ns, npu, number, name, {**top, **values}))
            npu_row = None
    return out


def _values(names: list[str], cell: str) -> dict[str, float]:
    """Column name -> value: ``12`` or the used part of ``2828 / 32768`` (its total under ``<name> total``)."""
    out: dict[str, float] = {}
    for name, (used, total) in zip(names, _VALUE.findall(cell)):
        if used in ("NA", "-") or not math.isfinite(float(used)):
            continue  # a 400-digit reading is inf as a float: no counter value
        out[name] = float(used)
        if total and math.isfinite(float(total)):
            out[f"{name} total"] = float(total)
    return out


def _ns(text: str) -> int | None:
    """``date +%s%N`` output in ns; a ``date`` without ``%N`` (busybox) prints seconds and a literal N."""
    digits = text.rstrip("N")
    if not digits.isascii() or not digits.isdigit() or len(digits) > 19:
        return None  # not a clock (a 39-digit "time" would draw the samples nowhere near the run)
    value = int(digits) if len(digits) > 12 else int(digits) * 10**9
    return value if _MIN_NS <= value < _MAX_NS else None


def chrome_events(samples: list[Sample]) -> list[dict]:
    """The samples as Chrome trace events: one process per NPU chip, one counter per column."""
    chips = sorted({(s.npu, s.chip) for s in samples})
    several = len({chip for _, chip in chips}) > 1
    events: list[dict] = []
    pids = {}
    for index, (npu, chip) in enumerate(chips):
        pid = pids[(npu, chip)] = _PID_BASE + index
        name = next(s.name for s in samples if (s.npu, s.chip) == (npu, chip))
        label = f"npu-smi NPU {npu}" + (f" chip {chip}" if several else "") + (f" ({name})" if name else "")
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 2000}})
    for s in sorted(samples, key=lambda s: s.time_ns):
        for column, value in s.values.items():
            if column.endswith(" total") or column.startswith("Hugepages") or s.values.get(f"{column} total") == 0:
                continue  # the size, not the use; hugepages are a host setting; 0 / 0: no such memory
            events.append({"ph": "C", "name": column, "pid": pids[(s.npu, s.chip)], "tid": 0,
                           "ts": f"{s.time_ns // 1000}.{s.time_ns % 1000:03d}", "args": {column: value}})
    return events


def write_samples(folder: Path, samples: list[Sample]) -> Path | None:
    """Write ``samples`` into the profile ``folder`` as :data:`SAMPLES_FILE` (nothing when there are none)."""
    if not samples:
        return None
    path = Path(folder) / SAMPLES_FILE
    path.write_text(json.dumps(chrome_events(samples)))
    return path
