"""A synthetic 3-rank torch_npu db export where one rank's host is slow and another's device is.

Each rank runs the same program on one clock: 20 kernels ``a_k``, the all-reduce ``hcom_allReduce__1_1_1``,
20 kernels ``b_k``, the all-reduce ``hcom_allReduce__1_2_1``. Every kernel is a PyTorch op
``aten::op_a_k`` that calls CANN ``node@launch``, and the device runs it when it is free.

- rank 1's host stops for ``HOST_STALL_NS`` before its last 5 ``a`` kernels (Python did nothing):
  its device idles, then runs each late kernel at once — it reaches the first all-reduce late.
- rank 2's ``b`` kernels take ``SLOW_KERNEL_NS`` on the device instead of ``KERNEL_NS`` while its
  host launches at the usual pace: the kernels queue on the device — it reaches the second all-reduce late.

- ``build(root, export="text")`` writes the same program as torch_npu's text export instead:
  ``trace_view.json`` (Python ops, CANN ``Node@launch`` calls, Ascend Hardware kernels joined by
  ``connection_id`` and ``async_npu`` flows, the HCCL ops), ``communication.json`` and
  ``step_trace_time.csv``.

- optionally (``build(root, launch_lag_rank=0)``) that rank's CANN launches fall ``LAUNCH_LAG_NS`` behind
  their PyTorch ops from its 10th ``a`` kernel on (the launch layer stalls, Python does not): its
  device idles before that kernel.

An all-reduce ends on every rank when the last one arrives (+ ``ALLREDUCE_NS``); each rank's
``analysis.db`` holds its CommAnalyzerTime rows (synchronisation = waiting for the last arrival).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

T0 = 1_700_000_000_000_000_000
OP_NS, LAUNCH_NS, KERNEL_NS, SLOW_KERNEL_NS = 20_000, 8_000, 30_000, 400_000
HOST_STALL_NS = 5_000_000
LAUNCH_LAG_NS, LAG_FROM = 3_000_000, 10
ALLREDUCE_NS = 200_000
KERNELS = 20
GROUP = "777"
OPS = ("hcom_allReduce__1_1_1", "hcom_allReduce__1_2_1")


def _phase(prefix: str, host: int, device: int, stall_before: int | None, kernel_ns: int, lag: bool = False):
    """Kernels of one phase from host time ``host``: (pytorch, launch, kernel) spans; returns the end times."""
    spans = []
    for k in range(KERNELS):
        if stall_before is not None and k == stall_before:
            host += HOST_STALL_NS
        p = (host, host + OP_NS)
        behind = LAUNCH_LAG_NS if lag and k >= LAG_FROM else 0
        a = (host + 5_000 + behind, host + 5_000 + behind + LAUNCH_NS)  # the launch runs inside the PyTorch op
        start = max(device, a[1] + 2_000)                        # the device takes it when free
        spans.append((f"{prefix}_{k}", p, a, (start, start + kernel_ns)))
        host, device = p[1] + 2_000, start + kernel_ns
    return spans, host, device


def _rank_program(rank: int, lag: bool = False):
    a, host, device = _phase("a", T0, T0, 15 if rank == 1 else None, KERNEL_NS, lag)
    arrive1 = max(host, device)
    return a, arrive1


def build(root: Path, launch_lag_rank: int | None = None, export: str = "db") -> Path:
    """Write the 3 ranks under ``root`` (as a db or a text export) and return ``root``."""
    programs = {}
    for rank in range(3):
        a, arrive1 = _rank_program(rank, rank == launch_lag_rank)
        programs[rank] = {"a": a, "arrive": [arrive1]}
    end1 = max(p["arrive"][0] for p in programs.values()) + ALLREDUCE_NS
    for rank, p in programs.items():
        b, host, device = _phase("b", end1 + 10_000, end1 + 10_000, None, SLOW_KERNEL_NS if rank == 2 else KERNEL_NS)
        p["b"] = b
        p["arrive"].append(max(host, device))
    end2 = max(p["arrive"][1] for p in programs.values()) + ALLREDUCE_NS
    ends = [end1, end2]
    for rank, p in programs.items():
        folder = root / f"rank{rank}_ascend_pt"
        out = folder / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        (folder / f"profiler_info_{rank}.json").write_text(json.dumps({"rank_id": rank}))
        if export == "text":
            (out / "trace_view.json").write_text(json.dumps(_trace_events(p, ends)))
            (out / "communication.json").write_text(json.dumps(_communication(p, ends, programs)))
            (out / "step_trace_time.csv").write_text(_step_trace_csv(p, ends))
            continue
        _profiler_db(out / f"ascend_pytorch_profiler_{rank}.db", p, ends)
        _analysis_db(out / "analysis.db", rank, p, ends, programs)
    return root


def _profiler_db(path: Path, program: dict, ends: list[int]) -> None:
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE ENUM_API_TYPE (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER,
                           globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER,
                           streamId INTEGER, taskId INTEGER, modelId INTEGER);
        CREATE TABLE CANN_API (startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER,
                               connectionId INTEGER PRIMARY KEY, name INTEGER);
        CREATE TABLE PYTORCH_API (startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER, name INTEGER,
                                  sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER,
                                  inputShapes INTEGER, callchainId INTEGER, type INTEGER);
        CREATE TABLE CONNECTION_IDS (id INTEGER, connectionId INTEGER);
        CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER,
                                        mixBlockDim INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER,
                                        inputDataTypes INTEGER, inputShapes INTEGER, outputFormats INTEGER,
                                        outputDataTypes INTEGER, outputShapes INTEGER, attrInfo INTEGER);
        CREATE TABLE COMMUNICATION_TASK_INFO (name INTEGER, globalTaskId INTEGER, taskType INTEGER, planeId INTEGER,
                                              groupName INTEGER, notifyId INTEGER, rdmaType INTEGER,
                                              srcRank INTEGER, dstRank INTEGER, transportType INTEGER, size INTEGER,
                                              dataType INTEGER, linkType INTEGER, opId INTEGER);
        CREATE TABLE COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER,
                                       groupName INTEGER, opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER,
                                       dataType INTEGER, algType INTEGER, count NUMERIC, opType INTEGER);
    """)
    db.executemany("INSERT INTO ENUM_API_TYPE VALUES (?, ?)", [(10000, "node"), (20000, "acl")])
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        if text not in strings:
            strings[text] = len(strings) + 1
            db.execute("INSERT INTO STRING_IDS VALUES (?, ?)", (strings[text], text))
        return strings[text]

    conn = 0
    for phase in ("a", "b"):
        for name, p, a, k in program[phase]:
            conn += 1
            db.execute("INSERT INTO PYTORCH_API (startNs, endNs, connectionId, name) VALUES (?, ?, ?, ?)",
                       (str(p[0]), str(p[1]), conn, sid(f"aten::op_{name}")))
            db.execute("INSERT INTO CONNECTION_IDS VALUES (?, ?)", (conn, 10_000 + conn))
            db.execute("INSERT INTO CANN_API VALUES (?, ?, 10000, 1, ?, ?)", (a[0], a[1], 10_000 + conn, sid("launch")))
            db.execute("INSERT INTO TASK (startNs, endNs, connectionId, globalTaskId, taskType) VALUES (?, ?, ?, ?, ?)",
                       (k[0], k[1], 10_000 + conn, conn, sid("AI_CORE")))
            db.execute("INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId) VALUES (?, ?)", (sid(f"Kernel_{name}"), conn))
    for i, (name, arrive, end) in enumerate(zip(OPS, program["arrive"], ends)):
        db.execute("INSERT INTO COMMUNICATION_OP (opName, startNs, endNs, groupName, opId) VALUES (?, ?, ?, ?, ?)",
                   (sid(name), arrive, end, sid(GROUP), i))
    db.commit()
    db.close()


