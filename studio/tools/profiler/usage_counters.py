"""Usage counters of an msprof / PyTorch-NPU database as counter tracks: device (HBM, LLC, DDR,
AI Core frequency, NPU memory, accelerator PMU, SoC bandwidth, QoS, HCCS) and host (CPU, memory,
disk, network usage, written by ``msprof --host-sys``).

Series are named as MindStudio Insight names them (its ``CounterEventHelper``: ``HBM 0 read/
Bandwidth``, ``LLC 0 read/Hit Rate``, ``app/HBM``, ``Accelerator 0/readBwLevel``, ``CPU 3``),
with the unit the table stores in brackets — the database keeps bytes and B/s where the text
timeline writes KB and MB/s, and a track must not pass one off as the other. Each series says which
file and table it came from.

The text layout needs nothing here: its timeline (``msprof_*.json`` / ``trace_view.json``) carries
the same data as ``C`` events, read with the rest of the timeline.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from studio.tools.profiler.builder import TraceBuilder


@dataclass(frozen=True)
class Spec:
    """One table: the timeline group it draws, the columns naming a series, the value columns."""

    table: str
    process: str
    keys: tuple[str, ...]  # columns naming the series (substituted into the labels)
    values: tuple[tuple[str, str, str], ...]  # (column, label template, unit)
    strings: tuple[str, ...] = ()  # key columns holding STRING_IDS ids
    host: bool = False  # host data: no deviceId column


SPECS = (
    Spec("HBM", "HBM", ("hbmId", "type"), (("bandwidth", "HBM {hbmId} {type}/Bandwidth", "B/s"),), ("type",)),
    Spec("LLC", "LLC", ("llcId", "mode"), (("hitRate", "LLC {llcId} {mode}/Hit Rate", "%"),
                                           ("throughput", "LLC {llcId} {mode}/Throughput", "B/s")), ("mode",)),
    Spec("DDR", "DDR", (), (("read", "Read", "B/s"), ("write", "Write", "B/s"))),
    Spec("AICORE_FREQ", "AI Core Freq", (), (("freq", "AI Core Freq", "MHz"),)),
    Spec("NPU_MEM", "NPU MEM", ("type",), (("ddr", "{type}/DDR", "B"), ("hbm", "{type}/HBM", "B")), ("type",)),
    Spec("ACC_PMU", "Acc PMU", ("accId",), tuple((c, "Accelerator {accId}/" + c, "level") for c in
                                                ("readBwLevel", "writeBwLevel", "readOstLevel", "writeOstLevel"))),
    Spec("SOC_BANDWIDTH_LEVEL", "Stars Soc Info", (), (("l2BufferBwLevel", "L2 Buffer Bw Level", "level"),
                                                       ("mataBwLevel", "Mata Bw Level", "level"))),
    Spec("QOS", "QoS", ("eventName",), (("bandwidth", "{eventName}", "B/s"),), ("eventName",)),
    Spec("HCCS", "HCCS", (), (("txThroughput", "Tx", "B/s"), ("rxThroughput", "Rx", "B/s"))),
    Spec("CPU_USAGE", "CPU Usage", ("cpuId",), (("usage", "CPU {cpuId}", "%"),), host=True),
    Spec("HOST_MEM_USAGE", "Memory Usage", (), (("usage", "Memory Usage", "%"),), host=True),
    Spec("HOST_DISK_USAGE", "Disk Usage", (), (("usage", "Disk Usage", "%"),), host=True),
    Spec("HOST_NETWORK_USAGE", "Network Usage", (), (("usage", "Network Usage", "%"),), host=True),
)

#: Process sort: after the device's tasks and API rows, host usage last (as the text timeline orders them).
_SORT = 1000.0


def add_db_counters(builder: TraceBuilder, db: sqlite3.Connection, tables: set[str], strings: dict,
                    file_name: str) -> list[str]:
    """Add every usage table ``db`` holds as counters; returns the tables read."""
    read = []
    for spec in SPECS:
        if spec.table not in tables:
            continue
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({spec.table})")}  # noqa: S608 - fixed names
        values = [v for v in spec.values if v[0] in columns]
        keys = [k for k in spec.keys if k in columns]
        device = [] if spec.host or "deviceId" not in columns else ["deviceId"]
        if "timestampNs" not in columns or not values:
            continue
        select = ", ".join(["timestampNs", *device, *keys, *(v[0] for v in values)])
        rows = db.execute(f"SELECT {select} FROM {spec.table}").fetchall()  # noqa: S608 - fixed names
        devices = {row[1] for row in rows} if device else set()
        series: dict[tuple, tuple] = {}  # (device, key values) -> (pid, name) per value column
        width = len(device) + len(keys)
        for row in rows:
            ts, rest = row[0], row[1:]
            if ts is None:
                continue
            names = series.get(rest[:width])
            if names is None:  # thousands of samples share a few series: named once each
                names = series[rest[:width]] = _series(builder, spec, values, keys, rest[:width], device, devices,
                                                       strings, file_name)
            for (pid, name), value in zip(names, rest[width:]):
                if value is None or isinstance(value, (bytes, str)) and not _is_number(value):
                    continue
                builder.add_counter(pid, name, int(ts), float(value))
        read.append(spec.table)
    return read


def _series(builder: TraceBuilder, spec: Spec, values: list, keys: list, head: tuple, device: list, devices: set,
            strings: dict, file_name: str) -> list[tuple]:
    """(pid, series name) of each value column for the samples whose device and key columns are ``head``."""
    dev = head[0] if device else None
    named = dict(zip(keys, head[len(device):]))
    for key in spec.strings:
        if key in named:
            named[key] = strings.get(named[key], named[key])
    process = spec.process if len(devices) <= 1 else f"{spec.process} (device {dev})"
    pid = ("usage", process)
    builder.process_names.setdefault(pid, process)
    builder.process_sort.setdefault(pid, _SORT + (1 if spec.host else 0))
    builder.counter_sources.setdefault(pid, f"{file_name}: {spec.table}")
    return [(pid, f"{label.format(**named)} ({unit})") for _column, label, unit in values]


def _is_number(text: str | bytes) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
