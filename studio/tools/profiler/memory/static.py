"""``static_op_mem.csv``: GE's static-graph memory plan, one row per op block, lifetimes in node indices.

A block is alive from ``Node Index Start`` to ``Node Index End`` inclusive (4294967295: to the end
of the graph). The peak of a graph is the node index where the alive blocks add up most; the
``TOTAL`` row is the graph's whole static pool, reported as its reserved memory.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.rank_files import EXPORT_AGAIN, cell_float, read_csv

FILE = "static_op_mem.csv"
FOREVER = 4294967295
TOP = 10


def read_static(path: Path) -> list[dict]:
    """One device entry per (device, model, graph), in the shape of the memory report's devices."""
    graphs: dict[tuple, list[tuple[str, int, int, float]]] = defaultdict(list)
    totals: dict[tuple, float] = {}
    for row in read_csv(path, ["Device_id", "Op Name", "Model Name", "Graph ID", "Node Index Start",
                               "Node Index End", "Size(KB)"]):
        key = (row["Device_id"], row["Model Name"], row["Graph ID"])
        size = cell_float(row, "Size(KB)", path)
        start, end = cell_float(row, "Node Index Start", path), cell_float(row, "Node Index End", path)
        if size is None or start is None or end is None:
            raise UserError(f"{path.name}: an empty size or node index", f"{path}, line {row['__line__']}",
                            EXPORT_AGAIN)
        if row["Op Name"] == "TOTAL":
            totals[key] = size / 1024
            continue
        graphs[key].append((row["Op Name"], int(start), int(end), size / 1024))
    out = []
    for key, blocks in sorted(graphs.items()):
        last = max([s for _, s, _, _ in blocks] + [e for _, _, e, _ in blocks if e != FOREVER])
        best, best_index = -1.0, 0
        for index in range(0, last + 1):
            alive = sum(size for _, s, e, size in blocks if s <= index <= e)
            if alive > best:
                best, best_index = alive, index
        at_peak = sorted((b for b in blocks if b[1] <= best_index <= b[2]), key=lambda b: -b[3])[:TOP]
        out.append({"device": key[0], "model": key[1], "graph": key[2], "peak_allocated_mb": best,
                    "peak_reserved_mb": totals.get(key), "peak_ts_us": None, "peak_node_index": best_index,
                    "top_ops_at_peak": [{"name": n, "size_mb": size, "alloc_ts_us": None, "release_ts_us": None,
                                         "alloc_node": s, "release_node": None if e == FOREVER else e}
                                        for n, s, e, size in at_peak],
                    "files": [str(path)]})
    return out
