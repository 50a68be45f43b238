"""Two folders of ranks compared rank by rank: ``studio profile compare BASE NEW`` on cluster folders.

A folder of ranks (``*_ascend_pt`` folders, ``PROF_*/device_N``; :mod:`studio.tools.profiler.cluster`)
is many profiles, one per rank. Comparing two such folders pairs the ranks by **rank id** (as
``studio profile cluster`` reads it) and compares each pair as two profiles
(:func:`studio.tools.profiler.compare.compare`): a per-rank table, and an overall line on the
slowest rank (a step of a data-parallel job lasts as long as its slowest rank). Ranks on one side
only are listed, not compared. A folder of ranks against one profile is refused, saying which rank
folder to give instead.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import Progress
from studio.tools.profiler.compare import Comparison, compare
from studio.tools.profiler.model import Trace
from studio.tools.profiler.paired_runs import PairedRuns

__all__ = ["ClusterComparison", "RankComparison", "compare_clusters", "is_cluster", "refuse_mixed"]


@dataclass
class RankComparison:
    """One rank in both folders: the comparison of its two profiles."""

    rank: int
    base_path: str
    new_path: str
    comparison: Comparison | None = None
    not_compared: str = ""  # why the rank's pair could not be compared

    def __json__(self) -> dict:
        """The rank's row of ``--json``: the figures of the table and the whole comparison."""
        c = self.comparison
        return {"rank": self.rank, "base": self.base_path, "new": self.new_path, "not_compared": self.not_compared,
                "summary": _summary(c) if c else None, "comparison": c}


@dataclass
class ClusterComparison(PairedRuns):
    """Two folders of ranks, rank by rank (matched by rank id; ``only_in_*``: rank ids)."""

    ranks: list[RankComparison] = field(default_factory=list)
    # the two cluster reports side by side (:func:`studio.tools.profiler.cluster.diff.cluster_diff`):
    # step split per rank, matrix links, each op type's links; None with ``cluster_note`` saying why
    cluster: dict | None = None
    cluster_note: str = ""

    __json_extra__ = ("overall",)

    @property
    def overall(self) -> str:
        """One line over the ranks: the slowest rank on each side, and the op rows flagged."""
        compared = [r for r in self.ranks if r.comparison is not None]
        text = f"{len(compared)} rank(s) compared, matched by rank id"
        timed = [(r.rank, r.comparison) for r in compared if r.comparison.base_latency_ms is not None
                 and r.comparison.new_latency_ms is not None]
        if timed:
            b_rank, b = max(timed, key=lambda rc: rc[1].base_latency_ms)
            n_rank, n = max(timed, key=lambda rc: rc[1].new_latency_ms)
            change = (n.new_latency_ms - b.base_latency_ms) / b.base_latency_ms * 100.0 if b.base_latency_ms else 0.0
            text += (f"; slowest rank's time per iteration: {b.base_latency_ms:,.3f} ms (rank {b_rank}) -> "
                     f"{n.new_latency_ms:,.3f} ms (rank {n_rank}), {change:+.1f} % (a figure: "
                     f"{_judged(compared)})")
        rules = [r.comparison.op_rule for r in compared if r.comparison.op_rule and r.comparison.op_rule.judged]
        if rules:
            text += (f"; op rows flagged: {sum(r.flagged for r in rules)} of {sum(r.judged for r in rules)} "
                     f"judged, over {len(rules)} rank(s)")
        else:
            text += "; op rows unjudged on every rank"
        if self.only_in_base or self.only_in_new:
            text += (f"; not compared: ranks only in base {self.only_in_base or '-'}, "
                     f"only in new {self.only_in_new or '-'}")
        return text

    def __str__(self) -> str:
        lines = [f"baseline: {self.base}", f"new:      {self.new}", f"overall: {self.overall}", "",
                 f"{'rank':>4} {'base ms/it':>11} {'new ms/it':>11} {'op us/it base':>14} {'op us/it new':>13} "
                 f"{'rows':>6} {'one side':>9} {'flagged':>9}  latency"]
        for r in self.ranks:
            if r.comparison is None:
                lines.append(f"{r.rank:>4} not compared: {r.not_compared}")
                continue
            s = _summary(r.comparison)
            lines.append(f"{r.rank:>4} {_ms(s['base_ms']):>11} {_ms(s['new_ms']):>11} "
                         f"{s['base_op_us']:>14,.1f} {s['new_op_us']:>13,.1f} {s['rows']:>6} {s['one_sided']:>9} "
                         f"{s['flagged']:>9}  {s['latency']}")
        lines.extend(f"{rank:>4} only in {side}: not compared" for side, rank in self.one_sided())
        lines.extend(cluster_lines(self.cluster, self.cluster_note))
        lines.append("\nper rank: `studio profile compare` of the two rank folders gives its op and API rows")
        return "\n".join(lines)


