"""msprobe's ``construct.json`` as a graph the viewer draws: the module hierarchy of a training dump.

msprobe's dump writes, beside ``dump.json``, ``construct.json``: every module call and API call
(``Module.layer1.0.Bottleneck.forward.0``, ``Functional.conv2d.3.forward``) mapped to the module
call that encloses it (``null`` at the top). Each entry becomes a node named as msprobe names it,
typed by its module class (``Bottleneck``) or API (``Functional.conv2d``), with an edge from the
enclosing module to it — the tree msprobe's ``graph_visualize`` draws. A parent that is not an
entry itself (msprobe files the optimizer's calls under ``optimizer``) becomes a node too.

The accuracy engine's verdicts colour it as an overlay keyed by these same names.
"""

from __future__ import annotations

import json
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import GRAPH, FileFormat, json_text, path_only
from studio.tools.graph.model import Graph, Model, Node, Value

DOMAIN = "msprobe"
CONSTRUCT = "construct.json"


def node_type(name: str) -> str:
    """The type shown in a box: the module's class (``Module.conv1.Conv2d.forward.0`` -> ``Conv2d``)
    or the API without its call counter and direction (``Functional.conv2d.3.forward`` ->
    ``Functional.conv2d``)."""
    parts = name.split(".")
    if parts[0] in ("Module", "Cell"):
        for direction in ("forward", "backward"):
            if direction in parts:
                at = len(parts) - 1 - parts[::-1].index(direction)
                return parts[at - 1] if at >= 2 else name
        return name
    if len(parts) >= 3 and parts[-1] in ("forward", "backward") and parts[-2].isdigit():
        return ".".join(parts[:-2])
    return name


def construct_model(parents: dict[str, str | None], path: Path) -> Model:
    """The module tree of a ``construct.json`` already read (name -> enclosing module or None)."""
    graph = Graph(name=path.parent.name or path.stem)
    nodes: dict[str, Node] = {}

    def node(name: str) -> Node:
        if name not in nodes:
            kind = "module" if name.split(".")[0] in ("Module", "Cell") else "api"
            nodes[name] = Node(name=name, type=node_type(name), attributes={"kind": kind}, domain=DOMAIN)
            graph.nodes.append(nodes[name])
        return nodes[name]

    for name, parent in parents.items():
        child = node(name)
        if parent:
            value = f"{parent} -> {name}"
            node(parent).outputs.append(value)
            child.inputs.append(value)
            graph.values[value] = Value(value)
    model = Model(path=path, format="msprobe_construct", graphs=[graph])
    modules = sum(1 for n in graph.nodes if n.attributes["kind"] == "module")
    model.metadata = {"modules": str(modules), "API calls": str(len(graph.nodes) - modules)}
    return model


def read_construct(path: Path | str) -> dict[str, str | None]:
    """``construct.json`` (or the one beside a ``dump.json``, or in a dump folder) as a dict."""
    path = _construct_path(Path(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UserError("No construct.json beside the dump", path,
                        "msprobe writes construct.json beside dump.json at level L0 or mix; dump with one of "
                        "those levels to see the module hierarchy.") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"construct.json cannot be read ({exc})", path, "Dump again; msprobe writes it as JSON.") \
            from exc
    if not isinstance(data, dict) or not all(isinstance(k, str) and (v is None or isinstance(v, str))
                                             for k, v in data.items()):
        raise UserError("Not msprobe's construct.json (a JSON object of names to enclosing module names)", path,
                        "Give the construct.json msprobe wrote beside dump.json.")
    return data


def read_construct_model(path: Path | str) -> Model:
    """The module tree of ``construct.json`` (or of the dump.json / dump folder it sits beside)."""
    path = _construct_path(Path(path))
    return construct_model(read_construct(path), path)


def _construct_path(path: Path) -> Path:
    if path.is_dir():
        return path / CONSTRUCT
    return path if path.name == CONSTRUCT else path.with_name(CONSTRUCT)


def match_construct(path: Path, head: bytes) -> bool:
    """msprobe's construct.json: that name, a JSON object whose first value is a string or null."""
    if path.name != CONSTRUCT:
        return False
    text = json_text(head)
    return text is not None and text.lstrip().startswith("{") and (
        text.strip() == "{}" or ('": "' in text or '": null' in text))


MSPROBE_CONSTRUCT = FileFormat("msprobe_construct", "msprobe module hierarchy (construct.json)", GRAPH,
                               match_construct, path_only(read_construct_model))
