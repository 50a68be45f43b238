"""A real PyTorch-NPU db export grown to a given size, for tests that need a bigger file (the
benchmark's generator, benchmarks/db_set_gen.py: the real step repeated, joins kept)."""

from __future__ import annotations

import sys
from pathlib import Path

PT_DB = "cluster_pytorch/msinsight_db_2rank_level2/level2/rank{r}_ascend_pt/ASCEND_PROFILER_OUTPUT/" \
        "ascend_pytorch_profiler_{r}.db"


def grown_db(real_profiles: Path, target: Path, size: int, rank: int = 0) -> int:
    """Write rank ``rank``'s real export grown to ``size`` bytes at ``target``; the steps added."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        from db_set_gen import grow
    finally:
        sys.path.pop(0)
    return grow(real_profiles / PT_DB.format(r=rank), target, size)
