"""The device's own memory figures of a text export: ``npu_mem.csv`` (msprof's ``npu_mem_*.csv``).

The db export keeps them in ``NPU_MEM``; a text export writes the same rows as a CSV, in KB:
``[Device_id,]event,ddr(KB),hbm(KB),memory(KB),timestamp(us)``. ``event`` is ``app`` (this
process on the device) or ``device`` (the whole device: every process and the driver). The device
total is ``hbm``, as the db reader takes it. The file is looked for in ASCEND_PROFILER_OUTPUT, then
in msprof's ``mindstudio_profiler_output`` of the ``PROF_*`` folder torch_npu leaves beside it.
"""

from __future__ import annotations

from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.memory.records import DeviceMemory
from studio.tools.profiler.rank_files import EXPORT_AGAIN, cell_float, read_csv

NPU_MEM = "npu_mem.csv"
KB = 1024


def npu_mem_file(output: Path) -> Path | None:
    """The rank's npu_mem CSV: ``npu_mem.csv`` in ``output``, else msprof's ``npu_mem_*.csv`` beside it."""
    here = output / NPU_MEM
    if here.is_file():
        return here
    found = sorted(output.parent.glob("PROF_*/mindstudio_profiler_output/npu_mem_*.csv"))
    return found[0] if found else None


def read_npu_mem(path: Path, devices: dict[str, DeviceMemory]) -> None:
    """Add the file's ``device`` rows to each device's total (and its ``app`` rows to the process's
    reservation where memory_record.csv gave none). Rows without a Device_id go to the folder's one
    device; a UserError when the folder has several and the file does not say which."""
    rows = read_csv(path, ["event", "hbm(KB)", "timestamp(us)"])
    had_app = {name for name, device in devices.items() if device.app_reserved_mb}
    for row in rows:
        event = row["event"].lower()
        if event not in ("app", "device"):
            continue
        hbm, ts = cell_float(row, "hbm(KB)", path), cell_float(row, "timestamp(us)", path)
        if hbm is None or ts is None:
            continue
        name = _device_name(row, devices, path)
        device = devices.setdefault(name, DeviceMemory(name))
        if event == "device":
            device.device_mb.append((ts, hbm / KB))
        elif name not in had_app:
            device.app_reserved_mb.append((ts, hbm / KB))
    for device in devices.values():
        if device.device_mb:
            device.files.append(str(path))


def _device_name(row: dict, devices: dict[str, DeviceMemory], path: Path) -> str:
    if row.get("Device_id", "") != "":
        return f"NPU:{int(float(row['Device_id']))}"
    if len(devices) <= 1:
        return next(iter(devices), "NPU")
    raise UserError(f"{path.name} has no Device_id column and this folder holds {len(devices)} devices",
                    f"{path}, line {row['__line__']}", EXPORT_AGAIN)
