"""Exclude patterns in gitignore syntax, matched against ``/``-separated relative paths.

Each pattern is translated by ``pathspec`` (gitignore(5): ``#`` comments, ``!`` negation where the
last matching pattern wins, ``/`` anchoring, ``*``/``?``/``**``, ``[...]`` classes, ``\\`` escapes).
Two rules of git that ``pathspec`` leaves to its caller are kept here: a trailing ``/`` matches
folders only (``a/**/`` takes in what is inside ``a``, never ``a`` itself), and a path inside an
excluded folder is excluded too and cannot be re-included by a ``!`` pattern, because git never
looks inside an excluded folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from studio.core.errors import UserError

# Studio's own temporary files are told apart by their run token (scan.is_leftover), not by
# a pattern here: a user's file that merely looks like one is synced like any other.
ALWAYS_EXCLUDED: tuple[str, ...] = ()
_POSIX_CLASS = re.compile(r"\[:[a-z]+:\]")


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern
    negate: bool
    dir_only: bool
    text: str
    below: bool = False  # the regex has pathspec's "ps_d" group (a match may end at a folder)


def _strip_trailing_spaces(text: str) -> str:
    """Trailing spaces go unless escaped by a backslash that is not itself escaped (gitignore(5))."""
    while text.endswith(" "):
        body = text[:-1]
        slashes = len(body) - len(body.rstrip("\\"))
        if slashes % 2:
            break
        text = body
    return text


def _backslash_in_class(body: str) -> bool:
    """True when a ``[...]`` class of ``body`` holds a backslash (escaped characters outside skipped)."""
    i, n = 0, len(body)
    while i < n:
        if body[i] == "\\":
            i += 2
        elif body[i] == "[":
            j = i + 1
            j += j < n and body[j] in "!^"
            j += j < n and body[j] == "]"  # a ] first in a class is a member, not its end
            while j < n and body[j] != "]":
                if body[j] == "\\":
                    return True
                j += 1
            i = j + 1
        else:
            i += 1
    return False


def _compile(line: str) -> _Rule | None:
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    text = _strip_trailing_spaces(line.rstrip("\n"))
    # The folder-only mark is taken off before pathspec sees the pattern: pathspec lets "a/**/"
    # match "a" itself and files below it, git matches only the folders inside "a".
    dir_only = text.endswith("/") and not text.endswith("\\/")
    body = text.rstrip("/") if dir_only else text
    if body in ("", "!") or body.startswith("#"):
        return None  # blank, a comment, or nothing left to match: git skips the line
    if _POSIX_CLASS.search(body):
        # pathspec reads "[[:digit:]]" as a plain class of the characters "[:digt", not as digits.
        raise ValueError("character classes such as [[:digit:]] are not supported")
    if _backslash_in_class(body):
        # git reads a backslash in a class as an escape ("[a\]]" is "a" or "]"), pathspec as itself.
        raise ValueError("a backslash inside [...] is not supported")
    pattern = GitIgnoreSpecPattern(body)
    if pattern.include is None or pattern.regex is None:
        # pathspec drops a pattern that can never match (an unclosed "[", a [...] class naming
        # "/"); say so rather than keep a rule that silently does nothing.
        raise ValueError("it can never match a path (an unclosed '[' or a [...] class naming '/')")
    return _Rule(pattern.regex, not pattern.include, dir_only, line, "ps_d" in pattern.regex.groupindex)


def check_pattern(pattern: str, where: str = "--exclude") -> _Rule | None:
    """``pattern`` compiled; a UserError naming it and ``where`` when it cannot be used (``[z-a]``)."""
    try:
        return _compile(pattern)
    except re.error as exc:
        raise UserError(f"The exclude pattern {pattern!r} cannot be used: {exc.msg}", where,
                        "Fix the [...] class in it (a range goes from low to high, e.g. [a-z]), or escape "
                        "the [ with a backslash to match it literally.") from None
    except ValueError as exc:  # pathspec's GitIgnorePatternError, e.g. a lone trailing backslash
        raise UserError(f"The exclude pattern {pattern!r} cannot be used: {exc}", where,
                        "Write it in gitignore syntax: close every [...] class, leave '/' and '\\' out of it, "
                        "list the characters instead of [:name:] (e.g. [0-9]), end it with a "
                        "character rather than a lone '\\'.") from None


class Excludes:
    """A compiled list of gitignore-style patterns."""

    def __init__(self, patterns: list[str] | tuple[str, ...] = ()):
        self.patterns = list(patterns)
        # Last pattern first: the last one that matches decides.
        self._rules = [r for r in (check_pattern(p) for p in (*ALWAYS_EXCLUDED, *patterns)) if r is not None][::-1]
        self._folders: dict[str, bool] = {}  # verdicts of folders already walked through

    def _match_one(self, path: str, is_dir: bool) -> bool:
        for rule in self._rules:
            if rule.dir_only and not is_dir:
                continue
            found = rule.regex.match(path)
            # pathspec's regexes also match what lies below a matched folder (the "ps_d" group
            # ends there); that part is decided by walking the folders, so only whole paths count.
            if found and not (rule.below and found.group("ps_d") is not None):
                return not rule.negate
        return False

    def _folder_excluded(self, folder: str) -> bool:
        verdict = self._folders.get(folder)
        if verdict is None:
            parent = folder.rpartition("/")[0]
            verdict = (bool(parent) and self._folder_excluded(parent)) or self._match_one(folder, True)
            if len(self._folders) < 65536:  # a scan visits each folder many times; bound the memory
                self._folders[folder] = verdict
        return verdict

    def excluded(self, path: str, is_dir: bool = False) -> bool:
        """True when ``path`` (relative, ``/``-separated) or a folder above it is excluded."""
        if not self._rules:
            return False
        parent = path.rpartition("/")[0]
        if parent and self._folder_excluded(parent):
            return True
        return self._match_one(path, is_dir)

    def __bool__(self) -> bool:
        return bool(self.patterns)
