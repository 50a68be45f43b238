"""The communication matrix split by op type, and its links judged against reference bandwidths.

Each rank records its links per op type and aggregate: ``allreduce-total@<group>`` is the sum of
every all-reduce of the step, ``allreduce-top1``, ``-middle``, ``-bottomN`` the longest, median
and shortest instance (with its ``Op Name``). As msprof-analyze's ``communication_matrix`` keeps
them, each record becomes one row per (step, group, op type, aggregate, link): the same local link
recorded by several ranks is added up, local ranks become global ones (:func:`.matrix.global_ranks`),
and bandwidth is size / time (MB/ms = GB/s).

Two judgements of a link:
- **against each other**: within one step, group, op type and transport, the total links' bandwidth
  spread (max - min) / mean over 5 % names the slowest (as :mod:`.slow` does for the whole matrix);
- **against a reference**: a link slower than the nominal bandwidth of its transport — RDMA 12.5,
  HCCS 18, PCIe 20 GB/s, the figures MindStudio Insight flags links against. A spread between
  links says one is slower than its peers; the reference says when all of them are slow.
Links under 1 MB are not judged (their time is mostly fixed latency), nor LOCAL (on-chip) copies.
"""

from __future__ import annotations

from collections import defaultdict

from studio.tools.profiler.cluster.matrix import Link, place_links, step_number
from studio.tools.profiler.cluster.slow import MIN_LINK_MB, link_spread, step_text

REFERENCE_GBPS = {"RDMA": 12.5, "HCCS": 18.0, "PCIE": 20.0}
TOTAL = "Total Op Info"


def split_op(op: str) -> tuple[str, str]:
    """``allreduce-top1`` -> (``allreduce``, ``top1``); ``allreduce-total`` -> (``allreduce``, ``total``);
    an op without an aggregate suffix is its own total: (op, ``total``)."""
    head, _, tail = op.rpartition("-")
    if head and (tail in ("total", "middle") or tail.startswith(("top", "bottom"))):
        return head, tail
    return op, "total"


def reference_of(transport: str) -> float | None:
    """The nominal bandwidth (GB/s) a link of ``transport`` is judged against, or None."""
    return REFERENCE_GBPS.get(transport.upper())


def build_op_links(per_rank: dict[int, list[Link]], by_hash: dict[str, list[int]],
                   group_names: dict[str, str]) -> tuple[list[dict], int]:
    """Rows ``{step, group, group_id, op_type, aggregate, op_name, src, dst, transport, size_mb,
    time_ms, bandwidth_gbps, reference_gbps, of_reference}`` (every record but the per-group
    ``Total Op Info``, which is the matrix itself) and how many records could not be placed.
    ``of_reference`` (bandwidth / reference) is None for links that are not judged (see :func:`judged`)."""
    sums: dict[tuple, list] = defaultdict(lambda: ["", "", 0.0, 0.0])
    placed, unplaced = place_links(per_rank, by_hash, lambda link: link.op != TOTAL)
    for link, src, dst in placed:
        entry = sums[(link.step, link.group, link.op, src, dst)]
        entry[0] = link.transport  # the last record's, as msprof-analyze keeps them
        entry[1] = link.op_name
        entry[2] += link.size_mb
        entry[3] += link.time_ms
    rows = []
    for (step, group, op, src, dst), (transport, op_name, size, time) in sorted(sums.items(), key=lambda kv: (
            str(kv[0][0]), kv[0][1], split_op(kv[0][2]), kv[0][3], kv[0][4])):
        op_type, aggregate = split_op(op)
        bandwidth = size / time if time > 0 else 0.0
        reference = reference_of(transport)
        row = {"step": step_number(step), "group": group_names.get(group, group), "group_id": group,
               "op_type": op_type, "aggregate": aggregate, "op_name": op_name, "src": src, "dst": dst,
               "transport": transport, "size_mb": size, "time_ms": time, "bandwidth_gbps": bandwidth,
               "reference_gbps": reference, "of_reference": None}
        if reference and judged(row):  # a share of the reference only where the link is judged
            row["of_reference"] = bandwidth / reference
        rows.append(row)
    return rows, unplaced


def judged(row: dict) -> bool:
    """A link worth judging: between two ranks, timed, of 1 MB or more."""
    return (row["transport"] != "LOCAL" and row["src"] != row["dst"] and row["time_ms"] > 0
            and row["size_mb"] >= MIN_LINK_MB)


def below_reference(matrix: list[dict], op_links: list[dict]) -> list[dict]:
    """Findings for the matrix links (all op types together) and each op type's total links that
    run below their transport's reference bandwidth."""
    out = []
    whole = {(row["step"], row["group_id"], row["src"], row["dst"]): (row["size_mb"], row["time_ms"]) for row in matrix}
    # an op type that is all of its link's traffic would repeat the matrix link's finding: left out
    scopes = [(row, "all op types") for row in matrix] + [
        (row, row["op_type"]) for row in op_links if row["aggregate"] == "total"
        and whole.get((row["step"], row["group_id"], row["src"], row["dst"])) != (row["size_mb"], row["time_ms"])]
    for row, scope in scopes:
        reference = reference_of(row["transport"])
        if not judged(row) or reference is None or row["bandwidth_gbps"] >= reference:
            continue
        link = f"{row['src']}->{row['dst']}"
        ratio = row["bandwidth_gbps"] / reference
        out.append({"kind": "reference", "verdict": "below reference", "step": row["step"], "group": row["group"], "op_type": scope,
                    "transport": row["transport"], "link": link, "bandwidth_gbps": row["bandwidth_gbps"],
                    "reference_gbps": reference, "of_reference": ratio,
                    "evidence": f"{step_text(row['step'])}, group {row['group']}, {scope}: {link} {row['transport']} "
                                f"{row['bandwidth_gbps']:.3f} GB/s ({row['size_mb']:.3f} MB in {row['time_ms']:.3f} "
                                f"ms) is {ratio:.0%} of the {row['transport']} reference {reference:g} GB/s"})
    return out


def op_type_spread(op_links: list[dict]) -> list[dict]:
    """Findings where one op type's total links of one transport, in one step and group, differ by
    over 5 % of their mean bandwidth: the slowest is named."""
    groups: dict = defaultdict(dict)
    for row in op_links:
        if row["aggregate"] == "total" and judged(row):
            groups[(row["step"], row["group"], row["op_type"], row["transport"])][f"{row['src']}->{row['dst']}"] = (
                row["size_mb"], row["time_ms"], row["bandwidth_gbps"])
    out = []
    for (step, group, op_type, transport), links in sorted(groups.items(), key=lambda kv: str(kv[0])):
        finding = link_spread(links, f"{step_text(step)}, group {group}, {op_type} {transport} links")
        if finding:
            out.append({"kind": "op link", "step": step, "group": group, "op_type": op_type,
                        "transport": transport, **finding})
    return out
