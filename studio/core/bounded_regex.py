"""Running a regular expression a user wrote, with a time limit.

Python's ``re`` backtracks: a pattern with nested quantifiers such as ``(\\w+\\s?)+:`` takes
exponential time on a line that almost matches, and a match cannot be interrupted (it holds the
interpreter lock, signals wait until it returns). So a user's pattern runs in a worker process
(:mod:`studio.core.workers`) that is killed when it takes longer than :data:`LIMIT_S`; the refusal
names the pattern, where it is set and how to write it so it cannot backtrack. Where no worker can
be started (a packaged build), patterns with a quantified group that itself holds a quantifier are
refused before they run, and the rest run here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, run_job

LIMIT_S = 10.0  # for all the lines together; a sane pattern takes milliseconds on a run's output
# a group holding + or * (or {n,}) that is itself repeated: the shape of catastrophic backtracking
_NESTED = re.compile(r"\((?:[^()\\]|\\.)*(?:[+*]|\{\d*,\d*\})(?:[^()\\]|\\.)*\)(?:[+*]|\{\d*,\d*\})")
_FIX = ("Make the repeated parts unambiguous: no group that repeats something which itself repeats, e.g. "
        "(?P<name>\\w+): (?P<value>[-+.\\deE]+) instead of (?P<name>(\\w+\\s?)+): ...")


class _Deadline(CancelToken):
    """A cancel token that cancels itself once ``seconds`` have passed."""

    def __init__(self, seconds: float):
        super().__init__()
        self.end = time.monotonic() + seconds
        self.expired = False

    def raise_if_cancelled(self) -> None:
        if not self.expired and time.monotonic() > self.end:
            self.expired = True
            self.cancel()
        super().raise_if_cancelled()


def match_lines(pattern: str, lines: list[str], cancel: CancelToken | None = None) -> Generator[None, None, list]:
    """Job (run in the worker): the ``groupdict()`` of every match of ``pattern``, line by line."""
    compiled = re.compile(pattern)
    return [[m.groupdict() for m in compiled.finditer(line)] for line in lines]
    yield  # a job generator, as workers run them


def finditer_bounded(pattern: str, lines: list[str], where: str, limit_s: float | None = None) -> list[list[dict]]:
    """For each line, the ``groupdict()`` of each match of the user's ``pattern``; a UserError
    naming ``where`` when matching takes longer than ``limit_s`` seconds."""
    from studio.core.workers import WorkerUnavailable, run_in_worker

    limit_s = LIMIT_S if limit_s is None else limit_s
    deadline = _Deadline(limit_s)
    try:
        return run_job(run_in_worker("studio.core.bounded_regex:match_lines", pattern, lines, cancel=deadline),
                       deadline)
    except Cancelled:
        if not deadline.expired:
            raise
        raise UserError(f"The pattern {pattern!r} took more than {limit_s:g} s on {len(lines):,} line(s) and was "
                        "stopped (it backtracks without end on some line)", where, _FIX) from None
    except WorkerUnavailable:
        if _NESTED.search(pattern):
            raise UserError(f"The pattern {pattern!r} repeats a group that itself repeats, which can take "
                            "forever on a line that almost matches", where, _FIX) from None
        return run_job(match_lines(pattern, lines))