def _step_split(program: dict, ends: list[int]) -> tuple[float, float, float, float]:
    """(computing, communication, free, stage) in µs: kernels' busy time, the collectives, the rest idle."""
    computing = sum(k[1] - k[0] for phase in ("a", "b") for _n, _p, _a, k in program[phase]) / 1000
    communication = sum(end - arrive for arrive, end in zip(program["arrive"], ends)) / 1000
    stage = (ends[-1] - T0) / 1000
    return computing, communication, stage - computing - communication, stage


def _step_trace_csv(program: dict, ends: list[int]) -> str:
    """step_trace_time.csv of the text export (the same figures as the db's StepTraceTime)."""
    computing, communication, free, stage = _step_split(program, ends)
    return ("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
            "Communication(Not Overlapped and Exclude Receive),Preparing\n"
            f"1,{computing},{communication},0,{communication},{free},{stage},0,{communication},0\n")


def _us(ns: int) -> str:
    """A time in µs as the text export writes it (a string, to the ns)."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def _trace_events(program: dict, ends: list[int]) -> list[dict]:
    """The program as trace_view.json events (the same rows as the db export's tables)."""
    python, cann, device, hccl = 1, 2, 3, 4
    events = [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}}
              for pid, name in ((python, "Python"), (cann, "CANN"), (device, "Ascend Hardware"), (hccl, "HCCL"))]
    events.append({"ph": "M", "name": "thread_name", "pid": hccl, "tid": 0,
                   "args": {"name": f"Group {GROUP} Communication"}})
    conn = 0
    for phase in ("a", "b"):
        for name, p, a, k in program[phase]:
            conn += 1
            events += [
                {"ph": "X", "name": f"aten::op_{name}", "pid": python, "tid": 10, "ts": _us(p[0]),
                 "dur": (p[1] - p[0]) / 1000, "cat": "cpu_op"},
                {"ph": "s", "cat": "async_npu", "name": "async_npu", "id": conn, "pid": python, "tid": 10,
                 "ts": _us(p[0])},
                {"ph": "X", "name": "Node@launch", "pid": cann, "tid": 10, "ts": _us(a[0]), "dur": (a[1] - a[0]) / 1000,
                 "args": {"connection_id": 10_000 + conn}},
                {"ph": "X", "name": f"Kernel_{name}", "pid": device, "tid": 2, "ts": _us(k[0]),
                 "dur": (k[1] - k[0]) / 1000, "args": {"Task Type": "AI_CORE", "connection_id": 10_000 + conn}},
                {"ph": "f", "bp": "e", "cat": "async_npu", "name": "async_npu", "id": conn, "pid": device, "tid": 2,
                 "ts": _us(k[0])}]
    for name, arrive, end in zip(OPS, program["arrive"], ends):
        events.append({"ph": "X", "name": name, "pid": hccl, "tid": 0, "ts": _us(arrive), "dur": (end - arrive) / 1000})
    return events


