"""The cluster report of ranks whose folders stay on their hosts (``studio profile cluster --on
HOST:DIR --on HOST:DIR ...``): Studio's engine on every host reads that host's ranks in place, all
hosts at once, and sends back only what the report is made of (``profile cluster DIR --parts``:
step rows, raw links, bandwidth, metadata; kilobytes where the folders are gigabytes). The report
is then assembled here from every host's parts, so links between ranks on different hosts are
placed as if the folders were side by side.

``--comm`` and ``--free`` run the same way. The free gaps are each rank's own: every host labels
its ranks' gaps and sends the labelled gaps back. The collective report needs the ranks side by
side: every host sends its ranks' op rows and op spans; the causes of the slow ops are then worked
out here, asking each host only for the kernels and tasks the verdicts rest on
(:mod:`studio.tools.profiler.cluster.host_causes`), all hosts at once, round by round.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from dataclasses import dataclass, field

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress, run_job
from studio.ops.engine import RanOn, run_on_engine


@dataclass
class Request:
    """Read the ranks of ``folder``, a folder on the host, into their parts (``mode``: "parts" for
    the step split and matrix, "comm" or "free" for those reports; ``ask``: questions to answer)."""

    COMMAND = ("profile", "cluster")

    folder: str
    mode: str = "parts"
    ask: str | None = None

    def to_argv(self) -> list[str]:
        # Never an option of the host's engine, whatever the folder is called (options such as
        # --json follow this argv, so no "--" can end them here): a leading "-" gets "./".
        folder = f"./{self.folder}" if self.folder.startswith("-") else self.folder
        argv = [folder, "--parts"] + ([f"--{self.mode}"] if self.mode != "parts" else [])
        return argv + (["--ask", self.ask] if self.ask else [])

    def for_host(self, paths) -> Request:
        return self  # the folder is the host's own: nothing goes up, nothing comes back but the JSON


@dataclass
class Result:
    """The assembled report, and where each host's share was read."""

    report: object  # ClusterReport
    hosts: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        from studio.core.serial import to_json

        return to_json(self.report)

    def text(self) -> str:
        lines = [str(self.report)]
        lines += [f"(ranks {', '.join(map(str, h['ranks']))} read in place on {h['host']}:{h['folder']}, "
                  f"{h['bytes']:,} bytes back in {h['run_seconds']:.1f} s)" for h in self.hosts]
        return "\n".join(lines)


def parse_on(values: list[str]) -> list[tuple[str, str]]:
    """``HOST:DIR`` values as (host, folder); a UserError naming a malformed one. A folder starting
    with ``-`` is refused (it would read as an option); ``~`` / ``~/...`` is the home on the host,
    expanded there by the engine (no shell sees the folder)."""
    out = []
    for value in values:
        host, sep, folder = value.partition(":")
        if not sep or not host or not folder:
            raise UserError(f"--on {value!r} is not HOST:DIR", "--on",
                            "Give the host's name (studio ssh list) and its folder of ranks: --on box:/data/prof")
        if folder.startswith("-"):
            raise UserError(f"--on {value!r}: the folder {folder!r} starts with '-', which would read as an option",
                            "--on", f"Give the folder's full path (--on {host}:/path/to/ranks) or ./{folder}.")
        if folder.startswith("~") and not (folder == "~" or folder.startswith("~/")):
            raise UserError(f"--on {value!r}: only ~ or ~/... (your home on the host) is expanded", "--on",
                            f"Give the folder's full path: --on {host}:/home/USER/...")
        out.append((host, folder))
    if len({h for h, _ in out}) < len(out):
        raise UserError("A host is named twice in --on", "--on", "Give each host once, with the folder of its ranks.")
    return out


def run(sources: list[tuple[str, str]], context, cancel: CancelToken | None = None, mode: str = "parts",
        target: int | None = None, top: int = 10) -> Generator[Progress, None, Result]:
    """Read every ``(host, folder)`` on its host, all at once, and assemble one report (``mode``:
    "parts" the cluster report, "comm" the collective report, "free" the labelled free gaps)."""
    import json

    cancel = cancel or CancelToken()
    yield Progress(None, f"reading the ranks in place on {', '.join(h for h, _ in sources)}")
    runs = _on_hosts({i: (host, Request(folder, mode)) for i, (host, folder) in enumerate(sources)}, context, cancel)
    parts, hosts, seen = [], [], {}
    for index, (host, folder) in enumerate(sources):
        part = runs[index].data
        ranks = part["ranks"]
        for rank in ranks:
            if rank["rank"] in seen:
                raise UserError(f"Rank {rank['rank']} is both on {seen[rank['rank']]} and on {host}", "--on",
                                "Give each host the folder of its own ranks only.")
            seen[rank["rank"]] = host
        parts.append(part)
        ran_on: RanOn = runs[index].ran_on
        hosts.append({"host": host, "folder": folder, "ranks": [r["rank"] for r in ranks],
                      "bytes": len(json.dumps(part)), "run_seconds": ran_on.run_seconds,
                      "engine_reused": ran_on.engine_reused})
    if mode == "free":
        return Result(_free_report(parts, sources, top), hosts)
    if mode == "comm":
        report = yield from _comm_report(parts, sources, hosts, context, cancel, target, top)
        return Result(report, hosts)
    return Result(_cluster_report(parts, sources, hosts), hosts)


