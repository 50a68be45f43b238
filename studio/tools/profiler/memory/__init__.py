"""Device memory of a profile: each device's peak and the operator blocks alive at that moment.

``open_memory(folder)`` reads the PyTorch-NPU memory files of every ``ASCEND_PROFILER_OUTPUT``
under ``folder`` — text (``memory_record.csv``, ``operator_memory.csv``, ``npu_module_mem.csv``)
or db (``MEMORY_RECORD``, ``OP_MEMORY``, ``NPU_MEM``, ``NPU_MODULE_MEM`` of
``ascend_pytorch_profiler_<rank>.db``, preferred when both exist) — and ``static_op_mem.csv``
of static graphs. One module per job: :mod:`.records` (the shared record types), :mod:`.text`,
:mod:`.db`, :mod:`.static` (readers), :mod:`.peak` (the peak and what is alive at it),
:mod:`.series` (the allocator curve, thinned for drawing), :mod:`.engine` (discovery and the report).
"""

from studio.tools.profiler.memory.engine import Interval, MemoryReport, open_memory

__all__ = ["Interval", "MemoryReport", "open_memory"]
