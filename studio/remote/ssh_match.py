"""``Match`` lines of an OpenSSH client configuration: which Studio honours and which it skips.

paramiko evaluates ``Match`` itself, but it *runs* ``Match exec`` commands (through the shell, with
no timeout, once per lookup pass) and counts criteria it does not know (``localnetwork``,
``tagged``, ``version``, ...) as matching. Studio never runs a command from a configuration file:
such a block is treated as not matching, and the caller tells the user it was skipped. Because
paramiko reads criteria case-sensitively and pairs parameters differently from Studio (``Match ALL
host exec host final`` is ``all`` + two ``host`` criteria here, but ``ALL host`` + ``exec host`` +
``final`` to paramiko), a line holding an ``exec`` token anywhere, in any case, is skipped whatever
the criteria around it. ``host``,
``originalhost``, ``user``, ``localuser``, ``all``, ``canonical`` and ``final`` are honoured.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

HONOURED = {"all", "canonical", "final", "host", "originalhost", "user", "localuser"}
NO_PARAMETER = {"all", "canonical", "final"}
NEVER_MATCHES = "Host !*"  # a block header no host name matches (what a skipped Match becomes)
_KEYWORD = re.compile(r"^\s*(\w+)(?:\s*=\s*|\s+)(.*)$")


@dataclass
class Criterion:
    """One ``[!]keyword [parameter]`` of a Match line."""

    keyword: str
    parameter: str | None
    negate: bool = False


@dataclass
class SkippedMatch:
    """A Match block Studio did not apply: where it is and why."""

    path: Path
    line: int
    text: str
    reason: str
    criteria: list[Criterion]

    def note(self) -> str:
        return f"{self.path}:{self.line}: `{self.text.strip()}` skipped: {self.reason}; its options were not applied"

    def may_apply_to(self, names: list[str]) -> bool:
        """False when its host/originalhost criteria rule all of ``names`` out (the note is noise then)."""
        for criterion in self.criteria:
            if criterion.keyword in ("host", "originalhost") and criterion.parameter:
                hit = any(_patterns_match(criterion.parameter, name) for name in names)
                if hit == criterion.negate:
                    return False
        return True


def keyword_of(line: str) -> tuple[str, str] | None:
    """``(keyword in lower case, value)`` of a configuration line, or None (blank, comment)."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    match = _KEYWORD.match(text)
    return (match.group(1).lower(), match.group(2).strip()) if match else None


def parse_criteria(value: str) -> list[Criterion] | None:
    """The criteria of a Match line's value, or None when they cannot be read."""
    try:
        tokens = shlex.split(value)
    except ValueError:
        return None
    criteria = []
    while tokens:
        word = tokens.pop(0)
        negate = word.startswith("!")
        keyword = word.lstrip("!").lower()
        parameter = None
        if keyword not in NO_PARAMETER:
            if not tokens:
                return None
            parameter = tokens.pop(0)
        criteria.append(Criterion(keyword, parameter, negate))
    return criteria


def holds_exec(value: str) -> bool:
    """True when any word of a Match line's value is ``exec`` (any case, negated or written
    ``exec=...``), whichever position it takes: another parser may pair the words differently
    and read that word as the criterion that runs a command."""
    words = value.split()
    try:
        words += shlex.split(value)
    except ValueError:
        pass  # unreadable quoting: the plain words still count
    return any(re.match(r"exec(=|$)", word.lstrip("!").lower()) for word in words)


_EXEC_REASON = "Match exec runs a command, and Studio never runs commands from the ssh configuration"


def skip_reason(criteria: list[Criterion] | None, value: str = "") -> str | None:
    """Why a Match line with these criteria (and this raw ``value``) is skipped, or None when
    Studio honours it."""
    if holds_exec(value):
        return _EXEC_REASON
    if criteria is None:
        return "its criteria cannot be read"
    keywords = [c.keyword for c in criteria]
    if "exec" in keywords:
        return _EXEC_REASON
    unknown = [k for k in keywords if k not in HONOURED]
    if unknown:
        return f"Studio does not evaluate Match {', '.join(dict.fromkeys(unknown))}"
    return None


def named_hosts(criteria: list[Criterion]) -> list[str]:
    """The patterns a Match line's (not negated) host and originalhost criteria name."""
    names = []
    for criterion in criteria:
        if criterion.keyword in ("host", "originalhost") and criterion.parameter and not criterion.negate:
            names += [p for p in criterion.parameter.split(",") if p and not p.startswith("!")]
    return names


def _patterns_match(parameter: str, name: str) -> bool:
    """An ssh_config pattern list (comma-separated, ``!`` negates) against ``name``: a negated
    pattern that matches rules the name out, as in OpenSSH's match_pattern_list."""
    hit = False
    for pattern in parameter.split(","):
        if pattern.startswith("!"):
            if fnmatch.fnmatchcase(name, pattern[1:]):
                return False
        elif fnmatch.fnmatchcase(name, pattern):
            hit = True
    return hit
