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

import posixpath
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
    """UserError for a glob that could leave the working folder or is not a plain pattern.

    A part that starts with ``.`` and holds a wildcard (``.?``, ``.*``, ``.[a-z]``, ``.*.``) is
    refused too: dash and bash before 5.2 let it match ``..``, so ``.?/secret`` would reach the
    folder above the working folder."""
    for glob in globs:
        parts = glob.split("/")
        reason = None
        if not glob or not _SAFE_GLOB.match(glob):
            reason = "only letters, digits, _ . - / @ + and the wildcards * ? [...] may be used (no spaces)"
        elif glob.startswith("/"):
            reason = "an absolute path leaves the working folder"
        elif ".." in parts:
            reason = "'..' leaves the working folder"
        elif any(p.startswith(".") and any(c in p for c in "*?[") for p in parts):
            reason = "a part starting with '.' and holding a wildcard can match '..' in the host's shell"
        if reason:
            raise UserError(f"fetch pattern {glob!r} is not usable: {reason}", where,
                            "Give patterns relative to the working folder, made of letters, digits, _ . - / and "
                            "the wildcards * ? [...], e.g. out/*.npy (no .., no spaces, no wildcard right after "
                            "a leading dot: write .cache/*.log, not .?ache/*.log).")


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
    """sh: the regular files matching ``globs`` in ``workdir`` (login folder when None), each as
    ``f=NAME`` then ``d=`` the real path of its folder (``cd -P``; empty when it cannot be entered),
    then ``cwd=`` the working folder's real path; NUL-separated."""
    cd = f"cd -P -- {shlex.quote(workdir)} || exit 3\n" if workdir else "cd -P . || exit 3\n"
    return (cd + "top=$(pwd -P)\n"
            f"for f in {' '.join(globs)}; do\n"
            "  if [ -f \"$f\" ] && [ ! -L \"$f\" ]; then\n"
            "    case $f in */*) d=${f%/*} ;; *) d=. ;; esac\n"
            "    r=$(cd -P -- \"$d\" 2>/dev/null && pwd -P) || r=\n"
            "    printf 'f=%s\\0d=%s\\0' \"$f\" \"$r\"\n"
            "  fi\n"
            "done\n"
            "printf 'cwd=%s\\0' \"$top\"")


@dataclass
class Listing:
    """What the host listed for the fetch patterns, judged: the files to bring back (relative to
    ``folder``) and those refused because a folder on their way is a symlink."""

    folder: str
    files: list[str] = field(default_factory=list)
    through_links: list[str] = field(default_factory=list)


def judge_listing(raw: bytes, where: str) -> Listing:
    """The files of a :func:`list_script` answer that lie inside the working folder.

    Every name must be relative and free of ``..`` (whatever the host's shell expanded, a name
    that leaves the working folder is an error, never a download); a file whose folder's real
    path is not the working folder's real path joined with its folder (a symlinked folder on the
    way) is set aside in ``through_links``."""
    entries = raw.decode("utf-8", "surrogateescape").split("\0")
    listing = Listing(next((e[4:] for e in entries if e.startswith("cwd=")), ""))
    if not listing.folder.startswith("/"):
        raise UserError("The host did not say where the run's working folder is", where,
                        "Check that the working folder exists and can be entered.")
    pairs = [(entries[i][2:], entries[i + 1][2:]) for i in range(len(entries) - 1)
             if entries[i].startswith("f=") and entries[i + 1].startswith("d=")]
    seen = set()
    for name, real in pairs:
        rel = _relative(name, where)
        if rel in seen:
            continue
        seen.add(rel)
        expected = posixpath.join(listing.folder, posixpath.dirname(rel)).rstrip("/") or "/"
        if real != expected:
            listing.through_links.append(rel)
        else:
            listing.files.append(rel)
    listing.files.sort()
    return listing


def _relative(name: str, where: str) -> str:
    """``name`` as a normalised relative path inside the working folder; UserError otherwise."""
    from studio.targets.transfer.safe_paths import escape_reason

    parts = [p for p in name.split("/") if p not in ("", ".")]
    rel = "/".join(parts)
    reason = "absolute paths are not allowed" if name.startswith("/") else escape_reason(rel)
    if reason:
        raise UserError(f"The host listed {name!r} for the fetch patterns, which is outside the working folder "
                        f"({reason}); nothing was downloaded", where,
                        "Fix the fetch patterns of the run configuration (relative, no '..').")
    return rel


def _landing(out: Path) -> None:
    """UserError unless ``out``'s parent (the workspace's ``runs`` folder) is a real folder: a
    symlink there would land the outputs elsewhere."""
    parent = out.parent
    if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
        raise UserError("The runs folder is a symlink (or not a folder): fetched outputs would land outside the "
                        "workspace", parent, "Remove it (Studio makes a real folder there).")


def fetch_outputs(target, workdir: str | None, globs: list[str], out: Path,
                  cancel: CancelToken | None = None, refused: list[str] | None = None
                  ) -> Generator[Progress, None, list[Path]]:
    """Copy the files matching ``globs`` in ``workdir`` on ``target`` into the new folder ``out``
    (under the workspace's ``runs`` folder); files reached through a symlinked folder on the
    target are not fetched: they are said in a Progress message and appended to ``refused``."""
    from studio.targets.transfer.fetch import download_folder

    check_fetch_globs(globs, "fetch")
    _landing(out)
    place = f"{target.where}:{workdir or '~'}"
    status, raw, err = target.run_script(list_script(workdir, globs), timeout=60)
    if status != 0:
        raise UserError(f"Cannot list the run's outputs in {workdir or 'the login folder'} on {target.where}: "
                        f"{err.decode(errors='replace').strip()}", place,
                        "Check the working folder of the run configuration.")
    listing = judge_listing(raw, place)
    if refused is not None:
        refused += listing.through_links
    if listing.through_links:
        shown = ", ".join(listing.through_links[:5]) + (" ..." if len(listing.through_links) > 5 else "")
        yield Progress(None, f"not fetched: {len(listing.through_links)} file(s) reached through a symlinked folder "
                             f"in {listing.folder} on {target.where} ({shown}); point the fetch patterns at real "
                             "folders inside the working folder")
    files = listing.files
    if len(files) > MAX_FILES:
        raise UserError(f"The fetch patterns match {len(files):,} files", "fetch",
                        f"Narrow them (at most {MAX_FILES:,} files are brought back).")
    if not files:
        yield Progress(None, f"no file matches {' '.join(globs)} in {listing.folder} on {target.where}")
        return []
    yield Progress(None, f"fetching {len(files)} output file(s) from {target.where}")
    final, _ = yield from download_folder(target, listing.folder, files, out.parent, cancel, name=out.name)
    return [final / f for f in files]
