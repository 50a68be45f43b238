"""The Compare tab's job and rows: ``studio profile compare BASE NEW --json`` on two folders of ranks
(its ``cluster`` key: the step split per rank, the matrix links and each op type's links, with Welch's
test where a rank has repeated steps) and ``studio profile memory BASE --compare NEW``, made into rows.

Qt-free; times stay in the engines' µs and are shown in ms.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import Progress
from studio.core.serial import to_json

# (part of the step split, column title) shown as new − base
DIFF_PARTS = (("computing_us", "Δ computing"), ("communication_not_overlapped_us", "Δ comm. not overlapped"),
              ("free_us", "Δ free"), ("preparing_us", "Δ preparing"))
STEP_HEADERS = ["Rank", "Step", "Base step (ms)", "New step (ms)", "Δ step (ms)", "Δ %"] + [
    f"{title} (ms)" for _k, title in DIFF_PARTS] + ["Significance"]
LINK_HEADERS = ["Link", "Step", "Group", "Transport", "Base GB/s", "New GB/s", "Change", "Base MB", "New MB"]
OP_LINK_HEADERS = ["Link", "Op type"] + LINK_HEADERS[1:]
MEMORY_HEADERS = ["Op", "Device", "Component", "Base MB", "New MB", "Δ MB", "New / base", "Blocks (base / new)"]
TOP_OPS = 20


def compare_job(base: Path, new: Path) -> Generator[Progress, None, dict]:
    """The cluster comparison as JSON, with ``memory`` (or ``memory_note`` saying why there is none)."""
    from studio.tools.profiler.cluster_compare import compare_clusters
    from studio.tools.profiler.loader import open_profile
    from studio.tools.profiler.memory import open_memory
    from studio.tools.profiler.memory.compare import compare_reports

    result = to_json((yield from compare_clusters(base, new, open_profile)))
    yield Progress(None, "operator memory of both folders")
    try:
        sides = [to_json(open_memory(p, blocks=True)) for p in (base, new)]
        result["memory"], result["memory_note"] = to_json(compare_reports(*sides, str(base), str(new))), ""
    except UserError as exc:
        result["memory"], result["memory_note"] = None, f"memory not compared: {exc.what} ({exc.where})"
    return result


def _ms(value_us):
    return None if value_us is None else value_us / 1000


def step_rows(cluster: dict) -> list[list]:
    """One row per rank and step: base, new and difference of the step and of its parts; the rank's
    significance verdict (Welch's t-test over its steps, or why it is not judged)."""
    verdicts = {r["rank"]: r for r in cluster.get("step_change", [])}
    rows = []
    for s in cluster.get("steps", []):
        step = str(s["new_step"]) if s["base_step"] == s["new_step"] else f"{s['base_step']} → {s['new_step']}"
        base, new, diff = s.get("step_us_base"), s.get("step_us_new"), s.get("step_us_diff")
        change = "-" if diff is None or not base else f"{diff / base:+.1%}"
        row = [s["rank"], step, _or(_ms(base)), _or(_ms(new)), _or(_ms(diff)), change]
        row += ["-" if s.get(f"{k}_diff") is None else s[f"{k}_diff"] / 1000 for k, _t in DIFF_PARTS]
        verdict = verdicts.get(s["rank"], {})
        row.append(verdict.get("verdict", ""))
        rows.append(row)
    return rows


def link_rows(links: list[dict], op_type: bool = False) -> list[list]:
    """Matrix (or per-op-type) links on both sides, the largest bandwidth change first."""
    rows = []
    for r in sorted(links, key=lambda r: -abs(r["gbps_change"] or 0.0)):
        change = "only in base" if r["new_size_mb"] is None else "only in new" if r["base_size_mb"] is None else \
            "-" if r["gbps_change"] is None else f"{r['gbps_change']:+.1%}"
        row = [f"{r['src']} → {r['dst']}"] + ([r["op_type"]] if op_type else [])
        row += [str(r["step"]), r["group"] or "-", r["transport"], _or(r["base_gbps"]), _or(r["new_gbps"]), change,
                _or(r["base_size_mb"]), _or(r["new_size_mb"])]
        rows.append(row)
    return rows


def memory_rows(memory: dict | None) -> list[list]:
    """The op-by-op memory rows of every device pair, largest growth first."""
    rows = []
    for device in (memory or {}).get("devices", []):
        where = device["base_device"] if device["base_device"] == device["new_device"] else \
            f"{device['base_device']} → {device['new_device']}"
        for r in device["ops"]:
            rows.append([r["op"], where, r["component"], r["base_size_mb"], r["new_size_mb"], r["diff_size_mb"],
                         "new" if r["ratio"] is None else r["ratio"], f"{r['base_blocks']} / {r['new_blocks']}"])
    return sorted(rows, key=lambda r: -r[5])


def summary_text(result: dict) -> str:
    """The pairing, the overall line and whatever was not compared."""
    cluster = result.get("cluster") or {}
    parts = [result.get("overall", "")]
    if cluster.get("pairing"):
        parts.append(f"steps {cluster['pairing']}")
    for key in ("cluster_note", "memory_note"):
        if result.get(key):
            parts.append(result[key])
    if result.get("only_in_base") or result.get("only_in_new"):
        parts.append(f"ranks only in base {result.get('only_in_base') or '-'}, only in new "
                     f"{result.get('only_in_new') or '-'}")
    return "; ".join(p for p in parts if p)


def _or(value):
    return "-" if value is None else value
