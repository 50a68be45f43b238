"""When a big trace is finished (ordered, nested, its levels of detail built) by compiled kernels.

:mod:`.finish_kernels` does in one or two passes what numpy does with sorts and temporaries, with
the same result. Loading numba costs 0.5-1 s once per process, so the kernels are used for
``KERNEL_MIN_SLICES`` slices or more, or from ``LOADED_MIN_SLICES`` once numba is loaded anyway
(the scanner of a big JSON trace loads it). ``STUDIO_TRACE_NO_SCAN=1`` turns them off with the
scanner: numpy only.
"""

from __future__ import annotations

import sys
from types import ModuleType

from studio.core.compiled import CompiledKernels

KERNEL_MIN_SLICES = 2_000_000  # numpy needs ~1 s here: worth loading numba for
LOADED_MIN_SLICES = 50_000  # numba loaded already: a kernel call costs microseconds
compiled = CompiledKernels("studio.tools.profiler.finish_kernels", "STUDIO_TRACE_NO_SCAN", "finishing big traces")


def kernels_for(slices: int) -> ModuleType | None:
    """The kernels, when worth using for ``slices`` slices; else None (numpy does it)."""
    if slices >= KERNEL_MIN_SLICES or (slices >= LOADED_MIN_SLICES and "numba" in sys.modules):
        return compiled()
    return None
