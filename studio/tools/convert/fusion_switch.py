"""ATC's fusion switch file (``--fusion_switch_file``): parse it and map it to our passes.

Two syntaxes: plain lines ``ConvBatchnormFusionPass:off`` (``#`` comments), or JSON
``{"Switch": {"GraphFusion": {"ALL": "off", "X": "on"}, "UBFusion": {...}}}``. Pass names are
ATC's (mapped through :data:`~studio.tools.convert.passes.ATC_PASS_NAMES`) or ours. Names with no
local counterpart are kept and reported as "ATC only", never an error: the same file goes to ATC.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import CONVERT, FileFormat, json_text, path_only
from studio.tools.convert.atc_files import load_atc_file

_LINE = re.compile(r"^([A-Za-z0-9_.\-]+)\s*:\s*(on|off)\s*$", re.IGNORECASE)


@dataclass
class FusionSwitches:
    """Parsed switches: ATC's own names, plus what they mean for our passes."""

    switches: dict[str, bool] = field(default_factory=dict)  # name as written -> on
    all_graph: bool | None = None  # "ALL" under GraphFusion (None when not given)
    all_ub: bool | None = None
    path: Path | None = None

    def local_passes(self) -> dict[str, bool]:
        """Our pass name -> on/off, for the passes this file decides."""
        from studio.tools.convert.passes import ATC_PASS_NAMES, PASS_NAMES

        result: dict[str, bool] = {}
        if self.all_graph is not None:
            # GraphFusion ALL switches ATC's fusions; constant folding and identity removal are GE
            # graph passes that "ALL" does not touch, so they stay as they are.
            for name in ("ConvBnFusion", "ConvAddFusion", "ConvMulFusion", "MatMulAddFusion"):
                result[name] = self.all_graph
        for name, on in self.switches.items():
            ours = ATC_PASS_NAMES.get(name) or (name if name in PASS_NAMES else None)
            if ours:
                result[ours] = on
        return result

    def atc_only(self) -> list[str]:
        """Names in the file that have no local counterpart (they still go to ATC)."""
        from studio.tools.convert.passes import ATC_PASS_NAMES, PASS_NAMES

        return [n for n in self.switches if n not in ATC_PASS_NAMES and n not in PASS_NAMES]

    def to_text(self) -> str:
        """Plain-line syntax (what the wizard writes)."""
        lines = [f"{name}:{'on' if on else 'off'}" for name, on in self.switches.items()]
        return "\n".join(lines) + "\n"


def parse_fusion_switch(text: str, where: str | Path = "fusion switch file") -> FusionSwitches:
    """Parse either syntax; errors name the line (plain) or the JSON position."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("{"):
        return _parse_json(stripped, where)
    result = FusionSwitches()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _LINE.match(line)
        if not match:
            raise UserError(f"Cannot read {line!r}: expected 'PassName:on' or 'PassName:off'",
                            f"{where}, line {number}", "Write one pass per line as Name:off (or on).")
        result.switches[match[1]] = match[2].lower() == "on"
    return result


def _parse_json(text: str, where) -> FusionSwitches:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"Failed to parse the fusion switch JSON: {exc.msg} (E10032)",
                        f"{where}, line {exc.lineno}, column {exc.colno}", "Fix the JSON syntax.") from None
    switch = data.get("Switch") if isinstance(data, dict) else None
    if not isinstance(switch, dict):
        raise UserError('The fusion switch JSON has no "Switch" object', where,
                        'Write {"Switch": {"GraphFusion": {...}, "UBFusion": {...}}}.')
    result = FusionSwitches()
    for group, entries in switch.items():
        if group not in ("GraphFusion", "UBFusion") or not isinstance(entries, dict):
            raise UserError(f'Unknown group {group!r} under "Switch"', where, 'Use "GraphFusion" and "UBFusion".')
        for name, value in entries.items():
            if str(value).lower() not in ("on", "off"):
                raise UserError(f'Value {value!r} for {group}.{name} is invalid', where, 'Use "on" or "off".')
            on = str(value).lower() == "on"
            if name == "ALL":
                if group == "GraphFusion":
                    result.all_graph = on
                else:
                    result.all_ub = on
            else:
                result.switches[name] = on
    return result


def load_fusion_switch(path: Path | str) -> FusionSwitches:
    """Read and parse a fusion switch file."""
    return load_atc_file(path, "fusion switch file", "--fusion_switch_file", parse_fusion_switch)


_FUSION_SWITCH_LINE = re.compile(rb"^[A-Za-z0-9_.\-]*(Fusion|Pass)[A-Za-z0-9_.\-]*\s*:\s*(on|off)\s*$", re.IGNORECASE)


def match_fusion_switch(path: Path, head: bytes) -> bool:
    """The JSON form (``GraphFusion`` / ``UBFusion`` sections) or ``ConvBatchnormFusionPass:off`` lines."""
    text = json_text(head)
    if text is not None:
        return bool(re.search(r'"(GraphFusion|UBFusion)"\s*:', text))
    lines = [line.split(b"#", 1)[0].strip() for line in head.removeprefix(b"\xef\xbb\xbf").splitlines()[:64]]
    lines = [line for line in lines if line]
    return bool(lines) and all(_FUSION_SWITCH_LINE.match(line) for line in lines)


FUSION_SWITCH = FileFormat("fusion_switch", "ATC fusion switch file", CONVERT, match_fusion_switch,
                           path_only(load_fusion_switch))
