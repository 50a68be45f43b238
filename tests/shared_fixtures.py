"""Where the shared real files are, and what to do when they are missing (skip, or fail on CI).

Kept out of conftest.py so test modules in any folder can import it (``from shared_fixtures
import ...``): several folders have a conftest.py, and ``import conftest`` would find another one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("STUDIO_SHARED", REPO.parent / "shared"))
ASCEND_FIXTURES = SHARED / "fixtures" / "ascend"


def fixtures_required() -> bool:
    """True where missing shared fixtures are an error rather than a reason to skip.

    A developer without ../shared gets skips; CI (CI=true, as every CI service sets it) and anyone
    who pointed STUDIO_SHARED somewhere must not pass by silently skipping the tests on real files.
    """
    ci = os.environ.get("CI", "").strip().lower()
    return bool(os.environ.get("STUDIO_SHARED")) or ci not in ("", "0", "false", "no")


def missing_fixtures(reason: str) -> None:
    """Skip a test for missing shared files, or fail it where they are required (see above)."""
    if fixtures_required():
        pytest.fail(f"{reason} — required here because STUDIO_SHARED or CI is set", pytrace=False)
    pytest.skip(reason)
