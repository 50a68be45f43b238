"""The key two profiles' rows are matched by: a name without the object addresses in it.

PyTorch names a Python call by its repr, address included: ``<built-in method run_backward of
torch._C._EngineBase object at 0xfffd2c1a0b30>``. The same call in another rank, or another run,
lives at another address, so matching by the name as written lists one API twice, "only in base"
and "only in new" (136 such pairs between the two ranks of a real torch_npu Level2 export).
Addresses (``0x`` and at least four hex digits) are replaced by ``0x…`` for matching; the rows
keep a name as written for display.
"""

from __future__ import annotations

import re

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
MARK = "0x…"


def match_key(name: str) -> str:
    """``name`` with every object address replaced by ``0x…``."""
    return _ADDRESS.sub(MARK, name) if "0x" in name else name
