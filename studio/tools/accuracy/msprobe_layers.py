"""Layer mapping (msprobe's ``compare -lm``): pair calls of two frameworks by where they sit in the model.

A PyTorch and a MindSpore run of one model name their modules differently
(``Module.module.module.language_model…self_attention.ParallelAttention.forward.0`` against
``Cell.network_with_loss.module.language_model…attention.ParallelAttention.forward.0``), so
neither the names nor the fuzzy "n-th call of the same API" pair them. The layer mapping, in
msprobe's own YAML layout, renames the target's submodules to the golden side's names, per type
of the module that holds them::

    TopLayer:                     # the model itself (msprobe's older files say Cell)
      network_with_loss: module   # target name: golden name
    ParallelTransformerLayer:
      attention: self_attention   # a dotted key (a.b.c) renames a run of levels

A target module's attribute path is rewritten level by level: at each level the rules of the
enclosing module's type apply (its class where the dump names it, else — as msprobe's layer tree
does — the attribute name itself); the longest matching key wins. Then

* a module call pairs with the golden module call at the rewritten path, with the same direction
  and call number (its class may differ: ``FusedRMSNorm`` against ``RMSNorm``);
* an API call pairs with the golden call inside the matching module that has the same operation
  (the API name without its framework prefix, after the API mapping: ``Mint.cos`` meets
  ``Torch.cos``), the same direction, and the same rank among such calls there.

Calls paired by hand or by exact name first keep their pairs; what this leaves goes on to the
fuzzy matching.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from studio.core.errors import UserError

TOP = "TopLayer"
_LAYERS = ("Module", "Cell")
_DIRECTIONS = ("forward", "backward")


def read_layer_mapping(path: Path | None) -> dict[str, dict[str, str]]:
    """msprobe's layer mapping YAML (or the same as JSON): type -> {target name: golden name}."""
    if path is None:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"Cannot read the layer mapping ({exc.strerror})", path, "Check the path.") from exc
    try:
        data = json.loads(text)
    except ValueError:
        data = _two_level_yaml(text, path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UserError("A layer mapping maps module types to {target name: golden name}", path,
                        "Write msprobe's layout: a type on its own line (TopLayer:), then indented "
                        "'target_name: golden_name' lines.")
    mapping = {str(k): {str(a): str(b).split("(")[0].strip() for a, b in v.items()} for k, v in data.items()}
    if "Cell" in mapping and TOP not in mapping:  # msprobe's older name for the top layer
        mapping[TOP] = mapping.pop("Cell")
    return mapping


def _two_level_yaml(text: str, path) -> dict:
    """The YAML subset msprobe's layer mappings use: ``Type:`` lines, each followed by indented
    ``name: name`` lines (comments and quotes allowed)."""
    data: dict[str, dict[str, str]] = {}
    current = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        key, sep, value = line.strip().partition(":")
        key, value = key.strip().strip("'\""), value.strip().strip("'\"")
        if not sep or not key:
            raise UserError("Not a layer mapping line (name: name)", f"{path}, line {number}",
                            "Write 'Type:' lines, each followed by indented 'target_name: golden_name' lines.")
        if not raw[:1].isspace():
            if value:
                raise UserError("A module type needs its renames on the indented lines below it",
                                f"{path}, line {number}", f"Write '{key}:' alone, then '  target_name: golden_name'.")
            current = data.setdefault(key, {})
        elif current is None or not value:
            raise UserError("A rename outside a module type, or without a golden name", f"{path}, line {number}",
                            "Put 'target_name: golden_name' lines under a 'Type:' line.")
        else:
            current[key] = value
    return data


def module_parts(name: str) -> tuple[tuple[str, ...], str, str, str] | None:
    """``(attribute path, class, direction, call number)`` of a module call name, or None (an API call)."""
    parts = name.split(".")
    if parts[0] not in _LAYERS or len(parts) < 5 or parts[-2] not in _DIRECTIONS:
        return None
    return tuple(parts[1:-3]), parts[-3], parts[-2], parts[-1]


def _classes(names) -> dict[tuple[str, ...], str]:
    classes = {}
    for name in names:
        parts = module_parts(name) if name else None
        if parts:
            classes[parts[0]] = parts[1]
    return classes


def _rename(path: tuple[str, ...], classes: dict, mapping: dict[str, dict[str, str]]) -> tuple[str, ...]:
    """The target's attribute path in the golden side's names."""
    out: list[str] = []
    i, kind = 0, TOP
    while i < len(path):
        step, renamed = 1, [path[i]]
        rules = sorted(mapping.get(kind, {}).items(), key=lambda kv: -kv[0].count("."))
        for key, value in rules:
            keys = tuple(key.split("."))
            if path[i:i + len(keys)] == keys:
                step, renamed = len(keys), value.split(".")
                break
        out += renamed
        i += step
        kind = classes.get(path[:i], path[i - 1])
    return tuple(out)


def layer_pairs(golden, target, mapping: dict[str, dict[str, str]], operation: Callable[[object], str],
                taken_golden: set[str], taken_target: set[str]) -> dict[str, str]:
    """Target call name -> golden call name, for calls not yet taken on either side.

    ``golden``/``target`` are :class:`~studio.tools.accuracy.msprobe_dump.MsprobeDump`;
    ``operation(call)`` names a call's operation across frameworks (the API mapping applied)."""
    if not mapping:
        return {}
    classes = {id(d): _classes([*d.parents, *d.parents.values(), *(c.name for c in d.calls)])
               for d in (golden, target)}

    def scope(dump, module: str | None, rename: bool) -> tuple:
        parts = module_parts(module) if module else None
        if parts is None:
            return (TOP,)
        path = _rename(parts[0], classes[id(dump)], mapping) if rename else parts[0]
        return path, parts[2], parts[3]

    def keys(dump, rename: bool, taken: set[str]) -> dict[tuple, str]:
        found: dict[tuple, str] = {}
        ranks: dict[tuple, int] = {}
        for call in dump.calls:
            parts = module_parts(call.name)
            if parts is not None:
                key = ("module", *scope(dump, call.name, rename))
            else:
                direction = next((d for d in _DIRECTIONS if call.name.endswith("." + d)), "")
                where = ("api", scope(dump, dump.parents.get(call.name), rename), operation(call), direction)
                ranks[where] = ranks.get(where, -1) + 1
                key = (*where, ranks[where])
            if call.name not in taken:
                found.setdefault(key, call.name)
        return found

    golden_keys = keys(golden, False, taken_golden)
    pairs = {}
    for key, name in keys(target, True, taken_target).items():
        if key in golden_keys:
            pairs[name] = golden_keys.pop(key)
    return pairs
