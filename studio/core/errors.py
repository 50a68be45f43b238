"""The one family of exceptions Studio raises.

Engines raise :class:`UserError` for anything the user can fix. Its message always says what
was wrong, where (file, line, field, op) and how to fix it, so the notifier and the CLI can show
it as it is, without a traceback.
"""

from __future__ import annotations

from pathlib import Path


class StudioError(Exception):
    """Base of every error Studio raises on purpose."""


class UserError(StudioError):
    """Bad input or a situation the user can fix.

    Args:
        what: what went wrong, in one sentence ("Not an ONNX or OM model").
        where: the file, line, field or op it concerns (optional).
        fix: what the user can do about it (optional but strongly encouraged).
    """

    def __init__(self, what: str, where: str | Path | None = None, fix: str | None = None):
        self.what = what
        self.where = str(where) if where is not None else None
        self.fix = fix
        super().__init__(self.format())

    def __reduce__(self):  # keep what/where/fix when sent back from a worker process
        if type(self) is UserError:
            return (UserError, (self.what, self.where, self.fix))
        return super().__reduce__()

    def format(self) -> str:
        """The full message: what, where, fix — one per line."""
        return format_message(self.what, self.where, self.fix)


def format_message(what: str, where=None, fix=None) -> str:
    """What went wrong, then ``  where: …`` and ``  fix:   …`` lines when given: how Studio words
    every message a person can act on (a UserError, a notice)."""
    lines = [what]
    if where:
        lines.append(f"  where: {where}")
    if fix:
        lines.append(f"  fix:   {fix}")
    return "\n".join(lines)


class RemoteError(StudioError):
    """A remote host refused, failed or dropped the connection."""


class ToolUnavailable(StudioError):
    """A tool cannot run here: a package or an external program is missing."""

    def __init__(self, tool: str, reason: str, fix: str | None = None):
        self.tool = tool
        self.reason = reason
        self.fix = fix
        text = f"{tool} is unavailable: {reason}"
        if fix:
            text += f"\n  fix:   {fix}"
        super().__init__(text)

    def __reduce__(self):  # keep the parts when sent back from a worker process
        if type(self) is ToolUnavailable:
            return (ToolUnavailable, (self.tool, self.reason, self.fix))
        return super().__reduce__()


class Cancelled(StudioError):
    """A job stopped because its user cancelled it. Not an error to report."""

    def __init__(self, message: str = "Cancelled"):
        super().__init__(message)
