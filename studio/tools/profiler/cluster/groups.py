"""The parallel layout (TP/PP/DP/CP/EP groups) of a job, from ``profiler_metadata.json``.

torch_npu records two things there when the job uses Megatron-style parallelism:
``distributed_args`` (the sizes and the world size) and ``parallel_group_info`` (every process
group the rank belongs to: ``group_name``, ``group_rank``, ``global_ranks``). Each rank only
lists its own groups, so the layout is the union over ranks. When only the sizes are known, the
groups are laid out in Megatron's order as msprof-analyze does (TP fastest, then CP, DP, PP).

Communication records name a group by a hash of its ``parallel_group_info`` key;
:func:`group_hash` is msprof-analyze's ``double_hash``, so the matrix can turn a group's local
ranks into global ranks.
"""

from __future__ import annotations

import ast
import sqlite3
from dataclasses import dataclass, field

from studio.core.errors import UserError
from studio.tools.profiler.cluster.discover import RankDir
from studio.tools.profiler.db_reader import open_readonly
from studio.tools.profiler.rank_files import read_json

KINDS = {"tp": ("tp",), "pp": ("pp",), "dp": ("dp",), "cp": ("cp",), "ep": ("ep", "exp")}
SIZE_KEYS = {"tp": "tensor_model_parallel_size", "pp": "pipeline_model_parallel_size",
             "dp": "data_parallel_size", "cp": "context_parallel_size", "ep": "expert_model_parallel_size"}


def group_hash(name: str) -> int:
    """msprof-analyze's ``double_hash`` of a group key: two 32-bit polynomial hashes side by side."""
    high = low = 0
    for char in name:
        high = (high * 29 + ord(char)) & 0xFFFFFFFF
        low = (low * 131 + ord(char)) & 0xFFFFFFFF
    return (high << 32) | low


@dataclass
class Layout:
    """The job's parallel groups and each rank's place in them."""

    sizes: dict[str, int] = field(default_factory=dict)
    groups: dict[str, list[list[int]]] = field(default_factory=dict)    # tp/pp/dp/cp/ep/other name -> rank lists
    by_hash: dict[str, list[int]] = field(default_factory=dict)          # group hash -> sorted global ranks
    name_by_hash: dict[str, str] = field(default_factory=dict)           # group hash -> its group_name
    source: str = ""

    def stage_of(self, rank: int) -> int | None:
        """The pipeline stage of ``rank`` (its place in its PP group), None when unknown."""
        for ranks in self.groups.get("pp", []):
            if rank in ranks:
                return sorted(ranks).index(rank)
        return None

    def index_of(self, rank: int, kind: str) -> int | None:
        """The rank's position inside its ``kind`` group."""
        for ranks in self.groups.get(kind, []):
            if rank in ranks:
                return sorted(ranks).index(rank)
        return None

    def __json__(self) -> dict:
        """The report's ``groups`` entry (:func:`studio.core.serial.to_json`): one list per known kind."""
        out: dict = {"sizes": self.sizes, "source": self.source}
        for kind in ("tp", "pp", "dp", "cp", "ep"):
            out[kind] = self.groups.get(kind, [])
        out["other"] = {k: v for k, v in self.groups.items() if k not in KINDS}
        return out


def read_layout(ranks: list[RankDir]) -> Layout:
    """The union of every rank's parallel groups, or Megatron's layout from the sizes alone."""
    return layout_of([rank_metadata(rank) for rank in ranks])


def layout_of(metadata: list[dict]) -> Layout:
    """:func:`read_layout` from the ranks' metadata already read (``profiler_metadata.json`` keys)."""
    layout, named, sources = Layout(), {}, set()
    for meta in metadata:
        if not meta:
            continue
        args = meta.get("distributed_args")
        if isinstance(args, dict) and not layout.sizes:
            layout.sizes = {k: int(args[v]) for k, v in SIZE_KEYS.items() if isinstance(args.get(v), int)}
            if isinstance(args.get("world_size"), int):
                layout.sizes["world_size"] = args["world_size"]
        info = meta.get("parallel_group_info")
        if isinstance(info, dict):
            for key, group in info.items():
                ranks_ = group.get("global_ranks") if isinstance(group, dict) else None
                if isinstance(ranks_, list) and ranks_ and all(isinstance(r, int) for r in ranks_):
                    ranks_ = sorted(ranks_)
                    name = str(group.get("group_name") or key)
                    layout.by_hash[str(group_hash(key))] = ranks_
                    layout.name_by_hash[str(group_hash(key))] = name
                    named.setdefault(name, set()).add(tuple(ranks_))
            sources.add("profiler_metadata.json parallel_group_info")
    for name, sets in named.items():
        kind = next((k for k, names in KINDS.items() if name in names), name)
        layout.groups[kind] = sorted(list(s) for s in sets)
    if layout.sizes:
        # Each rank lists only its own groups (and some list "dp_cp" without "dp"): a kind that does
        # not cover every rank is completed from the sizes, when what was recorded agrees with it.
        world = layout.sizes.get("world_size") or 0
        for kind, groups in megatron_groups(layout.sizes).items():
            have = layout.groups.get(kind, [])
            covered = {r for g in have for r in g}
            if len(covered) < world and all(g in groups for g in have):
                layout.groups[kind] = groups
                sources.add(f"profiler_metadata.json distributed_args ({kind.upper()} in Megatron order)")
    layout.source = "; ".join(sorted(sources)) or "none (no profiler_metadata.json with parallel groups)"
    return layout


def megatron_groups(sizes: dict[str, int]) -> dict[str, list[list[int]]]:
    """TP/PP/DP groups in Megatron's rank order (TP fastest, then CP and DP, PP slowest)."""
    tp, pp, cp = sizes.get("tp", 1) or 1, sizes.get("pp", 1) or 1, sizes.get("cp", 1) or 1
    world = sizes.get("world_size") or tp * pp * sizes.get("dp", 1) * cp
    per_stage = world // pp
    tp_groups = [list(range(i, i + tp)) for i in range(0, world, tp)]
    pp_groups = [list(range(i, world, per_stage)) for i in range(per_stage)]
    dp_groups = [list(range(s * per_stage + k, (s + 1) * per_stage, tp * cp))
                 for s in range(pp) for k in range(tp * cp)]
    return {"tp": tp_groups, "pp": pp_groups, "dp": dp_groups}


def rank_metadata(rank: RankDir) -> dict:
    if "metadata" in rank.files:
        data = read_json(rank.files["metadata"])
        return data if isinstance(data, dict) else {}
    if "profiler_db" in rank.files:  # the db export keeps the same keys in META_DATA
        try:
            with open_readonly(rank.files["profiler_db"]) as db:
                rows = dict(db.execute("SELECT name, value FROM META_DATA").fetchall())
        except (sqlite3.Error, UserError):  # no META_DATA: no layout from this rank
            return {}
        out = {}
        for key in ("distributed_args", "parallel_group_info"):
            if key in rows:
                try:
                    out[key] = ast.literal_eval(rows[key])
                except (ValueError, SyntaxError):
                    pass
        return out
    return {}
