"""Reading and writing small TOML files safely, and the stores of named entries kept in them.

Writes go to a temporary file in the same folder and replace the target atomically, so a crash
mid-write never leaves a half-written settings file. A file that cannot be parsed is never
overwritten: :func:`quarantine` moves it aside so the user's data survives for inspection.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from studio.core.errors import UserError
from studio.core.toml_fields import TomlPlace, expect_table


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; a missing file is an empty dict, a broken one a UserError with its line.

    Only a regular file of at most :data:`~studio.core.safe_read.SETTINGS_CAP` is read (a FIFO or a
    device named here would hang the app), and nesting too deep for the parser is refused.
    """
    from studio.core.safe_read import SETTINGS_CAP, explain_os_errors, read_bytes

    if not os.path.lexists(path):
        return {}
    with explain_os_errors(path, "settings file", "Check the file's permissions."):
        raw = read_bytes(path, "settings file", SETTINGS_CAP)
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError("Settings file is not UTF-8 text", f"{path}, byte {exc.start}",
                        "Restore it from a backup or delete it to start with defaults.") from exc
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message already carries "(at line L, column C)".
        raise UserError(f"Settings file is not valid TOML: {exc}", path,
                        "Fix the line named above, or delete the file to start with defaults.") from exc
    except RecursionError as exc:  # tomllib recurses once per level of inline tables or arrays
        raise UserError("Settings file nests inline tables or arrays too deeply to read", path,
                        "Write nested settings as [table] headers; no Studio setting nests more than a few "
                        "levels.") from exc


def save_toml(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as TOML, atomically (temp file + rename)."""
    import tomli_w

    text = tomli_w.dumps(_drop_none(data))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            # No fsync: the rename already keeps a crashed process from leaving half a file, and
            # these writes happen on the GUI thread, where an fsync can stall on a busy disk.
            handle.write(text)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def quarantine(path: Path) -> Path:
    """Move an unreadable file aside (``name.broken-<time>``) and return its new path."""
    target = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
    os.replace(path, target)
    return target


def _drop_none(value: Any) -> Any:
    # TOML has no null; leaving None out keeps tomli_w from refusing the whole file.
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value if v is not None]
    return value


_ENTRY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_entry_name(name: str, what: str, where: str) -> None:
    """Refuse a name a user cannot type back on the command line (``what`` is "Host", "Deployment")."""
    if not _ENTRY_NAME.match(name or ""):
        raise UserError(f"{what} name {name!r} is not usable", where,
                        "Use letters, digits, '.', '_' or '-' (up to 64 characters), starting with a letter or digit.")


class Entry(Protocol):
    """What a :class:`NamedTableStore` keeps: a named record that round-trips through a TOML table
    (written by :func:`studio.core.serial.named_table`, read by ``from_table``)."""

    name: str

    @classmethod
    def from_table(cls, name: str, table: dict, place: TomlPlace | None = None) -> Entry: ...


E = TypeVar("E", bound=Entry)


class NamedTableStore(Generic[E]):
    """A per-user TOML file of named tables, ``[SECTION.NAME]``, one entry each.

    A subclass names its section, the entry class, the word for one entry and how a missing one is
    added, as class keywords; the file is ``SECTION.toml`` in the user config folder, and the
    entries are also reachable as ``store.SECTION`` (``store.hosts``). The file is read on creation
    (a broken file is a UserError naming its line) and written by :meth:`save`.
    """

    section: ClassVar[str]     # "hosts": the tables are [hosts.NAME], the file hosts.toml
    noun: ClassVar[str]        # "host", as in "No host called 'x'"
    entry_type: ClassVar[type]
    add_hint: ClassVar[str]    # how to add one, with {name}: "Add it with `studio ssh add {name} ...`."

    def __init_subclass__(cls, *, section: str, noun: str, entry_type: type, add_hint: str, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.section, cls.noun, cls.entry_type, cls.add_hint = section, noun, entry_type, add_hint
        setattr(cls, section, property(lambda self: self.entries, doc=f"The {noun}s by name (``entries``)."))

    def __init__(self, path: Path | None = None):
        from studio.core.paths import config_dir

        self.path = Path(path) if path is not None else config_dir() / f"{self.section}.toml"
        self.entries: dict[str, E] = {}
        if os.path.lexists(self.path):  # a FIFO or a folder here is refused by load_toml, not skipped
            place = TomlPlace(self.path)
            tables = expect_table(load_toml(self.path).get(self.section, {}), place((self.section,)),
                                  f"[{self.section}.NAME] tables")
            for name, table in tables.items():
                self.entries[name] = self.entry_type.from_table(name, table, place)

    def get(self, name: str) -> E:
        """The entry called ``name``; a UserError listing the known names otherwise."""
        try:
            return self.entries[name]
        except KeyError:
            known = ", ".join(sorted(self.entries)) or "none yet"
            raise UserError(f"No {self.noun} called {name!r}", self.path,
                            f"{self.add_hint.format(name=name)} Known {self.noun}s: {known}.") from None

    def put(self, entry: E) -> None:
        """Add or replace an entry (call :meth:`save` to write it)."""
        self.entries[entry.name] = entry

    def remove(self, name: str) -> None:
        """Forget the entry called ``name`` (a UserError when there is none)."""
        self.get(name)
        del self.entries[name]

    def save(self) -> None:
        """Write every entry, sorted by name, atomically."""
        from studio.core.serial import named_table

        save_toml(self.path, {self.section: {name: named_table(e) for name, e in sorted(self.entries.items())}})
