"""What a reader says about a bad file: the UserError it raises for given bytes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from studio.core.errors import UserError


def refusal(reader: Callable[[Path], object], path: Path, content: bytes) -> UserError:
    """Write ``content`` to ``path`` and return the UserError ``reader(path)`` raises (the test fails
    when it raises none)."""
    path.write_bytes(content)
    with pytest.raises(UserError) as info:
        reader(path)
    return info.value
