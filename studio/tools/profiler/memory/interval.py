"""What happened to a device's memory in a time interval: the operator blocks allocated or freed in it.

The blocks are operator_memory.csv / OP_MEMORY rows (:class:`~.records.Block`). A block **allocated
in** ``[t0, t1]`` has its allocation time inside (both ends included); **freed in** it, its release
time. One block can be both. Sizes are each block's own size; ``net_mb`` is allocated minus freed
— what the operators' blocks added to the allocator over the interval (the allocator's total also
moves with memory no operator owns, so it need not match the curve's rise exactly).

The blocks travel as columns (:func:`block_columns`), so the window keeps them beside the curve and
answers a new selection with one numpy pass (:func:`interval_ops`), the same code the CLI runs.
"""

from __future__ import annotations

import numpy as np

from studio.tools.profiler.memory.records import Block

GROUPS = ("op", "stream", "component")
KB_PER_MB = 1024.0


def block_columns(blocks: list[Block]) -> dict[str, list]:
    """The blocks as JSON-able columns (a release time of None stays None: not released in the profile)."""
    return {"name": [b.name for b in blocks], "size_mb": [b.size_mb for b in blocks],
            "alloc_ts_us": [b.alloc_ts_us for b in blocks], "release_ts_us": [b.release_ts_us for b in blocks],
            "stream": [b.stream for b in blocks], "component": [b.component for b in blocks]}


def interval_ops(columns: dict[str, list], t0_us: float, t1_us: float, min_kb: float = 0.0,
                 group: str | None = None) -> dict:
    """The blocks allocated or freed in ``[t0_us, t1_us]`` of at least ``min_kb`` KB.

    Returns ``{allocations, frees, allocated_mb, freed_mb, net_mb, ops, groups}``: ``ops`` one row per
    block (largest first: name, size_mb, stream, component, alloc_ts_us, release_ts_us, allocated_in,
    freed_in), ``groups`` the same added up per ``group`` (``op``, ``stream`` or ``component``; empty
    without one), most memory moved first.
    """
    if group is not None and group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}, not {group!r}")
    size = np.asarray(columns.get("size_mb", []), dtype=np.float64)
    alloc = np.asarray(columns.get("alloc_ts_us", []), dtype=np.float64)
    release = np.array([np.nan if r is None else r for r in columns.get("release_ts_us", [])], dtype=np.float64)
    allocated_in = (alloc >= t0_us) & (alloc <= t1_us)
    freed_in = (release >= t0_us) & (release <= t1_us)    # NaN (never released) compares False
    chosen = (allocated_in | freed_in) & (size * KB_PER_MB >= min_kb)
    index = np.flatnonzero(chosen)
    index = index[np.lexsort((alloc[index], -size[index]))]   # largest first, then earliest
    ops = [{"name": columns["name"][i], "size_mb": float(size[i]), "stream": columns["stream"][i],
            "component": columns["component"][i], "alloc_ts_us": float(alloc[i]),
            "release_ts_us": columns["release_ts_us"][i], "allocated_in": bool(allocated_in[i]),
            "freed_in": bool(freed_in[i])} for i in index]
    allocated_mb = float(size[chosen & allocated_in].sum())
    freed_mb = float(size[chosen & freed_in].sum())
    return {"allocations": int((chosen & allocated_in).sum()), "frees": int((chosen & freed_in).sum()),
            "allocated_mb": allocated_mb, "freed_mb": freed_mb, "net_mb": allocated_mb - freed_mb,
            "ops": ops, "groups": group_ops(ops, group) if group else []}


def group_ops(ops: list[dict], group: str) -> list[dict]:
    """``ops`` added up per ``group`` key: blocks, allocations, frees, MB allocated, freed and net."""
    out: dict[str, dict] = {}
    for op in ops:
        key = op["name"] if group == "op" else op[group]
        row = out.setdefault(key, {"key": key, "blocks": 0, "allocations": 0, "frees": 0, "allocated_mb": 0.0,
                                   "freed_mb": 0.0})
        row["blocks"] += 1
        if op["allocated_in"]:
            row["allocations"] += 1
            row["allocated_mb"] += op["size_mb"]
        if op["freed_in"]:
            row["frees"] += 1
            row["freed_mb"] += op["size_mb"]
    for row in out.values():
        row["net_mb"] = row["allocated_mb"] - row["freed_mb"]
    return sorted(out.values(), key=lambda r: (-(r["allocated_mb"] + r["freed_mb"]), str(r["key"])))
