"""What two compared runs of several parts (ranks, devices) have in common: their names, and the
parts of each that had no counterpart in the other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PairedRuns:
    """``base`` and ``new`` (their folders), and their parts found on one side only (not compared)."""

    base: str
    new: str
    only_in_base: list = field(default_factory=list)
    only_in_new: list = field(default_factory=list)

    def one_sided(self) -> list[tuple[str, object]]:
        """``("base" | "new", part)`` for each part found on one side only, base's first."""
        return [(side, part) for side, parts in (("base", self.only_in_base), ("new", self.only_in_new))
                for part in parts]
