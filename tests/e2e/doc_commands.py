"""The ``studio …`` command lines of README.md and docs/*.md, as a reader would copy them.

A command is a line of a shell code block (```sh, ```bash or an unlabelled block) that starts with
``studio``, joined with its ``\\`` continuation lines. Optional parts are written in brackets
(``[--json]``, ``[--tool msame|ais_bench|msit]``, ``[PATH]``): :func:`variants` gives the command
without them and, when they name concrete values, with them too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHELL_BLOCKS = {"", "sh", "bash", "shell", "console"}
_FENCE = re.compile(r"^\s*```\s*(\w*)")
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")  # N, PATH, DIR, ID: a value the reader picks


@dataclass(frozen=True)
class DocCommand:
    """One command as written in a document: where it starts and its text (continuations joined)."""

    path: Path
    line: int
    text: str

    @property
    def where(self) -> str:
        """``docs/convert.md:18``."""
        return f"{self.path.relative_to(REPO).as_posix()}:{self.line}"


def documents() -> list[Path]:
    """README.md and every docs/*.md, in a fixed order."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _shell_lines(path: Path):
    inside, shell = False, False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = _FENCE.match(line)
        if fence:
            inside, shell = (True, fence.group(1).lower() in SHELL_BLOCKS) if not inside else (False, False)
        elif inside and shell:
            yield number, line


def doc_commands(path: Path) -> list[DocCommand]:
    """Every ``studio`` command line in the shell code blocks of ``path``, in document order."""
    found: list[DocCommand] = []
    start, parts = 0, []
    for number, line in _shell_lines(path):
        text = line.strip()
        if not parts:
            if not (text == "studio" or text.startswith("studio ")):
                continue
            start = number
        parts.append(text.rstrip("\\").rstrip())
        if not text.endswith("\\"):
            found.append(DocCommand(path, start, " ".join(parts)))
            parts = []
    return found


def _split_optional(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (optional?, piece); brackets inside an optional part stay in it."""
    pieces: list[tuple[bool, str]] = []
    depth, current = 0, ""
    for char in text:
        if char == "[" and (depth or not current.endswith("=")):
            if depth == 0:
                pieces.append((False, current))
                current = ""
            else:
                current += char
            depth += 1
        elif char == "]" and depth:
            depth -= 1
            if depth == 0:
                pieces.append((True, current))
                current = ""
            else:
                current += char
        else:
            current += char
    pieces.append((depth > 0, current))
    return pieces


def _concrete(optional: str, choice: int = 0) -> str | None:
    """An optional part as it would be typed (``a|b|c`` -> choice number ``choice``), or None when
    the reader must pick a value."""
    words = optional.split()
    if not words or "..." in words or any(_PLACEHOLDER.match(w) for w in words) or "[" in optional:
        return None
    return " ".join(w.split("|")[min(choice, w.count("|"))] for w in words)


def variants(command: str) -> dict[str, str]:
    """``{"bare": without optional parts, "full": with every concrete one}`` ("full" only when it
    differs); a choice such as ``[--tool msame|ais_bench|msit]`` adds ``"full ais_bench"``, ...."""
    pieces = _split_optional(command)
    bare = " ".join("".join(p for optional, p in pieces if not optional).split())
    found = {"bare": bare}
    choices = [w.split("|") for optional, p in pieces if optional and _concrete(p) for w in p.split() if "|" in w]
    for index, name in enumerate(choices[0] if choices else [""]):
        full = " ".join(" ".join(p if not optional else (_concrete(p, index) or "") for optional, p in pieces).split())
        if full != bare:
            found[f"full {name}" if index else "full"] = full
    return found
