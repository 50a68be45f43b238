"""Find the newest NPU dump tree in a listing of a dump_path.

The runtime writes ``{dump_path}/{YYYYMMDDhhmmss}/{device_id}/{model_name}/{model_id}/{data_index}/``
with one file per op (``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}``; ascend_formats.md
§2.2). Each run adds a timestamp folder; each execution of the model a data_index. This module is a
pure function over a listing (paths relative to dump_path, as ``find -type f -printf '%P\\n'``
prints them), so it works the same for a local folder and a remote one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from studio.core.errors import UserError

_STAMP = re.compile(r"\d{14}")


@dataclass
class DumpTree:
    """One ``{timestamp}/{device}/{model}/{model_id}/{index}`` folder and its files."""

    dump_path: str
    timestamp: str
    device: str
    model: str
    model_id: str
    index: str
    files: list[str] = field(default_factory=list)  # names inside the folder
    others: int = 0  # how many other candidate folders the listing had

    @property
    def relative(self) -> str:
        """The folder relative to dump_path."""
        return "/".join((self.timestamp, self.device, self.model, self.model_id, self.index))

    @property
    def path(self) -> str:
        """The folder's full path."""
        return f"{self.dump_path.rstrip('/')}/{self.relative}"


def find_newest_dump(listing: list[str], dump_path: str, model: str | None = None) -> DumpTree:
    """The newest run's tree: latest timestamp, then the highest model id and data index (the last
    execution). ``model`` restricts it to one model name. UserError when the listing has none."""
    groups: dict[tuple, list[str]] = {}
    for entry in listing:
        parts = entry.strip("/").split("/")
        if len(parts) != 6 or not _STAMP.fullmatch(parts[0]):
            continue
        if not (parts[1].isdigit() and parts[3].isdigit() and parts[4].isdigit()):
            continue
        if model is not None and parts[2] != model:
            continue
        groups.setdefault(tuple(parts[:5]), []).append(parts[5])
    if not groups:
        models = sorted({p.split("/")[2] for p in listing if len(p.strip("/").split("/")) == 6})
        where = f"{dump_path}/{{YYYYMMDDhhmmss}}/{{device}}/{model or '{model}'}/{{model_id}}/{{index}}/"
        fix = ("The run wrote dumps for other model names: " + ", ".join(models) + "; set model_name to one of them."
               if model and models else
               "Check that the app loaded acl.json (aclInit or aclmdlSetDump with its path), that dump_path exists "
               "and is writable on the host, and that the model ran.")
        raise UserError("No NPU dump files were found", where, fix)
    key = max(groups, key=lambda k: (k[0], int(k[3]), int(k[4]), k[1], k[2]))
    return DumpTree(dump_path, *key, files=sorted(groups[key]), others=len(groups) - 1)
