"""The text export's memory CSVs (torch_npu, profile_memory=True)."""

from __future__ import annotations

from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.memory.npu_mem import npu_mem_file, read_npu_mem
from studio.tools.profiler.memory.records import CANN_PREFIX, GE, PTA, Block, DeviceMemory, Sample
from studio.tools.profiler.rank_files import EXPORT_AGAIN, cell_float, read_csv

RECORD, OPERATOR, MODULE = "memory_record.csv", "operator_memory.csv", "npu_module_mem.csv"


def read_text(output: Path) -> dict[str, DeviceMemory]:
    """Devices of one ASCEND_PROFILER_OUTPUT from its memory CSVs (memory_record.csv or npu_module_mem.csv,
    and npu_mem.csv for the device's own total)."""
    path = output / RECORD
    if not path.is_file() and not (output / MODULE).is_file() and npu_mem_file(output) is None:
        raise UserError(f"{output.name} has no {RECORD}", output,
                        "Profile with profile_memory=True so torch_npu writes the memory files.")
    devices: dict[str, DeviceMemory] = {}
    records = read_csv(path, ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)",
                              "Device Type"]) if path.is_file() else []
    for row in records:
        device = _device(devices, row["Device Type"], path)
        ts = _required(row, "Timestamp(us)", path)
        if row["Component"] == "APP":  # the whole process on the device: reserved only
            reserved = cell_float(row, "Total Reserved(MB)", path)
            if reserved is not None:
                device.app_reserved_mb.append((ts, reserved))
            continue
        device.samples.append(Sample(row["Component"], ts, cell_float(row, "Total Allocated(MB)", path),
                                     cell_float(row, "Total Reserved(MB)", path)))
    for device in devices.values() if path.is_file() else []:
        device.files.append(str(path))
    path = output / OPERATOR
    if path.is_file():
        for row in read_csv(path, ["Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Device Type"]):
            device = _device(devices, row["Device Type"], path)
            device.blocks.append(Block(row["Name"], _required(row, "Size(KB)", path) / 1024,
                                       _required(row, "Allocation Time(us)", path),
                                       cell_float(row, "Release Time(us)", path),
                                       (row.get("Stream Ptr") or "").strip(),
                                       GE if row["Name"].startswith(CANN_PREFIX) else PTA))
        for device in devices.values():
            device.files.append(str(path))
    path = output / MODULE
    if path.is_file():
        for row in read_csv(path, ["Component", "Timestamp(us)", "Total Reserved(MB)", "Device"]):
            device = _device(devices, row["Device"], path)
            reserved = cell_float(row, "Total Reserved(MB)", path) or 0.0
            device.modules[row["Component"]] = max(device.modules.get(row["Component"], 0.0), reserved)
        for device in devices.values():
            device.files.append(str(path))
    path = npu_mem_file(output)
    if path is not None:
        read_npu_mem(path, devices)
    return devices


def _device(devices: dict[str, DeviceMemory], name: str, path: Path) -> DeviceMemory:
    return devices.setdefault(name or "NPU", DeviceMemory(name or "NPU"))


def _required(row: dict, column: str, path: Path) -> float:
    value = cell_float(row, column, path)
    if value is None:
        raise UserError(f"{path.name}: {column} is empty", f"{path}, line {row['__line__']}", EXPORT_AGAIN)
    return value
