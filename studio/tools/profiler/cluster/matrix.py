"""The communication matrix between global ranks, summed per step and communication group.

Each rank records its links per aggregated op (``allreduce-top1``, ``-middle``, ``-bottomN``,
``-total`` ``@<group hash>``) with the group's *local* rank numbers, in ``communication_matrix.json``
or ``analysis.db`` (``CommAnalyzerMatrix``). As msprof-analyze does, only the ``-total`` aggregates
are added (top/middle/bottom are samples of the same traffic), local ranks become global ranks
through the group's ``global_ranks`` in ``profiler_metadata.json`` or, failing that, through the
rank's own ``k-k`` self link, and bandwidth is size / time (MB/ms = GB/s). Links to ranks that
were not profiled cannot be placed and are counted, not shown.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.cluster.discover import RankDir
from studio.tools.profiler.db_reader import open_readonly
from studio.tools.profiler.rank_files import EXPORT_AGAIN, json_number, json_object, query, read_json, require_tables

_SAMPLES = ("top", "middle", "bottom")


@dataclass
class Link:
    """One raw link record of one rank, in the group's local rank numbers."""

    step: str
    group: str
    op: str
    src: str
    dst: str
    transport: str
    size_mb: float
    time_ms: float
    op_name: str = ""      # the op instance a top/middle/bottom sample is (empty for a total)


def counted(op: str) -> bool:
    """True for the records msprof-analyze adds: ``-total`` aggregates, or ops without samples."""
    name = op.split("@")[0]
    if name == "Total Op Info":
        return False
    if name.endswith("-total"):
        return True
    return not any(s in name for s in _SAMPLES)


def read_links(rank: RankDir, use_db: bool) -> list[Link]:
    """The rank's matrix records from analysis.db (``use_db``) or communication_matrix.json."""
    if use_db:
        return _from_db(rank.files["analysis_db"])
    path = rank.files.get("matrix_json")
    return _from_json(path) if path is not None else []


def _from_db(path: Path) -> list[Link]:
    with open_readonly(path) as db:
        require_tables(db, path, ["CommAnalyzerMatrix"], "the communication matrix")
        columns = {r[1] for r in db.execute("PRAGMA table_info(CommAnalyzerMatrix)")}
        op_name = "op_name" if "op_name" in columns else "''"  # older exports do not name the sampled op
        rows = query(db, path, "SELECT step, group_name, hccl_op_name, src_rank, dst_rank, transport_type, "
                               f"transit_size, transit_time, {op_name} FROM CommAnalyzerMatrix")
    return [Link(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), float(r[6] or 0),
                 float(r[7] or 0), str(r[8] or "")) for r in rows]


def step_entries(path: Path, what: str):
    """``(step, kind, key, value)`` of a ``{step: {p2p|collective: {key: value}}}`` file (communication.json
    and communication_matrix.json); a UserError naming the file when it is not that shape."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise UserError(f"{path.name} is not a {what} (expected {{step: {{p2p|collective: ...}}}})",
                        path, EXPORT_AGAIN)
    for step, kinds in data.items():
        for kind, ops in json_object(kinds, path, f"step {step}").items():
            for key, value in json_object(ops, path, f"{step}/{kind}").items():
                yield step, kind, key, value


def _from_json(path: Path) -> list[Link]:
    out = []
    for step, _kind, op, links in step_entries(path, "communication matrix"):
        group = op.split("@")[-1] if "@" in op else ""
        for key, link in json_object(links, path, op).items():
            if "-" not in key or not isinstance(link, dict):
                raise UserError(f"{path.name}: link {key!r} of {op} is not 'src-dst'", path, EXPORT_AGAIN)
            src, dst = key.split("-", 1)
            out.append(Link(step, group, op.split("@")[0], src, dst, str(link.get("Transport Type", "")),
                            json_number(link.get("Transit Size(MB)"), path, f"{op} {key} Transit Size(MB)"),
                            json_number(link.get("Transit Time(ms)"), path, f"{op} {key} Transit Time(ms)"),
                            str(link.get("Op Name", "") or "")))
    return out


def step_number(step: str) -> int | str | None:
    """``"step13"`` -> 13, ``"step"`` or ``""`` -> None (one step without a number)."""
    text = str(step).lower().removeprefix("step").strip()
    if not text:
        return None
    return int(text) if text.isdigit() else step


def global_ranks(per_rank: dict[int, list[Link]], by_hash: dict[str, list[int]]) -> dict[str, dict[str, int]]:
    """Group hash -> {local rank: global rank}, from the groups' ``global_ranks`` or, failing that,
    each rank's own ``k-k`` self link (as msprof-analyze maps them)."""
    local_to_global: dict[str, dict[str, int]] = {g: {str(i): r for i, r in enumerate(ranks)}
                                                  for g, ranks in by_hash.items()}
    for rank, links in per_rank.items():
        for link in links:
            if link.src == link.dst:
                local_to_global.setdefault(link.group, {}).setdefault(link.src, rank)
    return local_to_global


def place_links(per_rank: dict[int, list[Link]], by_hash: dict[str, list[int]], keep
                ) -> tuple[list[tuple[Link, int, int]], int]:
    """Each link ``keep(link)`` accepts with its global source and destination ranks, and how many
    could not be placed (a rank of the group not profiled, or the group unknown)."""
    local_to_global = global_ranks(per_rank, by_hash)
    placed, unplaced = [], 0
    for links in per_rank.values():
        for link in links:
            if not keep(link):
                continue
            mapping = local_to_global.get(link.group, {})
            src, dst = mapping.get(link.src), mapping.get(link.dst)
            if src is None or dst is None:
                unplaced += 1
            else:
                placed.append((link, src, dst))
    return placed, unplaced


def build_matrix(per_rank: dict[int, list[Link]], by_hash: dict[str, list[int]],
                 group_names: dict[str, str]) -> tuple[list[dict], int]:
    """Rows ``{step, group, src, dst, transport, size_mb, time_ms, bandwidth_gbps}`` and the unplaced count."""
    sums: dict[tuple, list] = defaultdict(lambda: ["", 0.0, 0.0])
    placed, unplaced = place_links(per_rank, by_hash, lambda link: counted(link.op))
    for link, src, dst in placed:
        entry = sums[(link.step, link.group, src, dst)]
        entry[0] = entry[0] or link.transport
        entry[1] += link.size_mb
        entry[2] += link.time_ms
    rows = []
    for (step, group, src, dst), (transport, size, time) in sorted(sums.items(), key=lambda kv: (
            kv[0][0], kv[0][1], kv[0][2], kv[0][3])):
        rows.append({"step": step_number(step), "group": group_names.get(group, group), "group_id": group,
                     "src": src, "dst": dst,
                     "transport": transport, "size_mb": size, "time_ms": time,
                     "bandwidth_gbps": size / time if time > 0 else 0.0})
    return rows, unplaced
