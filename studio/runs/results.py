"""What a run leaves behind: the output files it names (fetched back) and the metrics it prints.

A run configuration may name output files as globs relative to its working folder
(``fetch = ["out/*.npy", "result/*.png"]``): after the run they are listed on the target, in the
working folder, and copied into a new folder beside the project (``<workspace>/runs/<name>_<time>``),
whatever the exit code (a failed run's log is worth reading). The app's printed metrics — lines such
as ``image: 0001.png, dice: 0.93, iou: 0.87`` or ``Cross Valid dice coeff is: 0.91`` — become a
table by a regular expression with the groups ``name`` and ``value`` (``metrics = "..."``; the
default reads ``name: value``, ``name = value`` and ``name is value``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress

# A name is one or more words starting at a word boundary (not inside "img_2.jpg"); the value is a
# number not followed by more of a word or a file name ("0001.png" is no metric).
DEFAULT_METRICS = (r"(?<![\w.])(?P<name>[A-Za-z]\w*(?: [A-Za-z]\w*)*?)\s*(?:\bis\b:?|:|=)\s*"
                   r"(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?!\w|\.\w)")
_LABEL = re.compile(r"(?P<name>[A-Za-z]\w*)\s*[:=]\s*(?P<value>[^\s,;]+)")
_SAFE_GLOB = re.compile(r"^[A-Za-z0-9_.*?\[\]/@+-]+$")  # no spaces or shell syntax: expanded by sh unquoted
MAX_FILES = 10000


def check_fetch_globs(globs: list[str], where: str) -> None:
    """UserError for a glob that could leave the working folder or is not a plain pattern."""
    for glob in globs:
        parts = glob.split("/")
        if not glob or glob.startswith("/") or ".." in parts or not _SAFE_GLOB.match(glob):
            raise UserError(f"fetch pattern {glob!r} is not usable", where,
                            "Give patterns relative to the working folder, made of letters, digits, _ . - / and "
                            "the wildcards * ? [...], e.g. out/*.npy (no .., no spaces).")


def check_metrics_pattern(pattern: str, where: str) -> re.Pattern:
    """The compiled metrics pattern; UserError when it does not compile or lacks its groups."""
    try:
        compiled = re.compile(pattern or DEFAULT_METRICS)
    except re.error as exc:
        raise UserError(f"metrics pattern does not compile: {exc}", where,
                        "Give a Python regular expression with the groups (?P<name>...) and (?P<value>...).") from exc
    missing = {"name", "value"} - set(compiled.groupindex)
    if missing:
        raise UserError(f"metrics pattern has no group {', '.join(sorted(missing))}", where,
                        "Name the groups: (?P<name>...) for the metric, (?P<value>...) for its number.")
    return compiled


@dataclass
class MetricRow:
    """One printed line that holds metrics: its label (e.g. the image), line number and values."""

    line: int
    label: str
    values: dict[str, float]


@dataclass
class MetricsTable:
    """The metrics a run printed, one row per line, columns in the order they first appear."""

    columns: list[str] = field(default_factory=list)
    rows: list[MetricRow] = field(default_factory=list)
    __json_extra__ = ("means",)  # studio.core.serial: written after the fields, ignored when read

    def means(self) -> dict[str, float]:
        """The mean of each column over the rows that have it (only columns seen on 2+ rows)."""
        out = {}
        for column in self.columns:
            values = [row.values[column] for row in self.rows if column in row.values]
            if len(values) >= 2:
                out[column] = sum(values) / len(values)
        return out


def parse_metrics(lines: list[str], pattern: str = "") -> MetricsTable:
    """The metrics in ``lines`` by ``pattern`` (default :data:`DEFAULT_METRICS`)."""
    compiled = check_metrics_pattern(pattern, "metrics")
    if pattern and pattern != DEFAULT_METRICS:  # the user's pattern may backtrack forever: time-limited
        from studio.core.bounded_regex import finditer_bounded

        found = finditer_bounded(pattern, lines, "the run configuration's metrics pattern")
    else:
        found = [[m.groupdict() for m in compiled.finditer(line)] for line in lines]
    table = MetricsTable()
    for number, (line, matches) in enumerate(zip(lines, found), start=1):
        values: dict[str, float] = {}
        for match in matches:
            if match.get("name") is None:  # an optional group that did not take part
                continue
            name = " ".join(match["name"].split())
            try:
                values[name] = float(match["value"])
            except (TypeError, ValueError, OverflowError):
                continue
        if not values:
            continue
        label = next((f"{m.group('name')} {m.group('value')}" for m in _LABEL.finditer(line)
                      if not _is_number(m.group("value"))), f"line {number}")
        for name in values:
            if name not in table.columns:
                table.columns.append(name)
        table.rows.append(MetricRow(number, label, values))
    return table


def _is_number(text: str) -> bool:
    try:
        float(text.rstrip(".%,;"))
    except ValueError:
        return False
    return True


def list_script(workdir: str | None, globs: list[str]) -> str:
    """sh: the regular files matching ``globs`` in ``workdir`` (login folder when None), NUL-separated."""
    cd = f"cd -- {shlex.quote(workdir)} || exit 3\n" if workdir else ""
    return (cd + f"for f in {' '.join(globs)}; do "
            "if [ -f \"$f\" ] && [ ! -L \"$f\" ]; then printf '%s\\0' \"$f\"; fi; done; printf 'cwd=%s\\0' \"$(pwd -P)\"")


def fetch_outputs(target, workdir: str | None, globs: list[str], out: Path,
                  cancel: CancelToken | None = None) -> Generator[Progress, None, list[Path]]:
    """Copy the files matching ``globs`` in ``workdir`` on ``target`` into the new folder ``out``."""
    from studio.targets.transfer.fetch import download_folder

    check_fetch_globs(globs, "fetch")
    status, raw, err = target.run_script(list_script(workdir, globs), timeout=60)
    if status != 0:
        raise UserError(f"Cannot list the run's outputs in {workdir or 'the login folder'} on {target.where}: "
                        f"{err.decode(errors='replace').strip()}", f"{target.where}:{workdir or '~'}",
                        "Check the working folder of the run configuration.")
    entries = [e for e in raw.decode("utf-8", "surrogateescape").split("\0") if e]
    folder = next((e[4:] for e in entries if e.startswith("cwd=")), workdir or "")
    files = sorted({e.removeprefix("./") for e in entries if not e.startswith("cwd=")})
    if len(files) > MAX_FILES:
        raise UserError(f"The fetch patterns match {len(files):,} files", "fetch",
                        f"Narrow them (at most {MAX_FILES:,} files are brought back).")
    if not files:
        yield Progress(None, f"no file matches {' '.join(globs)} in {folder} on {target.where}")
        return []
    yield Progress(None, f"fetching {len(files)} output file(s) from {target.where}")
    final, _ = yield from download_folder(target, folder, files, out.parent, cancel, name=out.name)
    return [final / f for f in files]
