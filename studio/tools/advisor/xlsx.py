"""Read the cells of an .xlsx workbook with the standard library (zip + XML), as text.

Enough for the workbooks msprof-analyze writes: shared strings, inline strings and numbers; no
formulas evaluated, no styles. Keeps the optional extra free of a spreadsheet dependency.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
       "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships"}
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def _column(ref: str) -> int:
    letters = re.match(r"[A-Z]+", ref).group(0)
    index = 0
    for ch in letters:
        index = index * 26 + ord(ch) - 64
    return index - 1


def read_workbook(path: Path) -> dict[str, list[list[str]]]:
    """Sheet name -> rows of cell texts (short rows padded to their widest cell)."""
    with zipfile.ZipFile(path) as book:
        names = set(book.namelist())
        shared = []
        if "xl/sharedStrings.xml" in names:
            root = ElementTree.fromstring(book.read("xl/sharedStrings.xml"))
            for si in root.findall("m:si", _NS):
                shared.append("".join(t.text or "" for t in si.iter(f"{{{_NS['m']}}}t")))
        rels = ElementTree.fromstring(book.read("xl/_rels/workbook.xml.rels"))
        targets = {r.get("Id"): r.get("Target") for r in rels}
        workbook = ElementTree.fromstring(book.read("xl/workbook.xml"))
        sheets = {}
        for sheet in workbook.find("m:sheets", _NS):
            target = targets.get(sheet.get(_REL), "")
            member = target.lstrip("/") if target.startswith("/") else f"xl/{target}"
            if member not in names:
                continue
            sheets[sheet.get("name")] = _rows(ElementTree.fromstring(book.read(member)), shared)
        return sheets


def _rows(root, shared: list[str]) -> list[list[str]]:
    rows = []
    for row in root.iter(f"{{{_NS['m']}}}row"):
        cells: dict[int, str] = {}
        for c in row.findall("m:c", _NS):
            kind, ref = c.get("t"), c.get("r") or ""
            v = c.find("m:v", _NS)
            if kind == "s" and v is not None:
                text = shared[int(v.text)]
            elif kind == "inlineStr":
                text = "".join(t.text or "" for t in c.iter(f"{{{_NS['m']}}}t"))
            else:
                text = v.text if v is not None and v.text is not None else ""
            cells[_column(ref) if ref else len(cells)] = text.replace("_x000D_", "")
        if cells:
            rows.append([cells.get(i, "") for i in range(max(cells) + 1)])
    return rows
