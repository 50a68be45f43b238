"""The cluster report: its JSON shape (keys kept stable) and its text form."""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.core.serial import to_json
from studio.tools.profiler.cluster.slow import step_text

RANK_COLUMNS = (("computing_us", "computing"), ("communication_not_overlapped_us", "comm not ovl"),
                ("overlapped_us", "overlapped"), ("free_us", "free"), ("bubble_us", "bubble"),
                ("preparing_us", "preparing"))


def op_link_lines(op_links: list[dict]) -> list[str]:
    """Each op type's total links between ranks: size, time, bandwidth and its share of the reference."""
    rows = [r for r in op_links if r["aggregate"] == "total" and r["src"] != r["dst"]]
    if not rows:
        return []
    lines = ["links per op type (each op type's total; the top/middle/bottom samples are in --json):",
             f"{'step':>6} {'group':<24} {'op type':<16} {'link':>8} {'transport':<9} {'MB':>10} {'ms':>9} "
             f"{'GB/s':>8} {'of ref':>7}"]
    for r in rows:
        share = "" if r["of_reference"] is None else f"{r['of_reference']:.0%}"
        lines.append(f"{'' if r['step'] is None else r['step']:>6} {str(r['group'])[:24]:<24} "
                     f"{r['op_type'][:16]:<16} {str(r['src']) + '->' + str(r['dst']):>8} {r['transport']:<9} "
                     f"{r['size_mb']:>10,.3f} {r['time_ms']:>9,.3f} {r['bandwidth_gbps']:>8,.3f} {share:>7}")
    return lines


@dataclass
class ClusterReport:
    """Per-rank step time, stage maxima, matrix, layout, findings and where it all came from."""

    ranks: list[dict] = field(default_factory=list)
    stages: list[dict] = field(default_factory=list)
    slow_ranks: list[dict] = field(default_factory=list)
    slow_links: list[dict] = field(default_factory=list)
    matrix: list[dict] = field(default_factory=list)
    op_links: list[dict] = field(default_factory=list)   # the matrix per op type (total and samples)
    groups: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


    def __str__(self) -> str:
        lines = [f"source: {self.source.get('kind')} — {self.source.get('note', '')}".rstrip(" —")]
        lines.append(f"{'rank':>5} {'step':>6} " + " ".join(f"{title + ' ms':>16}" for _, title in RANK_COLUMNS)
                     + "  stage")
        for row in self.ranks:
            cells = " ".join(f"{'-' if row.get(key) is None else f'{row[key] / 1000:,.3f}':>16}"
                             for key, _ in RANK_COLUMNS)
            stage = "" if row.get("pp_stage") is None else str(row["pp_stage"])
            lines.append(f"{row['rank']:>5} {'' if row['step'] is None else row['step']:>6} {cells}  {stage}")
        for stage in self.stages:
            lines.append(f"stage {stage['ranks']} {step_text(stage['step'])}: max computing "
                         f"{stage['computing_us'] / 1000:,.3f} ms, max bubble {stage['bubble_us'] / 1000:,.3f} ms")
        layout = {k: v for k, v in self.groups.items() if k in ("tp", "pp", "dp", "cp", "ep", "collective", "p2p")
                  and v}
        if layout:
            lines.append("groups: " + "; ".join(f"{k.upper()} {v}" for k, v in layout.items()))
        lines.append(f"matrix: {len(self.matrix)} links")
        lines.extend(op_link_lines(self.op_links))
        for title, findings in (("slow rank", self.slow_ranks), ("slow link", self.slow_links)):
            if not findings:
                lines.append(f"{title}: none (spread within 5 %)")
            for finding in findings:
                lines.append(f"{finding.get('verdict', title)}: {finding['evidence']}")
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)
