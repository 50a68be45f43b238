"""The first divergence of a multi-rank msprobe dump, followed across ranks through communication calls.

A dump of a distributed job holds one folder per rank: ``rankN`` (or ``procNNNN`` when msprobe
ran without a rank, e.g. one process per device; msprobe's own compare finds nothing there), each
with its ``dump.json``. The golden and the target dumps are paired by folder name and compared
rank by rank; then, in each rank, the **first divergent call** is the first call in the target's
call order that diverges under the chosen rule:

* ``studio`` (the default): a call with an argument (input or output) that no longer agrees by
  the bound msprobe's own rules use for "the inputs agree": a norm relative error over 10 %
  (statistics), a one-thousandth error ratio of 90 % or less (tensors) — or whose verdict is
  error (:mod:`studio.tools.accuracy.msprobe_compare`). Inputs count: data that arrives
  already different is where a rank's divergence shows first;
* ``msprobe`` (``msprobe compare -da``): a call with an output whose Max, Min, Mean or Norm
  differs from the golden one by over 50 % (relative; a golden 0 never counts), outputs 4 and 5
  of ``npu_fusion_attention`` left out.

Ranks exchange data only through communication calls (``Distributed.*``: send/recv, all_reduce,
all_gather, broadcast ...), so a divergence reaches another rank only through one. Each rank's
first divergence is placed by the number of communication calls that rank finished before it,
and the phase: a computation or a communication call whose inputs already diverge is *before
communication*; a communication call whose inputs agree but whose outputs do not is *during
communication* (the data came in from another rank). The rank that diverged first is the one
with the fewest communication calls before its divergence, *before* winning over *during* at the
same count, the lower rank number last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import Job, Progress
from studio.tools.accuracy.msprobe_compare import (
    ERROR,
    IN_THRESHOLD,
    RATIO_IN,
    MsprobeComparison,
    TensorRow,
    iter_compare_msprobe,
)

RULES = ("studio", "msprobe")
MSPROBE_DA_THRESHOLD = 0.5
_DA_IGNORED_OUTPUTS = {"npu_fusion_attention": {4, 5}}
_RANK_DIR = re.compile(r"^(rank|proc)(\d+)$")


@dataclass
class RankDivergence:
    """One rank's first divergent call (None when nothing diverged there)."""

    rank: str
    api: str | None
    phase: str | None                 # "before communication", "during communication"
    communications_before: int | None
    reason: str | None
    result: MsprobeComparison = field(repr=False, default=None)

    __json_skip__ = ("result",)


@dataclass
class RanksDivergence:
    """Every rank's first divergence and the rank (and call) that diverged first."""

    rule: str
    ranks: list[RankDivergence]

    @property
    def first(self) -> RankDivergence | None:
        """The rank that diverged first (see the module docstring)."""
        diverged = [r for r in self.ranks if r.api is not None]
        if not diverged:
            return None
        return min(diverged, key=lambda r: (r.communications_before, r.phase != "before communication",
                                            _rank_number(r.rank)))

    def __json__(self) -> dict:
        first = self.first
        return {"rule": self.rule, "first": None if first is None else
                {"rank": first.rank, "api": first.api, "phase": first.phase,
                 "communications_before": first.communications_before, "reason": first.reason},
                "ranks": self.ranks}

    def __str__(self) -> str:
        first = self.first
        lines = [f"first divergence across {len(self.ranks)} ranks ({self.rule} rule): "
                 + ("none" if first is None else f"{first.rank} {first.api}, {first.phase} "
                    f"(after {first.communications_before} communication call(s)): {first.reason}")]
        for rank in self.ranks:
            lines.append(f"  {rank.rank}: " + ("no divergence" if rank.api is None else
                                              f"{rank.api}, {rank.phase}, after {rank.communications_before} "
                                              f"communication call(s)"))
        return "\n".join(lines)


def rank_folders(root: Path) -> dict[str, Path]:
    """``rankN`` / ``procNNNN`` folders holding a dump.json, under ``root`` (itself, or a ``stepN`` below it)."""
    root = Path(root)
    found: dict[str, Path] = {}
    for candidate in [root, *sorted(root.glob("*")), *sorted(root.glob("*/*"))]:
        if candidate.is_dir() and _RANK_DIR.match(candidate.name) and (candidate / "dump.json").is_file():
            found.setdefault(candidate.name, candidate)
    if not found:
        raise UserError("No rankN or procNNNN folder with a dump.json", root,
                        "Give the folder msprobe dumped into (dump_path or its stepN folder).")
    return dict(sorted(found.items(), key=lambda item: _rank_number(item[0])))


