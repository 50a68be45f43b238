"""Exclude patterns in gitignore syntax, matched against ``/``-separated relative paths.

Supported as git documents them (gitignore(5)): ``#`` comments, ``!`` negation (the last
matching pattern wins), a trailing ``/`` matches folders only, a ``/`` at the start or in the
middle anchors the pattern to the root, otherwise it matches at any depth; ``*`` and ``?`` do not
cross ``/``, ``**`` does (``**/x``, ``x/**``, ``a/**/b``), ``[...]`` classes, ``\\`` escapes.
A path inside an excluded folder is excluded too, and, as in git, cannot be re-included by a
``!`` pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from studio.errors import UserError

# Studio's own temporary files are told apart by their run token (scan.is_leftover), not by
# a pattern here: a user's file that merely looks like one is synced like any other.
ALWAYS_EXCLUDED: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern
    negate: bool
    dir_only: bool
    text: str


def _translate(body: str) -> str:
    """Regex for one pattern body (no leading ! or trailing /, anchoring decided by the caller)."""
    out, i, n = [], 0, len(body)
    while i < n:
        c = body[i]
        if c == "*":
            if body.startswith("**", i):
                before_ok = i == 0 or body[i - 1] == "/"
                after = body[i + 2: i + 3]
                if before_ok and after == "/":      # "**/" = zero or more folders
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if before_ok and i + 2 == n:        # trailing "/**" = everything inside
                    out.append(".*")
                    i += 2
                    continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(body[i]))
        elif c == "[":
            end = body.find("]", i + 2 if body[i + 1: i + 2] in ("!", "^", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                inner = body[i + 1: end]
                if inner[:1] in ("!", "^"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _compile(line: str) -> _Rule | None:
    text = line.rstrip("\n")
    # Trailing spaces are ignored unless escaped (gitignore(5)).
    while text.endswith(" ") and not text.endswith("\\ "):
        text = text[:-1]
    if not text or text.startswith("#"):
        return None
    negate = text.startswith("!")
    if negate:
        text = text[1:]
    elif text.startswith("\\!") or text.startswith("\\#"):
        text = text[1:]
    dir_only = text.endswith("/")
    body = text.rstrip("/")
    if not body:
        return None
    anchored = "/" in body
    body = body.lstrip("/")
    prefix = "" if anchored else "(?:.*/)?"
    return _Rule(re.compile(f"^{prefix}{_translate(body)}$", re.DOTALL), negate, dir_only, line)


def check_pattern(pattern: str, where: str = "--exclude") -> _Rule | None:
    """``pattern`` compiled; a UserError naming it and ``where`` when it cannot be used (``[z-a]``)."""
    try:
        return _compile(pattern)
    except re.error as exc:
        raise UserError(f"The exclude pattern {pattern!r} cannot be used: {exc.msg}", where,
                        "Fix the [...] class in it (a range goes from low to high, e.g. [a-z]), or escape "
                        "the [ with a backslash to match it literally.") from None


class Excludes:
    """A compiled list of gitignore-style patterns."""

    def __init__(self, patterns: list[str] | tuple[str, ...] = ()):
        self.patterns = list(patterns)
        self._rules = [r for r in (check_pattern(p) for p in (*ALWAYS_EXCLUDED, *patterns)) if r is not None]

    def _match_one(self, path: str, is_dir: bool) -> bool:
        excluded = False
        for rule in self._rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(path):
                excluded = not rule.negate
        return excluded

    def excluded(self, path: str, is_dir: bool = False) -> bool:
        """True when ``path`` (relative, ``/``-separated) or a folder above it is excluded."""
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if self._match_one("/".join(parts[:depth]), True):
                return True
        return self._match_one(path, is_dir)

    def __bool__(self) -> bool:
        return bool(self.patterns)
