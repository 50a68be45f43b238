"""Deployments: a local folder mapped to a folder on a host, with exclude patterns.

They live in ``deployments.toml`` beside ``hosts.toml`` in the user config folder
(``STUDIO_HOME`` overrides). The host is named, not copied: the entry in hosts.toml says how
to reach it, so fixing a host's port fixes every deployment on it.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.toml_fields import TomlPlace, expect_table, expect_text, expect_text_list, reject_misspelled
from studio.core.toml_store import NamedTableStore, check_entry_name

_KEYS = {"host", "local", "remote", "excludes"}


# Folders that hold other users' homes: a deployment there could list or delete all of them.
_HOME_PARENTS = ("/home", "/Users")


def normalise_remote(remote: str) -> tuple[str, bool]:
    """(lexically normalised path, relative to the login folder?) — ``~``, ``.``, ``..`` and ``//`` folded."""
    text = remote.strip()
    home = not text.startswith("/")
    if text == "~" or text.startswith("~/"):
        text = text[1:].lstrip("/")
    text = posixpath.normpath(text) if text else "."
    if not home:
        text = "/" + text.lstrip("/")  # normpath keeps a leading "//"; it is the same folder here
    return text, home


def remote_too_wide(remote: str) -> str | None:
    """What ``remote`` would take in when it is the whole home or root folder or above them, else None."""
    text, home = normalise_remote(remote)
    if home and (text == "." or text == ".." or text.startswith("../")):
        return "the whole remote home folder" if text == "." else "a folder above the remote home folder"
    if not home and (text == "/" or text in _HOME_PARENTS):
        return "the whole remote root folder" if text == "/" else f"every home folder under {text}"
    return None


@dataclass
class Deployment:
    """One mapping: ``local`` on this machine <-> ``remote`` on ``host``."""

    name: str
    host: str
    local: str
    remote: str
    excludes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_entry_name(self.name, "Deployment", "deployment")
        if not self.remote or "\0" in self.remote or "\n" in self.remote:
            raise UserError(f"Remote folder {self.remote!r} of deployment {self.name!r} is not usable",
                            "deployment", "Give the remote folder as an absolute path, e.g. /home/me/project.")
        too_wide = remote_too_wide(self.remote)
        if too_wide:
            raise UserError(f"Deployment {self.name!r} would sync {too_wide} ({self.remote!r})", "deployment",
                            "Give a project folder, e.g. /home/me/project or ~/project.")
        if not self.local:
            raise UserError(f"Deployment {self.name!r} has no local folder", "deployment", "Give --local DIR.")

    @property
    def local_root(self) -> Path:
        return Path(self.local).expanduser()

    @classmethod
    def from_table(cls, name: str, table: dict, place: TomlPlace | None = None) -> Deployment:
        """The deployment a ``[deployments.NAME]`` table describes; ``place`` names the file and lines."""
        def at(key: str | None = None) -> str:
            return place(("deployments", name), key) if place else \
                "deployments.toml" + f", [deployments.{name}]" + (f" {key}" if key else "")

        expect_table(table, at(), '[deployments.NAME] with host, local and remote')
        reject_misspelled(table, _KEYS, at())
        values = {key: expect_text(table, key, at(key), required=True) for key in ("host", "local", "remote")}
        excludes = expect_text_list(table, "excludes", at("excludes"))
        from studio.targets.transfer.ignore import check_pattern

        for pattern in excludes:
            check_pattern(pattern, at("excludes"))
        try:
            return cls(name=name, excludes=excludes, **values)
        except UserError as exc:  # the checks of the deployment itself: say where it was read
            raise UserError(exc.what, at(), exc.fix) from None


class DeploymentStore(NamedTableStore[Deployment], section="deployments", noun="deployment",
                      entry_type=Deployment,
                      add_hint="Add it with `studio deploy add {name} --host HOST --local DIR --remote DIR`."):
    """``deployments.toml``: read on creation, written by :meth:`save` (``store.deployments``)."""

    deployments: dict[str, Deployment]  # the entries by name (a property the base class adds)


def check_excludes(patterns: list[str]) -> None:
    """Raise a UserError for the first exclude pattern gitignore syntax cannot read (as a sync would)."""
    from studio.targets.transfer.ignore import Excludes

    Excludes(patterns)