def one_rank_dump(path: Path) -> Path | None:
    """The dump.json inside an msprobe ``stepN`` (or dump_path) folder that holds one rank, for a plain
    compare; None when ``path`` holds no rank folder. Several ranks are refused with the way on
    (``--ranks``, or one rank's folder)."""
    path = Path(path)
    if not path.is_dir() or (path / "dump.json").is_file():
        return None
    steps = sorted(d.name for d in path.glob("step*") if d.is_dir() and any(d.glob("*/dump.json")))
    if len(steps) > 1:  # msprobe's dump_path: one folder per step
        raise UserError(f"The folder holds {len(steps)} steps ({', '.join(steps[:6])})", path,
                        f"Give one step's folder, e.g. {path / steps[0]}.")
    try:
        ranks = rank_folders(path)
    except UserError:
        return None
    if len(ranks) > 1:
        shown = ", ".join(list(ranks)[:6]) + (" ..." if len(ranks) > 6 else "")
        raise UserError(f"The folder holds the dumps of {len(ranks)} ranks ({shown})", path,
                        f"Add --ranks to compare every rank, or give one rank's folder, e.g. "
                        f"{next(iter(ranks.values()))}.")
    return next(iter(ranks.values())) / "dump.json"


def first_divergence_across_ranks(golden_root: Path, target_root: Path, rule: str = "studio") -> Job[RanksDivergence]:
    """Compare every rank pair and find the first divergence (see the module docstring)."""
    if rule not in RULES:
        raise UserError(f"Unknown divergence rule {rule!r}", None, f"Use one of: {', '.join(RULES)}.")
    golden, target = rank_folders(golden_root), rank_folders(target_root)
    common = [name for name in target if name in golden]
    if not common:
        raise UserError("The two dumps have no rank folder in common", f"{golden_root} / {target_root}",
                        f"Golden has {', '.join(golden)}; target has {', '.join(target)}.")
    ranks = []
    for number, name in enumerate(common):
        yield Progress(number / len(common), f"comparing {name}")
        result = yield from iter_compare_msprobe(golden[name] / "dump.json", target[name] / "dump.json")
        ranks.append(_rank_divergence(name, result, rule))
    return RanksDivergence(rule, ranks)


def is_communication(api: str) -> bool:
    """A call that exchanges data with other ranks (msprobe names them ``Distributed.*``)."""
    return api.split(".", 1)[0] == "Distributed"


def _rank_divergence(name: str, result: MsprobeComparison, rule: str) -> RankDivergence:
    rows_of: dict[str, list[TensorRow]] = {}
    for row in result.rows:
        rows_of.setdefault(row.target_api, []).append(row)
    communications = 0
    for call in result.target.calls:
        rows = rows_of.get(call.name, [])
        bad = [r for r in rows if _diverges(r, call.name, rows, rule)]
        if bad:
            inputs_bad = any(not r.is_output for r in bad)
            phase = "during communication" if is_communication(call.name) and not inputs_bad \
                else "before communication"
            return RankDivergence(name, call.name, phase, communications, _reason(bad[0], rule), result)
        if is_communication(call.name):
            communications += 1
    return RankDivergence(name, None, None, None, None, result)


def _diverges(row: TensorRow, api: str, rows: list[TensorRow], rule: str) -> bool:
    if rule == "studio":
        ratio = row.tensor.get("One Thousandth Err Ratio") if row.tensor else None
        return (row.result == ERROR or (row.norm_relative is not None and row.norm_relative > IN_THRESHOLD)
                or (isinstance(ratio, float) and ratio <= RATIO_IN))
    if not row.is_output:
        return False
    parts = api.split(".")
    index = [r for r in rows if r.is_output].index(row)
    if len(parts) >= 4 and index in _DA_IGNORED_OUTPUTS.get(parts[-3], set()):
        return False
    return any(value is not None and value > MSPROBE_DA_THRESHOLD for value in _relative_errors(row))


def _relative_errors(row: TensorRow) -> list[float | None]:
    """|target - golden| / |golden| of Max, Min, Mean, Norm (None where the golden value is 0 or absent)."""
    out = []
    for key in ("Max", "Min", "Mean", "Norm"):
        g = row.golden.stats.get(key) if row.golden else None
        t = row.target.stats.get(key) if row.target else None
        out.append(abs((t - g) / g) if g and t is not None and g == g and t == t else None)
    return out


def _reason(row: TensorRow, rule: str) -> str:
    if rule == "studio":
        if row.message:
            return f"{row.slot}: {row.message}"
        if row.tensor and isinstance(row.tensor.get("One Thousandth Err Ratio"), float):
            return f"{row.slot}: one-thousandth error ratio {row.tensor['One Thousandth Err Ratio']:.1%}"
        return f"{row.slot}: norm differs by {row.norm_relative:.1%}"
    worst = max((v for v in _relative_errors(row) if v is not None), default=0.0)
    return f"{row.slot}: a statistic differs by {worst:.1%} (over {MSPROBE_DA_THRESHOLD:.0%})"


def _rank_number(name: str) -> int:
    match = _RANK_DIR.match(name)
    return int(match.group(2)) if match else 1 << 30
