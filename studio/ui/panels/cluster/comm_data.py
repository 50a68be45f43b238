"""What the Collectives tab shows, without Qt: the map's cells, the op rows and the findings text,
from the ``studio profile cluster DIR --comm --json`` report."""

from __future__ import annotations

import heapq
from html import escape

from studio.tools.profiler.cluster.slow import step_text

METRICS = (("sync_ms", "synchronisation (ms)", "ms"), ("wait_ms", "wait (ms)", "ms"),
           ("transit_ms", "transit (ms)", "ms"), ("elapse_ms", "elapse (ms)", "ms"),
           ("sync_ratio", "synchronisation ratio", ""), ("wait_ratio", "wait ratio", ""))
OP_HEADERS = ["Op", "Rank", "Group", "Start (ms)", "Elapse", "Transit", "Wait", "Sync", "Idle", "Wait r", "Sync r"]


def group_label(report: dict, group_id: str) -> str:
    """``pp (0, 2)``; the group's hash when it has no name."""
    group = report.get("groups", {}).get(group_id, {})
    return f"{group.get('name') or group_id} ({', '.join(map(str, group.get('ranks', [])))})"


def map_cells(report: dict, step, every_step) -> tuple[list[tuple[str, str]], list[int], dict]:
    """(groups as (id, label), ranks, {(group, rank): total row}) for ``step`` (every step when ``every_step``;
    the totals of several steps are added and their ratios taken of the sums)."""
    cells: dict[tuple[str, int], dict] = {}
    for total in report.get("totals", []):
        if not every_step and total["step"] != step:
            continue
        key = (total["group_id"], total["rank"])
        if key not in cells:
            cells[key] = dict(total)
            continue
        cell = cells[key]
        for k in ("ops", "elapse_ms", "transit_ms", "wait_ms", "sync_ms", "idle_ms"):
            cell[k] += total[k]
        for part, ratio in (("wait_ms", "wait_ratio"), ("sync_ms", "sync_ratio")):
            whole = cell[part] + cell["transit_ms"]
            cell[ratio] = round(cell[part] / whole, 4) if whole > 0 else 0.0
    group_ids = sorted({g for g, _ in cells}, key=lambda g: (-max(c["sync_ms"] for (h, _), c in cells.items()
                                                                   if h == g), g))
    groups = [(g, group_label(report, g)) for g in group_ids]
    ranks = sorted({r for _, r in cells})
    return groups, ranks, cells


def chosen_ops(report: dict, step, every_step, group: str | None, rank: int | None) -> list[dict]:
    """The ops of ``step`` (every step when ``every_step``), ``group`` and ``rank`` (None: all)."""
    return [o for o in report.get("ops", []) if (every_step or o["step"] == step)
            and (group is None or o["group_id"] == group) and (rank is None or o["rank"] == rank)]


def op_rows(report: dict, step, every_step, group: str | None, rank: int | None,
            limit: int | None = None) -> list[list]:
    """Table rows of the ops of ``group`` and ``rank`` (None: all), longest synchronisation first, at
    most ``limit`` of them; start in ms from the first of those ops; the last cell is the op's JSON row
    (for the jump to the timeline)."""
    ops = chosen_ops(report, step, every_step, group, rank)
    first = min((o["start_us"] for o in ops), default=0.0)
    by_sync = lambda o: -o["sync_ms"]  # noqa: E731
    # nsmallest is sorted()[:limit] (ties in their order) without sorting what is left out
    ops = heapq.nsmallest(limit, ops, key=by_sync) if limit is not None else sorted(ops, key=by_sync)
    labels = {g: group_label(report, g) for g in {o["group_id"] for o in ops}}  # one label per group, not per op
    return [[o["op"], o["rank"], labels[o["group_id"]], (o["start_us"] - first) / 1000, o["elapse_ms"],
             o["transit_ms"], o["wait_ms"], o["sync_ms"], o["idle_ms"], o["wait_ratio"], o["sync_ratio"], o]
            for o in ops]


def findings_html(report: dict) -> str:
    """Who waited for whom, the slow ops' causes and the warnings, as HTML."""
    lines = []
    for g in report.get("group_waits", []):
        others = "".join(f"; {o['wait_ms']:,.3f} ms in {o['ops']} op(s) for rank {o['rank']}" for o in g["others"])
        lines.append(f"<b>{escape(group_label(report, g['group_id']))}</b>, {step_text(g['step'])}: the others waited "
                     f"<b>{g['wait_ms']:,.3f} ms</b> in {g['ops']} op(s) for <b>rank {g['waited_for']}</b> "
                     f"(it arrived last){others}")
    if not report.get("group_waits"):
        lines.append("No rank waited 0.1 ms or more in a collective for another.")
    for b in report.get("bottlenecks", []):
        lines.append(f"<b>{escape(b['op'])}</b> ({b['duration_ns'] / 1e6:,.3f} ms): <b>{escape(b['verdict'])}</b> — "
                     f"{escape(b['reason'])}")
    lines.extend(f"⚠ {escape(w)}" for w in report.get("warnings", []))
    return "<br>".join(lines)
