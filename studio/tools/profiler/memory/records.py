"""The memory records every reader produces, in MB and microseconds whatever the file's units."""

from __future__ import annotations

from dataclasses import dataclass, field

# The allocator whose totals are the device's: PTA+GE when PyTorch and GE both allocate, else either.
COMPONENTS = ("PTA+GE", "PTA", "GE")
# The blocks' own components: GE's blocks are the ones torch_npu names "cann::<op>" in the text
# export (msprof-analyze's rule) and the ones GE lists in NPU_OP_MEM in the db export.
PTA, GE, CANN_PREFIX = "PTA", "GE", "cann::"


@dataclass
class Sample:
    """One row of memory_record: an allocator's totals at a time."""

    component: str
    ts_us: float
    allocated_mb: float | None
    reserved_mb: float | None


@dataclass
class Block:
    """One row of operator_memory: a block an operator allocated, and when it was released."""

    name: str
    size_mb: float
    alloc_ts_us: float
    release_ts_us: float | None      # None: not released within the profile
    stream: str = ""                 # the stream the allocator served ("" for GE's own blocks)
    component: str = ""              # PTA (PyTorch's caching allocator) or GE (CANN's graph engine)


@dataclass
class DeviceMemory:
    """Everything read for one device."""

    device: str
    samples: list[Sample] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    app_reserved_mb: list[tuple[float, float]] = field(default_factory=list)   # (ts_us, MB) of the process
    device_mb: list[tuple[float, float]] = field(default_factory=list)         # (ts_us, MB) of the whole device
    modules: dict[str, float] = field(default_factory=dict)                    # component -> peak reserved MB
    files: list[str] = field(default_factory=list)
