"""Slow ranks and slow links: a spread over 5 %, named with the numbers that show it.

Slow rank (msprof-analyze advisor's rule): for computing, communication (not overlapped) and
free, the spread is (max - min) / the mean of the ranks' summed time; over 5 % is a finding.
Ranks in different pipeline stages do different work, so when the stages are known the ranks are
also compared within each stage; a difference only between stages is a pipeline imbalance, not a
slow rank. Which rank is the slow one depends on the part: the rank that computes longest or
idles longest holds the others up; in communication it is the rank that spends the *least* time,
because the others are waiting in the collective for it to arrive.

Slow link: per step and transport (RDMA, SDMA — as the advisor), the ranks' bandwidth spread
(max - min) / mean over 5 % names the slowest rank's link; within a communication group, the
matrix links of one transport are compared the same way. Transfers under 1 MB are left out of
both: their time is mostly fixed latency.
"""

from __future__ import annotations

from collections import defaultdict


def step_text(step) -> str:
    """A step as a line names it: ``step 13``, or ``the one unnumbered step`` where the export has an
    empty Step column (msprof-analyze's older cluster output)."""
    return "the one unnumbered step" if step is None or step == "" else f"step {step}"

THRESHOLD = 0.05
PARTS = (("computing_us", "computing", "max"), ("communication_not_overlapped_us", "communication", "min"),
         ("free_us", "free", "max"))
LINK_TRANSPORTS = ("RDMA", "SDMA")
# Below 1 MB a transfer's time is mostly fixed latency: its "bandwidth" says nothing about the link.
MIN_LINK_MB = 1.0


def slow_ranks(rows: list[dict], stages: dict[int, int | None]) -> list[dict]:
    """Findings per step and part; ``rows`` are per-rank step rows, ``stages`` rank -> pipeline stage."""
    out = []
    by_step: dict = defaultdict(list)
    for row in rows:
        by_step[row["step"]].append(row)
    for step, ranks in by_step.items():
        groups = defaultdict(list)
        for row in ranks:
            groups[stages.get(row["rank"])].append(row)
        staged = None not in groups and len(groups) > 1
        for key, part, slow_end in PARTS:
            finding = _spread(ranks, key, part, slow_end, step, "all ranks")
            inner = [f for stage, members in sorted(groups.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
                     if staged and (f := _spread(members, key, part, slow_end, step, f"pipeline stage {stage}"))]
            if staged and finding and not inner:
                finding["verdict"] = "stage imbalance"
                finding["evidence"] += ("; within each pipeline stage the ranks agree within 5 %: the "
                                        "difference is between stages (a pipeline imbalance, not one slow rank)")
            out.extend(f for f in [finding] + inner if f)
    return out


def _spread(rows: list[dict], key: str, part: str, slow_end: str, step, scope: str) -> dict | None:
    if len(rows) < 2:
        return None
    totals = [r["computing_us"] + r["communication_not_overlapped_us"] + r["free_us"] for r in rows]
    mean_total = sum(totals) / len(totals)
    values = [r[key] for r in rows]
    if mean_total <= 0:
        return None
    spread = (max(values) - min(values)) / mean_total
    if spread <= THRESHOLD:
        return None
    hi = rows[values.index(max(values))]
    lo = rows[values.index(min(values))]
    slow = hi if slow_end == "max" else lo
    other = lo if slow is hi else hi
    why = ("the others wait in the collectives for it" if part == "communication"
           else f"it spends the most time in {part}")
    evidence = (f"{step_text(step)}, {scope}: rank {slow['rank']} {part} {slow[key] / 1000:.3f} ms vs rank "
                f"{other['rank']} {other[key] / 1000:.3f} ms; spread {spread * 100:.1f} % of the mean step "
                f"{mean_total / 1000:.3f} ms (> {THRESHOLD * 100:.0f} %); {why}")
    return {"step": step, "scope": scope, "part": part, "rank": slow["rank"], "verdict": "slow rank",
            "spread": spread, "max_rank": hi["rank"], "max_us": hi[key], "min_rank": lo["rank"], "min_us": lo[key],
            "mean_step_us": mean_total, "evidence": evidence}


def slow_links(bandwidth: dict[int, dict[tuple[str, str], list[float]]], matrix: list[dict]) -> list[dict]:
    """Slow links from per-rank transport bandwidth and from matrix links within one group."""
    out = []
    per: dict = defaultdict(dict)
    for rank, entries in bandwidth.items():
        for (step, transport), (size, time) in entries.items():
            if transport in LINK_TRANSPORTS and time > 0 and size >= MIN_LINK_MB:
                per[(step, transport)][rank] = (size, time, size / time)
    for (step, transport), ranks in sorted(per.items(), key=lambda kv: str(kv[0])):
        finding = link_spread(ranks, f"{step_text(step)}, {transport} bandwidth per rank")
        if finding:
            out.append({"kind": "rank", "step": step, "transport": transport, **finding})
    groups: dict = defaultdict(dict)
    for row in matrix:
        if row["transport"] != "LOCAL" and row["src"] != row["dst"] and row["time_ms"] > 0 \
                and row["size_mb"] >= MIN_LINK_MB:
            key = f"{row['src']}->{row['dst']}"
            groups[(row["step"], row["group"], row["transport"])][key] = (row["size_mb"], row["time_ms"],
                                                                          row["bandwidth_gbps"])
    for (step, group, transport), links in sorted(groups.items(), key=lambda kv: str(kv[0])):
        finding = link_spread(links, f"{step_text(step)}, group {group}, {transport} links")
        if finding:
            out.append({"kind": "link", "step": step, "group": group, "transport": transport, **finding})
    return out


def link_spread(items: dict, scope: str) -> dict | None:
    """The slowest of ``items`` (name -> (size MB, time ms, GB/s)) when their spread is over 5 %, else None."""
    if len(items) < 2:
        return None
    bws = {k: v[2] for k, v in items.items()}
    mean = sum(bws.values()) / len(bws)
    slow = min(bws, key=bws.get)
    fast = max(bws, key=bws.get)
    spread = (bws[fast] - bws[slow]) / mean if mean > 0 else 0.0
    if spread <= THRESHOLD:
        return None
    size, time, bw = items[slow]
    evidence = (f"{scope}: {slow} {bw:.3f} GB/s ({size:.3f} MB in {time:.3f} ms) vs {fast} {bws[fast]:.3f} GB/s; "
                f"mean {mean:.3f} GB/s, spread {spread * 100:.1f} % (> {THRESHOLD * 100:.0f} %)")
    return {"link": str(slow), "bandwidth_gbps": bw, "mean_gbps": mean, "fastest": str(fast),
            "fastest_gbps": bws[fast], "spread": spread, "evidence": evidence}
