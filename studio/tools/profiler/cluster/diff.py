"""Two cluster reports side by side: the step split per rank, the matrix links and each op type's
links, baseline against comparison, with the differences and — where a rank has several steps on
both sides — whether its step time changed significantly.

Ranks pair by rank id. Steps pair by number (msprof-analyze's ``cluster_time_compare_summary``
joins on rank and step); when the two runs share no step number but each rank has one step on each
side (two captures of one step each, as usual), those two are paired and ``pairing`` says so.
Links pair by communication group *name* and global ranks: group hashes are made from a run's own
group keys, so two runs of one job rarely share them; links of unnamed groups between the same two
ranks are added up on each side. ``step_us`` is computing + communication not overlapped + free
(the step the slow-rank rule measures).
"""

from __future__ import annotations

import math
from collections import defaultdict

PARTS = ("step_us", "computing_us", "communication_not_overlapped_us", "overlapped_us", "communication_us",
         "free_us", "bubble_us", "preparing_us")
SIGNIFICANCE = 0.05


def cluster_diff(base: dict, new: dict) -> dict:
    """``{pairing, steps, step_change, links, op_links}`` of two ``open_cluster`` reports (as JSON)."""
    pairs, pairing = _step_pairs(base["ranks"], new["ranks"])
    steps = []
    for (rank, b_step, n_step), (b, n) in sorted(pairs.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        row = {"rank": rank, "base_step": b_step, "new_step": n_step}
        for part in PARTS:
            bv, nv = _part(b, part), _part(n, part)
            row[f"{part}_base"], row[f"{part}_new"] = bv, nv
            row[f"{part}_diff"] = None if bv is None or nv is None else nv - bv
        steps.append(row)
    step_map = {b_step: n_step for (_r, b_step, n_step) in pairs}
    return {"pairing": pairing, "steps": steps, "step_change": _step_change(base["ranks"], new["ranks"]),
            "links": _pair_links(base["matrix"], new["matrix"], step_map, ()),
            "op_links": _pair_links([r for r in base.get("op_links", []) if r["aggregate"] == "total"],
                                    [r for r in new.get("op_links", []) if r["aggregate"] == "total"], step_map,
                                    ("op_type",))}


def _part(row: dict, part: str) -> float | None:
    if part == "step_us":
        parts = [row.get(k) for k in ("computing_us", "communication_not_overlapped_us", "free_us")]
        return None if any(p is None for p in parts) else sum(parts)
    return row.get(part)


def _step_pairs(base: list[dict], new: list[dict]) -> tuple[dict, str]:
    b = {(r["rank"], r["step"]): r for r in base}
    n = {(r["rank"], r["step"]): r for r in new}
    common = set(b) & set(n)
    if common:
        return ({(rank, step, step): (b[(rank, step)], n[(rank, step)]) for rank, step in common},
                "paired by rank and step number")
    b_steps, n_steps = defaultdict(list), defaultdict(list)
    for rank, step in b:
        b_steps[rank].append(step)
    for rank, step in n:
        n_steps[rank].append(step)
    ranks = set(b_steps) & set(n_steps)
    if ranks and all(len(b_steps[r]) == len(n_steps[r]) == 1 for r in ranks):
        pairs = {(r, b_steps[r][0], n_steps[r][0]): (b[(r, b_steps[r][0])], n[(r, n_steps[r][0])]) for r in ranks}
        names = sorted({f"{bs} with {ns}" for _r, bs, ns in pairs})
        return pairs, (f"paired rank by rank, one step on each side (the runs share no step number: "
                       f"{', '.join(map(str, names))})")
    return {}, "not paired: the runs share no step number and have several steps"


def _step_change(base: list[dict], new: list[dict]) -> list[dict]:
    """Per rank: the mean step time on each side and, with 2+ steps on both, Welch's t-test of it."""
    out = []
    by_rank = defaultdict(lambda: ([], []))
    for side, rows in ((0, base), (1, new)):
        for r in rows:
            value = _part(r, "step_us")
            if value is not None:
                by_rank[r["rank"]][side].append(value)
    for rank, (b, n) in sorted(by_rank.items()):
        if not b or not n:
            continue
        row = {"rank": rank, "base_steps": len(b), "new_steps": len(n), "base_mean_us": sum(b) / len(b),
               "new_mean_us": sum(n) / len(n), "p_value": None, "verdict": ""}
        row["change"] = (row["new_mean_us"] - row["base_mean_us"]) / row["base_mean_us"] if row["base_mean_us"] else 0.0
        if len(b) < 2 or len(n) < 2:
            row["verdict"] = "not judged: a difference needs 2 or more steps on each side to be weighed"
        else:
            row["p_value"] = welch_p(b, n)
            significant = row["p_value"] < SIGNIFICANCE
            row["verdict"] = (f"{'significant' if significant else 'no significant'} change (Welch's t-test, "
                              f"p = {row['p_value']:.3g}, {len(b)} and {len(n)} steps)")
        out.append(row)
    return out


def welch_p(a: list[float], b: list[float]) -> float:
    """Two-sided p-value of Welch's t-test (scipy's when installed; the same formula otherwise)."""
    try:
        from scipy import stats
    except ImportError:
        stats = None
    if stats is not None:
        return float(stats.ttest_ind(a, b, equal_var=False).pvalue)
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    se = math.sqrt(va / len(a) + vb / len(b))
    if se == 0:
        return 1.0 if ma == mb else 0.0
    t = abs(ma - mb) / se
    df = (va / len(a) + vb / len(b)) ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    return _t_sf(t, df) * 2


def _t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (regularised incomplete beta)."""
    x = df / (df + t * t)
    return 0.5 * _betainc(df / 2, 0.5, x)


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1 - x)
    f, c, d = 1.0, 1.0, 0.0  # Lentz's continued fraction
    for i in range(200):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1.0 + num / (c if abs(c) > 1e-300 else 1e-300)
        f *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return front * (f - 1.0) / a


def _group_key(row: dict) -> str:
    name = str(row.get("group") or "")
    return "" if name == str(row.get("group_id")) or name.isdigit() else name


def _pair_links(base: list[dict], new: list[dict], step_map: dict, extra: tuple[str, ...]) -> list[dict]:
    """Links of both sides keyed by (step, group name, *extra, src, dst), sizes and times added."""
    sides: list[dict] = [defaultdict(lambda: ["", 0.0, 0.0]), defaultdict(lambda: ["", 0.0, 0.0])]
    for i, rows in enumerate((base, new)):
        for r in rows:
            if r["src"] == r["dst"]:
                continue
            step = r["step"] if i == 1 else step_map.get(r["step"], r["step"])  # base steps named as new ones
            entry = sides[i][(step, _group_key(r), *(r[k] for k in extra), r["src"], r["dst"])]
            entry[0] = entry[0] or r["transport"]
            entry[1] += r["size_mb"]
            entry[2] += r["time_ms"]
    out = []
    for key in sorted(set(sides[0]) | set(sides[1]), key=str):
        row = {"step": key[0], "group": key[1], **dict(zip(extra, key[2:-2])), "src": key[-2], "dst": key[-1]}
        for name, side in (("base", sides[0]), ("new", sides[1])):
            transport, size, time = side[key] if key in side else ("", None, None)
            row["transport"] = row.get("transport") or transport
            row[f"{name}_size_mb"], row[f"{name}_time_ms"] = size, time
            row[f"{name}_gbps"] = None if not time else size / time
        row["gbps_change"] = (None if not row["base_gbps"] or row["new_gbps"] is None
                              else (row["new_gbps"] - row["base_gbps"]) / row["base_gbps"])
        out.append(row)
    return out