def _op_times(i: int, program: dict, end: int, programs: dict) -> tuple[float, ...]:
    """(start µs, elapse, transit, wait, synchronisation, idle ms) of op ``i`` on the rank of ``program``."""
    arrive = program["arrive"][i]
    sync = (max(p["arrive"][i] for p in programs.values()) - arrive) / 1e6
    transit = (ALLREDUCE_NS * 0.8) / 1e6
    elapse = (end - arrive) / 1e6
    return arrive / 1000, elapse, transit, sync, sync, elapse - transit - sync


def _communication(program: dict, ends: list[int], programs: dict) -> dict:
    """communication.json: each op's Communication Time Info, as the text export writes it."""
    keys = ("Start Timestamp(us)", "Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)",
            "Synchronization Time(ms)", "Idle Time(ms)")
    ops = {f"{name}@{GROUP}": {"Communication Time Info": dict(zip(keys, _op_times(i, program, end, programs)))}
           for i, (name, end) in enumerate(zip(OPS, ends))}
    return {"step1": {"collective": ops}}


def _analysis_db(path: Path, rank: int, program: dict, ends: list[int], programs: dict) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE CommAnalyzerTime (hccl_op_name TEXT, group_name TEXT, start_timestamp NUMERIC, "
               "elapse_time NUMERIC, transit_time NUMERIC, wait_time NUMERIC, synchronization_time NUMERIC, "
               "idle_time NUMERIC, step TEXT, type TEXT)")
    for i, (name, end) in enumerate(zip(OPS, ends)):
        db.execute("INSERT INTO CommAnalyzerTime VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'step1', 'collective')",
                   (name, GROUP, *_op_times(i, program, end, programs)))
    computing, communication, free, stage = _step_split(program, ends)
    db.execute("CREATE TABLE StepTraceTime (step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, "
               "overlapped NUMERIC, communication NUMERIC, free NUMERIC, stage NUMERIC, bubble NUMERIC, "
               "communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC)")
    db.execute("CREATE TABLE CommAnalyzerMatrix (hccl_op_name TEXT, group_name TEXT, src_rank TEXT, dst_rank TEXT, "
               "transport_type TEXT, transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, step TEXT, "
               "type TEXT, op_name TEXT)")  # no links recorded: the matrix is empty, the tables are there
    db.execute("CREATE TABLE CommAnalyzerBandwidth (hccl_op_name TEXT, group_name TEXT, transport_type TEXT, "
               "transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, large_packet_ratio NUMERIC, "
               "package_size NUMERIC, count NUMERIC, total_duration NUMERIC, step TEXT, type TEXT)")
    db.execute("INSERT INTO StepTraceTime VALUES ('1', ?, ?, 0, ?, ?, ?, 0, ?, 0)",
               (computing, communication, communication, free, stage, communication))
    db.commit()
    db.close()


def check_causes(bottlenecks: list[dict]) -> None:
    """Assert what the construction makes of the two all-reduces: rank 1 host-bound in the first
    (its launches came HOST_STALL_NS late), rank 2 device-bound in the second (its kernels ran
    SLOW_KERNEL_NS instead of KERNEL_NS and queued on the device)."""
    by_op = {b["op"]: b for b in bottlenecks}
    host, device = by_op[OPS[0]], by_op[OPS[1]]
    assert (host["slow_rank"], host["verdict"]) == (1, "host-bound")
    assert (device["slow_rank"], device["verdict"]) == (2, "device-bound")
    pytorch = next(e for e in host["evidence"] if e["level"] == "PyTorch")
    assert pytorch["max_start_diff"]["diff_start_ns"] == HOST_STALL_NS
    kernels = next(e for e in device["evidence"] if e["level"] == "Device")
    assert kernels["max_duration_diff"]["diff_duration_ns"] == SLOW_KERNEL_NS - KERNEL_NS
    assert device["launches"]["device_waited"] == device["launches"]["kernels"] > 0
    assert host["launches"]["device_waited"] == 0 < host["launches"]["kernels"]
