"""Run configurations and their storage in the workspace's ``studio.toml``.

A run configuration is what MindStudio calls a Run Configuration: a name, where it runs (this
computer or a host), the working folder there (usually a deployment's remote folder), the command
line, environment variables, the CANN toolkit path and whether to upload a deployment first.
They are stored as ``[[run]]`` tables, which people can read and edit::

    [[run]]
    name = "facemask"
    target = "npu-box"
    workdir = "/home/HwHiAiUser/facemask/out"
    command = "./main ../data/test.jpg"
    toolkit = "/usr/local/Ascend/ascend-toolkit/latest"
    upload = "facemask"
    env = { ASCEND_GLOBAL_LOG_LEVEL = "1" }
    fetch = ["result/*.png", "*.log"]         # outputs brought back after the run (studio.runs.results)
    metrics = "(?P<name>dice|iou): (?P<value>[0-9.]+)"   # how printed metrics are read (default: name: value)
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from studio.core.errors import UserError
from studio.runs.results import check_fetch_globs, check_metrics_pattern
from studio.core.serial import to_json
from studio.core.toml_fields import (TomlPlace, expect_table, expect_text, expect_text_list, expect_text_map,
                                reject_misspelled, type_name)

LOCAL = "local"
TABLE = "run"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEYS = {"name", "command", "target", "workdir", "env", "toolkit", "upload", "fetch", "metrics"}


@dataclass
class RunConfig:
    """One run configuration."""

    name: str
    command: str
    target: str = LOCAL  # "local" or the name of a host entry
    workdir: str = ""  # "" = the workspace folder here, the login folder on a host
    env: dict[str, str] = field(default_factory=dict)
    toolkit: str = ""  # CANN toolkit folder ("" = the host's own setting)
    upload: str = ""  # deployment to upload before running ("" = none)
    fetch: list[str] = field(default_factory=list)  # output globs in the working folder, fetched after the run
    metrics: str = ""  # regex with groups name and value for the printed metrics ("" = name: value)

    # studio.core.serial: the ``[[run]]`` table (TOML has no null) and ``studio run --list --json``
    __json_omit_empty__ = ("workdir", "env", "toolkit", "upload", "fetch", "metrics")

    def __post_init__(self) -> None:
        self.target = self.target or LOCAL

    @property
    def is_local(self) -> bool:
        return self.target in ("", LOCAL)

    def validate(self) -> None:
        """UserError for a configuration that cannot run, naming the field."""
        where = f"run configuration {self.name!r}"
        if not self.name.strip():
            raise UserError("A run configuration needs a name", "name", "Give it a short name, e.g. facemask.")
        if not self.command.strip():
            raise UserError("The command line is empty", f"{where}, field command",
                            "Give the command that starts the app, e.g. ./main ../data/test.jpg.")
        if "\0" in self.command:
            raise UserError("The command line holds a NUL character (\\u0000), which no shell can receive",
                            f"{where}, field command", "Remove it from the command.")
        try:
            shlex.split(self.command)
        except ValueError as exc:
            raise UserError(f"The command line cannot be parsed: {exc}", f"{where}, field command",
                            "Close every quote.") from exc
        for key, value in self.env.items():
            if not _ENV_NAME.match(key):
                raise UserError(f"{key!r} is not a valid environment variable name", f"{where}, field env",
                                "Use letters, digits and _ (not starting with a digit).")
            if "\0" in value:
                raise UserError(f"The value of {key} holds a NUL character (\\u0000)", f"{where}, field env",
                                "Remove it from the value.")
        check_fetch_globs(self.fetch, f"{where}, field fetch")
        check_metrics_pattern(self.metrics, f"{where}, field metrics")

    def argv(self) -> list[str]:
        """What the target runs: ``env K=V ... bash -c COMMAND`` (the command line keeps its shell syntax)."""
        self.validate()
        prefix = ["env", *(f"{k}={v}" for k, v in self.env.items())] if self.env else []
        return [*prefix, "bash", "-c", self.command]

    def env_setup(self) -> str | None:
        """The line loading this configuration's CANN toolkit, or None to use the target's."""
        if not self.toolkit:
            return None
        return f". {shlex.quote(self.toolkit.rstrip('/') + '/set_env.sh')}"

    @classmethod
    def from_toml(cls, data: Any, where: str | TomlPlace = "studio.toml", index: int = 0) -> RunConfig:
        """The configuration one ``[[run]]`` table describes (the ``index``-th); wrong types, a
        misspelled key or a NUL are a UserError naming the file, line and key."""
        def at(key: str | None = None) -> str:
            if isinstance(where, TomlPlace):
                return where((TABLE,), key, index)
            return f"{where}, [[run]] number {index + 1}" + (f" {key}" if key else "")

        expect_table(data, at(), '[[run]] with name = "..." and command = "..."')
        reject_misspelled(data, _KEYS, at())
        text = {key: expect_text(data, key, at(key), required=key == "name") or ""
                for key in ("name", "command", "target", "workdir", "toolkit", "upload", "metrics")}
        env = expect_text_map(data, "env", at("env"))
        for key, value in env.items():
            if "\0" in value:
                raise UserError(f"env.{key} holds a NUL character (\\u0000)", at("env"), "Remove it.")
        fetch = expect_text_list(data, "fetch", at("fetch"))
        check_fetch_globs(fetch, at("fetch"))  # named by file and line, before anything runs
        check_metrics_pattern(text["metrics"], at("metrics"))
        return cls(name=text["name"], command=text["command"], target=text["target"] or LOCAL,
                   workdir=text["workdir"], env=env, toolkit=text["toolkit"], upload=text["upload"],
                   fetch=fetch, metrics=text["metrics"])


def load_configs(workspace) -> list[RunConfig]:
    """The workspace's run configurations, in file order."""
    place = TomlPlace(workspace.settings_path)
    items = workspace.data.get(TABLE, [])
    if not isinstance(items, list):
        raise UserError(f"{TABLE} is {type_name(items)} ({items!r:.60}), not a list of [[run]] tables",
                        place((TABLE,)), 'Write each configuration as a [[run]] table with name = "..." and '
                        'command = "...".')
    return [RunConfig.from_toml(item, place, i) for i, item in enumerate(items)]


