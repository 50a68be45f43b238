"""Reading a file a user named, safely: only regular files, never more than a cap, text decoded.

Every reader goes through here before it parses anything, because the path a user gives can be
anything: a FIFO (an ``open`` blocks until a writer appears, so the app hangs), ``/dev/zero`` or
``/dev/urandom`` (a read never ends and exhausts memory), a folder, or a sparse file that claims
8 GiB. :func:`open_regular` opens without blocking, checks the open handle (not the path, which
may be swapped in between) and refuses anything but a regular file; :func:`read_bytes` also refuses
a file bigger than its cap, before reading it. :func:`load_json` turns the failures of ``json`` —
invalid text, nesting deeper than the interpreter's stack, lone surrogates such as ``"\\ud800"``
that break every later print — into one :class:`~studio.core.errors.UserError` or a clean value.

The caps are per kind of file (a settings file is small, a report or a manifest may be big) and
are stated in the docs; a refusal names the cap and the file's size.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from studio.core.errors import UserError
from studio.core.units import human_size

MIB = 1 << 20
SETTINGS_CAP = 16 * MIB    # hand-written files: TOML settings, ssh config, AIPP .cfg, pipelines, acl.json
DOCUMENT_CAP = 512 * MIB   # JSON/CSV documents read whole into Python objects: manifests, reports, summaries

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words ("a FIFO (named pipe)", "a folder", "a regular file")."""
    return next((name for test, name in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode)
                else "not a regular file")


def _refuse_kind(path: Path, mode: int, what: str) -> UserError:
    kind = kind_of(mode)
    fix = ("Give the path of a file in it." if stat.S_ISDIR(mode) else
           "Give the path of a regular file: Studio does not read from pipes, devices or sockets "
           "(save the stream to a file first).")
    return UserError(f"The {what} is {kind}, not a regular file", path, fix)


def _too_big(path: Path, size: int, cap: int, what: str) -> UserError:
    return UserError(f"The {what} is too big to read: {human_size(size)} (Studio reads at most {human_size(cap)} "
                     f"of a {what})", path,
                     "Check that this is the right file; a file this size is damaged (or sparse) or not one Studio "
                     "produced.")


def _cannot(path: Path, exc: OSError, what: str) -> UserError:
    if isinstance(exc, FileNotFoundError):
        return UserError(f"The {what} does not exist", path, "Check the path; the file may have been moved.")
    return UserError(f"Cannot read the {what}: {exc.strerror or exc}", path,
                     "Check that the file exists and that you may read it.")


@contextmanager
def explain_os_errors(path: Path | str, what: str, fix: str = "Check the path.",
                      missing: str | None = None) -> Iterator[None]:
    """Turn an OSError raised inside the block (by :func:`read_text` and friends, whose own refusals
    are UserErrors already) into a UserError: "Cannot read the {what}: {reason}" with ``fix``, or
    ``missing`` (with the same fix) when the file does not exist and the caller has its own words."""
    try:
        yield
    except FileNotFoundError as exc:
        if missing is None:
            raise UserError(f"Cannot read the {what}: {exc.strerror or exc}", path, fix) from exc
        raise UserError(missing, path, fix) from exc
    except OSError as exc:
        raise UserError(f"Cannot read the {what}: {exc.strerror or exc}", path, fix) from exc


def check_regular(path: Path | str, what: str = "file", cap: int | None = None) -> os.stat_result:
    """The stat of ``path`` when it is a regular file (no larger than ``cap``); a UserError otherwise.

    For readers that hand the path to a library that opens it itself (NumPy, SQLite, ONNX): the
    library would block on a FIFO or read a device forever.
    """
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise _cannot(path, exc, what) from exc
    if not stat.S_ISREG(info.st_mode):
        raise _refuse_kind(path, info.st_mode, what)
    if cap is not None and info.st_size > cap:
        raise _too_big(path, info.st_size, cap, what)
    return info


def open_regular(path: Path | str, what: str = "file", cap: int | None = None) -> IO[bytes]:
    """``path`` opened for binary reading when it is a regular file (no larger than ``cap``).

    The open does not block (``O_NONBLOCK``: a FIFO without a writer would wait forever) and the
    kind is checked on the open handle, so a path swapped after a check cannot slip through. A
    failing open raises its OSError unchanged, so each reader keeps its own message for a missing
    or unreadable file; what only this check finds is a UserError.
    """
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse_kind(path, info.st_mode, what)
        if cap is not None and info.st_size > cap:
            raise _too_big(path, info.st_size, cap, what)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # regular files ignore it; keep later reads ordinary
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path | str, what: str = "file", cap: int = DOCUMENT_CAP) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes (a file that grows while read is cut
    at the cap and refused too). OSError as :func:`open_regular`."""
    with open_regular(path, what, cap) as handle:
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise _too_big(Path(path), len(data), cap, what)
    return data


def read_text(path: Path | str, what: str = "file", cap: int = DOCUMENT_CAP, encoding: str = "utf-8",
              errors: str = "strict") -> str:
    """The text of a regular file of at most ``cap`` bytes; undecodable text is a UserError naming
    the byte (with ``errors="strict"``). A byte-order mark is kept unless ``encoding`` drops it
    (``utf-8-sig``)."""
    data = read_bytes(path, what, cap)
    try:
        text = data.decode(encoding, errors)
    except UnicodeDecodeError as exc:
        raise UserError(f"The {what} is not {encoding.upper()} text", f"{path}, byte {exc.start}",
                        f"Save it as {encoding.upper()} text, or produce it again.") from exc
    return text


def load_json(path: Path | str, what: str = "JSON file", cap: int = DOCUMENT_CAP, errors: str = "strict") -> Any:
    """A JSON file read with :func:`read_text` and parsed; every failure is a UserError, and lone
    surrogates in strings (``"\\ud800"``, valid JSON that no file or terminal can encode) become
    U+FFFD. OSError as :func:`open_regular`."""
    text = read_text(path, what, cap, errors=errors)
    return loads_json(text, path, what)


def loads_json(text: str, where: Path | str, what: str = "JSON file") -> Any:
    """``json.loads`` with :func:`load_json`'s guarantees, for text already read."""
    try:
        data = json.loads(text)
        if _SURROGATE_ESCAPE.search(text):  # rare: only then is the walk worth its cost
            data = scrub_surrogates(data)
    except json.JSONDecodeError as exc:
        raise UserError(f"The {what} is not valid JSON: {exc.msg}", f"{where}, line {exc.lineno}, column {exc.colno}",
                        "The file may be truncated or edited by hand; produce it again.") from exc
    except RecursionError as exc:
        raise UserError(f"The {what} nests lists or objects too deeply to read", where,
                        "Check that this is the right file; no file Studio reads nests more than a few levels.") from exc
    return data


def scrub_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [scrub_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {scrub_surrogates(k): scrub_surrogates(v) for k, v in value.items()}
    return value