def _on_hosts(requests: dict[int, tuple[str, Request]], context, cancel: CancelToken) -> dict:
    """Each ``index -> (host, request)`` run on its host's engine, all at once; the first host's
    failure raised (not that of a host stopped because of it)."""
    done: dict[int, object] = {}
    errors: dict[int, BaseException] = {}

    def one(index: int, host: str, request: Request) -> None:
        try:
            done[index] = run_job(run_on_engine(request, host, context, cancel))
        except BaseException as exc:  # noqa: BLE001 - reported below, in host order
            errors[index] = exc
            cancel.cancel()  # the other hosts stop too: the report needs every rank

    threads = [threading.Thread(target=one, args=(i, host, request), daemon=True)
               for i, (host, request) in requests.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        from studio.core.errors import Cancelled

        failed = [i for i in sorted(errors) if not isinstance(errors[i], Cancelled)] or sorted(errors)
        first = errors[failed[0]]
        if isinstance(first, UserError):
            raise UserError(f"{requests[failed[0]][0]}: {first.what}", first.where, first.fix) from first
        raise first
    cancel.raise_if_cancelled()
    return done


def _cluster_report(parts: list[dict], sources: list[tuple[str, str]], hosts: list[dict]):
    from studio.tools.profiler.cluster.engine import assemble

    for part, (host, _folder) in zip(parts, sources):
        for rank in part["ranks"]:
            for row in rank["steps"]:
                row["source"] = f"{host}:{row['source']}"
    report = assemble(parts)
    report.source["hosts"] = hosts
    report.source["note"] = ("; ".join(filter(None, [report.source.get("note", ""),
                                                     "each host's ranks were read in place, all hosts at once; "
                                                     "only their step rows, links and bandwidth came back"])))
    return report


def _free_report(parts: list[dict], sources: list[tuple[str, str]], top: int):
    """One report of every host's labelled gaps, in rank order (as the folders side by side give it)."""
    from studio.tools.profiler.cluster.free_gaps import FreeReport

    report = FreeReport(top=top)
    ranks = sorted(r["rank"] for part in parts for r in part["ranks"])
    for part, (host, _folder) in zip(parts, sources):
        report.rank_folders.update({rank: f"{host}:{folder}" for rank, folder in part["rank_folders"].items()})
        report.warnings.extend(f"{host}: {w}" for w in part["warnings"])
    for key in ("gaps", "totals", "ranks"):
        rows = [row for part in parts for row in part[key]]
        setattr(report, key, sorted(rows, key=lambda r: ranks.index(r["rank"])))  # stable: each rank's order kept
    report.rank_folders = dict(sorted(report.rank_folders.items(), key=lambda kv: int(kv[0])))
    return report


def _comm_report(parts: list[dict], sources: list[tuple[str, str]], hosts: list[dict], context,
                 cancel: CancelToken, target: int | None, top: int) -> Generator[Progress, None, object]:
    """The collective report of every host's parts, the hosts asked round by round for what the
    causes of the slow ops rest on."""
    import json

    from studio.tools.profiler.cluster.bottleneck_sources import Pending
    from studio.tools.profiler.cluster.comm_report import assemble_comm
    from studio.tools.profiler.cluster.host_causes import HostRank

    stand_ins, host_of = {}, {}
    for index, part in enumerate(parts):
        for rank in part["ranks"]:
            rank["folder"] = f"{sources[index][0]}:{rank['folder']}"
            if "cause_source" in rank:
                stand_ins[rank["rank"]] = HostRank(rank["rank"], rank["cause_source"], rank["spans"])
                host_of[rank["rank"]] = index
    for round_ in range(1, 20):
        try:
            report = assemble_comm(parts, target, top, stand_ins)
            break
        except Pending:
            asked: dict[int, list] = {}
            for rank, stand_in in stand_ins.items():
                asked.setdefault(host_of[rank], []).extend((rank, q) for q in stand_in.questions.items())
            yield Progress(None, f"asking {len(asked)} host(s) for the kernels and tasks of the slow collectives "
                                 f"(round {round_})")
            runs = _on_hosts({i: (sources[i][0], Request(sources[i][1], "comm", json.dumps([q for _r, (_k, q) in qs])))
                              for i, qs in asked.items()}, context, cancel)
            for i, qs in asked.items():
                hosts[i]["bytes"] += len(json.dumps(runs[i].data))
                hosts[i]["run_seconds"] += runs[i].ran_on.run_seconds
                for (rank, (key, _q)), value in zip(qs, runs[i].data):
                    stand_ins[rank].answers[key] = value
                    stand_ins[rank].questions.pop(key, None)
    else:
        raise UserError("The hosts' answers never settled the causes of the slow collectives", "--on / --comm",
                        "Copy the ranks' folders here and run --comm on them.")
    return report
