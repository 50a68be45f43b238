"""A request with its files named as on a host, from its fields' host-path rules
(:attr:`studio.core.options.Option.host`): the one ``for_host`` of every declared Request."""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING
from pathlib import Path

from studio.core.options import declared


def for_host(request, paths):
    """``request`` with each file field named as uploaded to the host and each output as written
    there (``paths``: a :class:`~studio.ops.engine.HostPaths`); fields that stay here (how the
    host's engine is made) are set back to their defaults."""
    changes = {}
    for field, meta in declared(type(request)):
        value = getattr(request, field.name)
        if meta.host is None or value is None:
            continue
        if meta.host == "here":
            changes[field.name] = field.default_factory() if field.default_factory is not MISSING else field.default
        elif meta.host == "model":
            changes[field.name] = Path(paths.model(value))
        elif meta.host == "inputs":
            changes[field.name] = {name: Path(paths.input(file)) for name, file in value.items()}
        elif meta.host == "output":
            changes[field.name] = Path(paths.output(value))
        elif meta.host == "file":
            changes[field.name] = Path(paths.file(meta.kind or field.name, value))
        elif meta.host == "folder":  # a folder of files, or one file
            kind = meta.kind or field.name
            changes[field.name] = Path(paths.folder(kind, value) if Path(value).is_dir() else paths.file(kind, value))
    return dataclasses.replace(request, **changes)
