"""Panel packages export their panel class lazily, so their Qt-free modules (``state``) import
without Qt: ``from studio.ui.panels.graph import GraphPanel`` still works."""

from __future__ import annotations

import importlib


def panel_getattr(package: str, name: str):
    """A module ``__getattr__`` (PEP 562) for ``package`` that imports ``name`` from its ``panel``
    module on first use."""

    def __getattr__(attr: str):
        if attr == name:
            return getattr(importlib.import_module(f"{package}.panel"), name)
        raise AttributeError(f"module {package!r} has no attribute {attr!r}")

    return __getattr__
