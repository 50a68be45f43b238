"""The corpus models Studio makes itself with packages of the test extra (torch, scikit-learn...)."""

from __future__ import annotations

from studio.core.errors import UserError

TEST_EXTRA_FIX = "install the test extra (pip install -c constraints.txt -e '.[test]')"


def maker_missing(model: str, made_with: str, exc: ImportError) -> UserError:
    """The error for the corpus model ``model`` when a package it is ``made_with`` ("exported with
    torch and transformers") is not installed; ``exc`` names the missing one."""
    return UserError(f"the corpus model {model} is {made_with}: {exc}", f"studio corpus fetch {model}", TEST_EXTRA_FIX)