def is_cluster(path: Path) -> bool:
    """True for a folder of two or more ranks, or msprof-analyze's cluster output."""
    from studio.tools.profiler.cluster.engine import match_cluster_dir

    return Path(path).is_dir() and match_cluster_dir(Path(path))


def refuse_mixed(base: Path, new: Path) -> None:
    """A folder of ranks on one side only: a UserError saying which rank folder to give instead."""
    cluster, single, side = (base, new, "BASE") if is_cluster(base) else (new, base, "NEW")
    from studio.tools.profiler.cluster.discover import find_ranks

    ranks = find_ranks(cluster).ranks
    example = f" (e.g. {ranks[0].path})" if ranks else ""
    raise UserError(f"{side} is a folder of {len(ranks) or 'several'} ranks and the other side is one profile; "
                    "a rank is compared with a rank, a folder of ranks with a folder of ranks", cluster,
                    f"Give one rank's folder as {side}{example}, or give a folder of ranks on both sides to compare "
                    f"them rank by rank ({single} is one profile).")


def compare_clusters(base: Path, new: Path, opener: Callable[[Path], Generator[Progress, None, Trace]]
                     ) -> Generator[Progress, None, ClusterComparison]:
    """Job: compare two folders of ranks rank by rank; ``opener`` reads one rank's profile."""
    from studio.tools.profiler.cluster.discover import find_ranks

    sides = []
    for path in (base, new):
        found = find_ranks(path)
        if not found.ranks:
            raise UserError("This folder holds msprof-analyze's cluster output, not the ranks' own profiles", path,
                            "Give the folder that holds the *_ascend_pt (or PROF_*) folders, on both sides.")
        sides.append({r.rank: r for r in found.ranks})
    b, n = sides
    result = ClusterComparison(str(base), str(new), only_in_base=sorted(set(b) - set(n)),
                               only_in_new=sorted(set(n) - set(b)))
    yield Progress(None, "step split and links of both folders")
    try:
        from studio.core.serial import to_json
        from studio.tools.profiler.cluster import open_cluster
        from studio.tools.profiler.cluster.diff import cluster_diff

        result.cluster = cluster_diff(to_json(open_cluster(base)), to_json(open_cluster(new)))
    except UserError as exc:
        result.cluster_note = f"the step split and links are not compared: {exc.what} ({exc.where})"
    both = sorted(set(b) & set(n))
    for i, rank in enumerate(both):
        yield Progress(i / max(1, len(both)), f"rank {rank}")
        paths = [_profile_path(r) for r in (b[rank], n[rank])]
        row = RankComparison(rank, str(paths[0]), str(paths[1]))
        shared = [p for r, p in zip((b[rank], n[rank]), paths) if r.kind == "msprof" and _devices(p) > 1]
        if shared:
            row.not_compared = (f"{shared[0]} holds {_devices(shared[0])} devices, which the profiler reads as one "
                                "profile: compare the PROF_* folders themselves")
            result.ranks.append(row)
            continue
        try:
            traces = []
            for path in paths:
                traces.append((yield from opener(path)))
        except UserError as exc:
            row.not_compared = f"{exc.what} ({exc.where})"
        else:
            row.comparison = compare(*traces)
        result.ranks.append(row)
    yield Progress(1.0, f"{len(both)} rank(s) compared")
    return result


