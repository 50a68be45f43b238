"""Which ranks a folder holds, where their files are, and which export (text or db) will be read.

A rank is a PyTorch-NPU ``*_ascend_pt`` folder (rank id from ``profiler_info_<rank>.json``, as
msprof-analyze takes it, else from ``ascend_pytorch_profiler_<rank>.db`` or the ``rank`` of
``profiler_metadata.json``) or an msprof ``PROF_*/device_<n>`` folder (rank id from
``info.json.<n>``, the device id when the job had no rank). A folder without ranks but with
msprof-analyze's ``cluster_analysis_output`` is read as that output.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.rank_files import read_json

OUTPUT = "ASCEND_PROFILER_OUTPUT"
ANALYSIS_OUTPUT = "cluster_analysis_output"
MAX_DEPTH = 6  # msprof-analyze walks 5 levels below the folder it is given
_INFO = re.compile(r"^profiler_info_(\d+)\.json$")
_PT_DB = re.compile(r"^ascend_pytorch_profiler_(\d+)\.db$")
_DEVICE = re.compile(r"^device_(\d+)$")
_PROF_INFO = re.compile(r"^info\.json\.(\d+)$")


@dataclass
class RankDir:
    """One rank's folder and the kind of data in it."""

    rank: int
    path: Path
    kind: str                   # "pytorch" (an *_ascend_pt folder) or "msprof" (PROF_*/device_N)
    rank_from: str              # the file the rank id came from
    files: dict[str, Path] = field(default_factory=dict)   # role -> file present

    @property
    def has_db(self) -> bool:
        return "analysis_db" in self.files

    @property
    def has_text(self) -> bool:
        return "step_trace_csv" in self.files


@dataclass
class ClusterInput:
    """What :func:`find_ranks` found: rank folders, or msprof-analyze's output folder."""

    root: Path
    ranks: list[RankDir] = field(default_factory=list)
    analysis_output: Path | None = None


def find_ranks(root: Path) -> ClusterInput:
    """The ranks under ``root`` (sorted by rank id); a UserError when there are none or two share an id."""
    root = Path(root)
    if not root.is_dir():
        raise UserError("Not a folder", root, "Give the folder that holds the ranks' *_ascend_pt or PROF_* "
                                              "folders, or a cluster_analysis_output folder.")
    pt_dirs, prof_dirs, outputs = _walk(root)
    ranks = [_pytorch_rank(d) for d in pt_dirs]
    for prof in prof_dirs:
        ranks.extend(_msprof_ranks(prof))
    if ranks:
        _check_unique(ranks)
        return ClusterInput(root, sorted(ranks, key=lambda r: r.rank))
    if outputs:
        return ClusterInput(root, analysis_output=sorted(outputs, key=lambda p: len(p.parts))[0])
    raise UserError("No ranks in this folder: no *_ascend_pt, PROF_* or cluster_analysis_output folder found",
                    root, "Give the folder that holds one *_ascend_pt (or PROF_*) folder per rank, as "
                          "torch_npu or msprof wrote them.")


def _walk(root: Path) -> tuple[list[Path], list[Path], list[Path]]:
    pt_dirs, prof_dirs, outputs = [], [], []
    candidates = [root]
    for dirpath, dirnames, _files in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        if depth >= MAX_DEPTH:
            dirnames[:] = []
            continue
        dirnames.sort()
        candidates.extend(Path(dirpath) / d for d in dirnames)
    for path in candidates:
        name = path.name
        if name.endswith("_ascend_pt"):
            pt_dirs.append(path)
        elif name.startswith("PROF_"):
            prof_dirs.append(path)
        elif name == ANALYSIS_OUTPUT or (path == root and (path / "cluster_step_trace_time.csv").is_file()):
            outputs.append(path)
    return pt_dirs, prof_dirs, outputs


def _pytorch_rank(folder: Path) -> RankDir:
    out = folder / OUTPUT
    files = {role: out / name for role, name in (
        ("analysis_db", "analysis.db"), ("step_trace_csv", "step_trace_time.csv"),
        ("communication_json", "communication.json"), ("matrix_json", "communication_matrix.json"))
        if (out / name).is_file()}
    if (folder / "profiler_metadata.json").is_file():
        files["metadata"] = folder / "profiler_metadata.json"
    rank, rank_from = None, ""
    for entry in sorted(os.listdir(folder)):
        if m := _INFO.match(entry):
            rank, rank_from = int(m.group(1)), entry
            break
    if out.is_dir():
        for entry in sorted(os.listdir(out)):
            if m := _PT_DB.match(entry):
                files["profiler_db"] = out / entry
                if rank is None:
                    rank, rank_from = int(m.group(1)), f"{OUTPUT}/{entry}"
    if rank is None and "metadata" in files:
        args = (read_json(files["metadata"]) or {}).get("distributed_args") or {}
        if isinstance(args.get("rank"), int):
            rank, rank_from = args["rank"], "profiler_metadata.json distributed_args.rank"
    if rank is None:
        raise UserError("Cannot tell which rank this folder is: it has no profiler_info_<rank>.json, no "
                        "ascend_pytorch_profiler_<rank>.db and no rank in profiler_metadata.json", folder,
                        "Copy the rank's whole *_ascend_pt folder as torch_npu wrote it.")
    if not out.is_dir():
        raise UserError(f"The rank's folder has no {OUTPUT} folder (the profile was not parsed)", folder,
                        "Parse it first: torch_npu.profiler.profiler.analyse(path), then open the folder again.")
    return RankDir(rank, folder, "pytorch", rank_from, files)


def _msprof_ranks(prof: Path) -> list[RankDir]:
    ranks = []
    for device in sorted(p for p in prof.iterdir() if p.is_dir() and _DEVICE.match(p.name)):
        info = next((p for p in sorted(device.iterdir()) if _PROF_INFO.match(p.name)), None)
        device_id = int(_DEVICE.match(device.name).group(1))
        rank, rank_from = device_id, f"{device.name} (no info.json: device id)"
        if info is not None:
            value = (read_json(info) or {}).get("rank_id")
            if isinstance(value, int) and value >= 0:
                rank, rank_from = value, f"{device.name}/{info.name} rank_id"
            else:
                rank_from = f"{device.name}/{info.name} has no rank_id: device id"
        timelines = sorted((device / "timeline").glob("msprof_*.json")) + \
            sorted((prof / "mindstudio_profiler_output").glob("msprof_*.json"))
        files = {f"timeline_{i}": p for i, p in enumerate(timelines)}
        ranks.append(RankDir(rank, device, "msprof", rank_from, files))
    return ranks


def _check_unique(ranks: list[RankDir]) -> None:
    seen: dict[int, RankDir] = {}
    for rank in ranks:
        if rank.rank in seen:
            raise UserError(f"Two folders are rank {rank.rank}: {seen[rank.rank].path} and {rank.path}",
                            rank.path, "Open a folder that holds each rank once (one profiling run).")
        seen[rank.rank] = rank
