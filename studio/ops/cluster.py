"""The cluster report of ranks whose folders stay on their hosts (``studio profile cluster --on
HOST:DIR --on HOST:DIR ...``): Studio's engine on every host reads that host's ranks in place, all
hosts at once, and sends back only what the report is made of (``profile cluster DIR --parts``:
step rows, raw links, bandwidth, metadata; kilobytes where the folders are gigabytes). The report
is then assembled here from every host's parts, so links between ranks on different hosts are
placed as if the folders were side by side.
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
    """Read the ranks of ``folder``, a folder on the host, into their parts."""

    COMMAND = ("profile", "cluster")

    folder: str

    def to_argv(self) -> list[str]:
        # Never an option of the host's engine, whatever the folder is called (options such as
        # --json follow this argv, so no "--" can end them here): a leading "-" gets "./".
        folder = f"./{self.folder}" if self.folder.startswith("-") else self.folder
        return [folder, "--parts"]

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


def run(sources: list[tuple[str, str]], context, cancel: CancelToken | None = None
        ) -> Generator[Progress, None, Result]:
    """Read every ``(host, folder)`` on its host, all at once, and assemble one report."""
    import json

    from studio.tools.profiler.cluster.engine import assemble

    cancel = cancel or CancelToken()
    done: dict[int, object] = {}
    errors: dict[int, BaseException] = {}

    def one(index: int, host: str, folder: str) -> None:
        try:
            done[index] = run_job(run_on_engine(Request(folder), host, context, cancel))
        except BaseException as exc:  # noqa: BLE001 - reported below, in host order
            errors[index] = exc
            cancel.cancel()  # the other hosts stop too: the report needs every rank

    threads = [threading.Thread(target=one, args=(i, host, folder), daemon=True)
               for i, (host, folder) in enumerate(sources)]
    for thread in threads:
        thread.start()
    yield Progress(None, f"reading the ranks in place on {', '.join(h for h, _ in sources)}")
    for thread in threads:
        thread.join()
    if errors:
        from studio.core.errors import Cancelled

        # the host that failed, not one stopped because of it
        failed = [i for i in sorted(errors) if not isinstance(errors[i], Cancelled)] or sorted(errors)
        first = errors[failed[0]]
        if isinstance(first, UserError):
            raise UserError(f"{sources[failed[0]][0]}: {first.what}", first.where, first.fix) from first
        raise first
    cancel.raise_if_cancelled()
    parts, hosts, seen = [], [], {}
    for index, (host, folder) in enumerate(sources):
        run_ = done[index]
        part = run_.data
        for rank in part["ranks"]:
            if rank["rank"] in seen:
                raise UserError(f"Rank {rank['rank']} is both on {seen[rank['rank']]} and on {host}", "--on",
                                "Give each host the folder of its own ranks only.")
            seen[rank["rank"]] = host
            for row in rank["steps"]:
                row["source"] = f"{host}:{row['source']}"
        parts.append(part)
        ran_on: RanOn = run_.ran_on
        hosts.append({"host": host, "folder": folder, "ranks": [r["rank"] for r in part["ranks"]],
                      "bytes": len(json.dumps(part)), "run_seconds": ran_on.run_seconds,
                      "engine_reused": ran_on.engine_reused})
    report = assemble(parts)
    report.source["hosts"] = hosts
    report.source["note"] = ("; ".join(filter(None, [report.source.get("note", ""),
                                                     "each host's ranks were read in place, all hosts at once; "
                                                     "only their step rows, links and bandwidth came back"])))
    return Result(report, hosts)