STEP_COLUMNS = (("step_us", "step"), ("computing_us", "computing"), ("communication_not_overlapped_us", "comm not ovl"),
                ("free_us", "free"))


def cluster_lines(cluster: dict | None, note: str) -> list[str]:
    """The text of the cluster comparison: step split per rank (ms, base -> new), the step change
    verdicts, and the links whose bandwidth changed most."""
    if cluster is None:
        return ["", note] if note else []
    lines = ["", f"step split per rank (ms, base -> new; steps {cluster['pairing']}; step = computing + "
                 f"communication not overlapped + free)"]
    for row in cluster["steps"]:
        cells = "  ".join(f"{title} {_ms_us(row[f'{key}_base'])} -> {_ms_us(row[f'{key}_new'])} "
                          f"({_signed_ms(row[f'{key}_diff'])})" for key, title in STEP_COLUMNS)
        lines.append(f"  rank {row['rank']}: {cells}")
    lines.extend(f"  rank {c['rank']}: mean step {c['base_mean_us'] / 1000:,.3f} -> {c['new_mean_us'] / 1000:,.3f} ms "
                 f"({c['change']:+.1%}); {c['verdict']}" for c in cluster["step_change"])
    for title, rows in (("matrix links", cluster["links"]), ("links per op type", cluster["op_links"])):
        changed = sorted((r for r in rows if r["gbps_change"] is not None), key=lambda r: -abs(r["gbps_change"]))
        one_side = sum(1 for r in rows if r["base_gbps"] is None or r["new_gbps"] is None)
        lines.append(f"{title}: {len(changed)} on both sides" + (f", {one_side} on one side only" if one_side else "")
                     + ("; largest bandwidth changes:" if changed else ""))
        for r in changed[:5]:
            what = f"{r['op_type']} " if "op_type" in r else ""
            lines.append(f"  {what}{r['src']}->{r['dst']} {r['transport']} {r['group'] or '(unnamed group)'}: "
                         f"{r['base_gbps']:,.3f} -> {r['new_gbps']:,.3f} GB/s ({r['gbps_change']:+.1%})")
    return lines


def _ms_us(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:,.3f}"


def _signed_ms(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:+,.3f}"


def _profile_path(rank) -> Path:
    """What the profiler opens for a rank: its ``*_ascend_pt`` folder, or the ``PROF_*`` folder
    of an msprof device (which holds that device's files)."""
    return rank.path.parent if rank.kind == "msprof" else rank.path


def _devices(prof: Path) -> int:
    return sum(1 for c in prof.iterdir() if c.is_dir() and c.name.startswith("device_"))


def _summary(c: Comparison) -> dict:
    rule = c.op_rule
    return {"base_ms": c.base_latency_ms, "new_ms": c.new_latency_ms, "base_op_us": c.base_per_iter_us,
            "new_op_us": c.new_per_iter_us, "rows": len(c.ops), "one_sided": sum(1 for r in c.ops if r.only_in),
            "flagged": f"{rule.flagged}/{rule.judged}" if rule and rule.judged else "unjudged",
            "latency": c.change.verdict if c.change is not None else "not judged (" + c.samples_how + ")"}


def _judged(compared: list[RankComparison]) -> str:
    verdicts = [r.comparison.change for r in compared if r.comparison.change is not None]
    if not verdicts:
        return "no rank has per-iteration samples to judge it"
    slower = sum(1 for v in verdicts if v.significant and v.ratio > 1)
    faster = sum(1 for v in verdicts if v.significant and v.ratio < 1)
    return f"{faster} rank(s) significantly faster, {slower} slower, {len(verdicts) - slower - faster} no significant change"


def _ms(value: float | None) -> str:
    return f"{value:,.3f}" if value is not None else "-"