def find_config(workspace, name: str) -> RunConfig:
    """The configuration called ``name``; UserError listing the others when there is none."""
    configs = load_configs(workspace)
    for config in configs:
        if config.name == name:
            return config
    names = ", ".join(c.name for c in configs) or "none yet"
    raise UserError(f"No run configuration called {name!r}", workspace.settings_path,
                    f"Known: {names}. Add one in Run > Edit Configurations..., or a [[run]] table in studio.toml.")


def save_config(workspace, config: RunConfig, replace: str | None = None) -> None:
    """Add ``config`` or replace the one called ``replace`` (or its own name), and save the file."""
    config.validate()
    old = replace or config.name
    items = [c for c in load_configs(workspace)]
    names = [c.name for c in items]
    if config.name != old and config.name in names:
        raise UserError(f"A run configuration called {config.name!r} exists already", workspace.settings_path,
                        "Choose another name.")
    if old in names:
        items[names.index(old)] = config
    else:
        items.append(config)
    workspace.set_table(TABLE, to_json(items))
    workspace.save()


def delete_config(workspace, name: str) -> None:
    """Remove the configuration called ``name`` (no error when absent) and save."""
    workspace.set_table(TABLE, to_json([c for c in load_configs(workspace) if c.name != name]))
    workspace.save()


def find_workspace(start=None):
    """The workspace holding ``start`` (default: the current folder), searching upwards."""
    from pathlib import Path

    from studio.core.workspace import Workspace

    folder = Path(start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        if Workspace.is_workspace(candidate):
            return Workspace.open(candidate)
    raise UserError("No Studio workspace here (no studio.toml in this folder or above)", folder,
                    "Run inside a workspace folder, or give --workspace DIR.")
