"""A 16-rank set of PyTorch-NPU database exports, grown from the real 2-rank db export's schema.

Each synthetic rank starts as a byte copy of a real rank (rank 0 or 1 of fixtures/ascend/real/
cluster_pytorch/msinsight_db_2rank_level2), whose recorded step is then repeated, one after the
other, until the file reaches its share of the set's size: every table that grows with the run
(TASK, COMPUTE_TASK_INFO, COMMUNICATION_TASK_INFO, COMMUNICATION_OP, CANN_API, PYTORCH_API,
CONNECTION_IDS, TASK_PMU_INFO) gets the step's rows again with times moved by the step's span and
ids moved past the last copy's, so joins (task -> op name, task -> CANN launch -> PyTorch op) hold
as in the real file. SESSION_TIME_INFO is widened to the whole run. The two grown files are made
once in SQLite (no Python row objects) and copied to the 16 rank folders with each rank's
``analysis.db`` and ``profiler_info_<rank>.json``.

    python benchmarks/db_set_gen.py OUT --gb 1.5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

REAL = "ascend/real/cluster_pytorch/msinsight_db_2rank_level2/level2"
RANKS = 16
NO_ID = 4294967295

# table -> (time columns, {id column: id family}) ; families: task, conn (CANN/TASK), pyconn, op
GROWS = {
    "TASK": (("startNs", "endNs"), {"globalTaskId": "task", "connectionId": "conn"}),
    "COMPUTE_TASK_INFO": ((), {"globalTaskId": "task"}),
    "COMMUNICATION_TASK_INFO": ((), {"globalTaskId": "task", "opId": "op"}),
    "COMMUNICATION_OP": (("startNs", "endNs"), {"opId": "op", "connectionId": "conn"}),
    "CANN_API": (("startNs", "endNs"), {"connectionId": "conn"}),
    "PYTORCH_API": (("startNs", "endNs"), {"connectionId": "pyconn"}),
    "CONNECTION_IDS": ((), {"id": "pyconn", "connectionId": "conn"}),
    "TASK_PMU_INFO": ((), {"globalTaskId": "task"}),
}
FAMILIES = {"task": [("TASK", "globalTaskId"), ("COMPUTE_TASK_INFO", "globalTaskId")],
            "conn": [("TASK", "connectionId"), ("CANN_API", "connectionId")],
            "pyconn": [("CONNECTION_IDS", "id"), ("PYTORCH_API", "connectionId")],
            "op": [("COMMUNICATION_OP", "opId")]}


def fixtures() -> Path:
    shared = Path(os.environ.get("STUDIO_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    return shared / "fixtures" / REAL


def grow(source: Path, target: Path, size: int) -> int:
    """Copy ``source`` to ``target`` and repeat its step until the file is ``size`` bytes; the copies made."""
    shutil.copyfile(source, target)
    db = sqlite3.connect(target, isolation_level=None)
    db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-131072;")
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    grows = {t: spec for t, spec in GROWS.items() if t in tables}
    lo = min(db.execute(f"SELECT min(CAST(startNs AS INTEGER)) FROM {t}").fetchone()[0]
             for t in grows if grows[t][0])
    hi = max(db.execute(f"SELECT max(CAST(endNs AS INTEGER)) FROM {t}").fetchone()[0] for t in grows if grows[t][0])
    span = hi - lo + 1_000_000  # a millisecond between steps
    steps = {family: 1 + max(db.execute(f"SELECT coalesce(max({c}), 0) FROM {t} WHERE {c} <> {NO_ID}").fetchone()[0]
                             for t, c in cols if t in tables)
             for family, cols in FAMILIES.items()}
    for table in grows:
        db.execute(f"CREATE TEMP TABLE base_{table} AS SELECT * FROM main.{table}")
    copies = 0
    page = db.execute("PRAGMA page_size").fetchone()[0]
    while db.execute("PRAGMA page_count").fetchone()[0] * page < size:
        db.execute("BEGIN")
        for _ in range(8):
            copies += 1
            for table, (times, ids) in grows.items():
                columns = [r[1] for r in db.execute(f"PRAGMA main.table_info({table})")]
                select = []
                for column in columns:
                    if column in times:
                        text = db.execute(f"SELECT typeof({column}) FROM base_{table} LIMIT 1").fetchone()
                        moved = f"CAST({column} AS INTEGER) + {copies * span}"
                        select.append(f"CAST({moved} AS TEXT)" if text and text[0] == "text" else moved)
                    elif column in ids:
                        step = steps[ids[column]] * copies
                        select.append(f"CASE WHEN {column} = {NO_ID} OR {column} IS NULL THEN {column} "
                                      f"ELSE {column} + {step} END")
                    else:
                        select.append(column)
                db.execute(f"INSERT INTO main.{table} SELECT {', '.join(select)} FROM base_{table}")
        db.execute("COMMIT")
    if "SESSION_TIME_INFO" in tables:
        db.execute("UPDATE SESSION_TIME_INFO SET endTimeNs = max(endTimeNs, ?)", (hi + copies * span,))
    db.close()
    return copies


def synthesize(out: Path, total: int, ranks: int = RANKS) -> dict:
    """The set in ``out``: ``ranks`` rank folders of about ``total`` bytes together."""
    real = fixtures()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    bases, copies = {}, {}
    for base in (0, 1):
        source = real / f"rank{base}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / f"ascend_pytorch_profiler_{base}.db"
        bases[base] = out / f".base{base}.db"
        copies[base] = grow(source, bases[base], total // ranks)
    grown = time.perf_counter() - started
    for rank in range(ranks):
        base = rank % 2
        folder = out / f"rank{rank}_ascend_pt"
        output = folder / "ASCEND_PROFILER_OUTPUT"
        output.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(bases[base], output / f"ascend_pytorch_profiler_{rank}.db")
        shutil.copyfile(real / f"rank{base}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "analysis.db",
                        output / "analysis.db")
        info = json.loads((real / f"rank{base}_ascend_pt" / f"profiler_info_{base}.json").read_text())
        info["rank_id"] = rank
        (folder / f"profiler_info_{rank}.json").write_text(json.dumps(info))
    for path in bases.values():
        path.unlink()
    size = sum(p.stat().st_size for p in out.rglob("*.db"))
    return {"bytes": size, "steps_per_rank": copies, "grow_s": grown, "total_s": time.perf_counter() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--gb", type=float, default=1.5, help="size of the whole set (default 1.5 GB)")
    args = parser.parse_args()
    print(json.dumps(synthesize(args.out, int(args.gb * 1e9))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
