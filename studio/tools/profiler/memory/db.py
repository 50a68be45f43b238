"""The db export's memory tables (``ascend_pytorch_profiler_<rank>.db``): bytes and nanoseconds."""

from __future__ import annotations

from pathlib import Path

from studio.tools.profiler.db_reader import open_readonly
from studio.tools.profiler.memory.records import CANN_PREFIX, GE, PTA, Block, DeviceMemory, Sample
from studio.tools.profiler.rank_files import db_tables, query, require_tables

MB = 1024 * 1024


def read_db(path: Path) -> dict[str, DeviceMemory]:
    """Devices of one profiler database.

    MEMORY_RECORD is required; OP_MEMORY, NPU_MEM and NPU_MODULE_MEM are read when there.
    """
    devices: dict[str, DeviceMemory] = {}
    with open_readonly(path) as db:
        require_tables(db, path, ["MEMORY_RECORD", "STRING_IDS"], "the memory view")
        tables = db_tables(db)
        strings = dict(query(db, path, "SELECT id, value FROM STRING_IDS"))
        for component, ts, allocated, reserved, device_id in query(
                db, path, "SELECT component, timestamp, totalAllocated, totalReserved, deviceId FROM MEMORY_RECORD"):
            device = _device(devices, device_id)
            device.samples.append(Sample(str(strings.get(component, component)), ts / 1000,
                                         None if allocated is None else allocated / MB,
                                         None if reserved is None else reserved / MB))
        if "OP_MEMORY" in tables:
            ge_ops = {str(strings.get(n, n)) for (n,) in query(
                db, path, "SELECT DISTINCT operatorName FROM NPU_OP_MEM")} if "NPU_OP_MEM" in tables else set()
            for name, size, alloc, release, stream, device_id in query(
                    db, path, "SELECT name, size, allocationTime, releaseTime, streamPtr, deviceId FROM OP_MEMORY"):
                name = str(strings.get(name, name))
                _device(devices, device_id).blocks.append(Block(
                    name, (size or 0) / MB, alloc / 1000, None if release in (None, "") else release / 1000,
                    "" if stream in (None, "") else str(stream),
                    GE if name in ge_ops or name.startswith(CANN_PREFIX) else PTA))
        if "NPU_MEM" in tables:  # the process's ("app", as the text export's APP rows) and the whole device's
            for kind, hbm, ts, device_id in query(db, path, "SELECT type, hbm, timestampNs, deviceId FROM NPU_MEM"):
                if hbm is None:
                    continue
                kind = strings.get(kind)
                if kind in ("app", "device"):
                    series = _device(devices, device_id)
                    (series.app_reserved_mb if kind == "app" else series.device_mb).append(
                        (ts / 1000, float(hbm) / MB))
        if "NPU_MODULE_MEM" in tables:
            names = dict(query(db, path, "SELECT id, name FROM ENUM_MODULE")) if "ENUM_MODULE" in tables else {}
            for module, reserved, device_id in query(
                    db, path, "SELECT moduleId, totalReserved, deviceId FROM NPU_MODULE_MEM"):
                device = _device(devices, device_id)
                key = str(names.get(module, module))
                device.modules[key] = max(device.modules.get(key, 0.0), (reserved or 0) / MB)
    for device in devices.values():
        device.files.append(str(path))
    return devices


def _device(devices: dict[str, DeviceMemory], device_id) -> DeviceMemory:
    name = f"NPU:{device_id}"
    return devices.setdefault(name, DeviceMemory(name))
