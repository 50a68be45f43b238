"""Read the JSON that ``atc --mode=1 --om=x.om --json=x.json`` writes (ModelDef as protobuf-JSON).

Shape (ascend_formats.md §1.7): ``{name, attr:[{key, value:{i|s|b|f|list:{...}}}],
graph:[{name, input, op:[{name, type, input, attr, input_desc, output_desc}]}]}`` where dtypes are
enum names (``DT_FLOAT``) and shapes are ``{"dim": [...]}``. Graphs are built like the OM reader's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from studio.core.errors import UserError
from studio.core.formats import GRAPH, FileFormat, json_text
from studio.core.safe_read import load_json
from studio.tools.graph.model import Graph, Model, Node, Tensor, Value

_DT = {"DT_FLOAT": "float32", "DT_FLOAT16": "float16", "DT_BF16": "bfloat16", "DT_DOUBLE": "float64",
       "DT_INT8": "int8", "DT_UINT8": "uint8", "DT_INT16": "int16", "DT_UINT16": "uint16", "DT_INT32": "int32",
       "DT_UINT32": "uint32", "DT_INT64": "int64", "DT_UINT64": "uint64", "DT_BOOL": "bool", "DT_STRING": "string"}


def read_om_json(path: Path, cancel=None) -> Model:
    """Read an atc --mode=1 JSON file."""
    path = Path(path)
    try:
        data = load_json(path, "OM model JSON", errors="replace")
    except json.JSONDecodeError as exc:
        raise UserError(f"Not valid JSON: {exc.msg}", f"{path}, line {exc.lineno}, column {exc.colno}",
                        "The file is truncated or damaged; run atc --mode=1 again.") from exc
    if not isinstance(data, dict) or not isinstance(data.get("graph"), list) or not data["graph"]:
        raise UserError("Not an OM model JSON: no 'graph' list at the top level", path,
                        "Open the JSON that `atc --mode=1 --om=model.om --json=model.json` writes.")
    model = Model(path=path, format="om_json")
    attrs = _attrs(data.get("attr"))
    model.metadata = {"model_name": data.get("name", ""), "version": data.get("version", "")}
    for key in ("soc_version", "framework_type", "atc_version", "opp_version", "atc_cmdline", "memory_size",
                "weight_size", "stream_num", "event_num"):
        if key in attrs:
            model.metadata[key] = attrs[key]
    graphs = []
    for index, g in enumerate(data["graph"]):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if not isinstance(g, dict):
            raise UserError(f"graph #{index} is not an object", f"{path}, graph[{index}]",
                            "Run atc --mode=1 again; the file may have been edited.")
        try:
            graphs.append(_graph(g, path, index))
        except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a field of the wrong kind
            raise UserError(f"Unexpected content in graph #{index}: {type(exc).__name__}: {exc}",
                            f"{path}, graph[{index}]", "Run atc --mode=1 again; the file may have been edited.") from exc
    by_name = {g.name: g for g in graphs}
    referenced = set()
    for graph in graphs:
        for node in graph.nodes:
            for slot, name in list(node.subgraphs.items()):
                if name in by_name:
                    node.subgraphs[slot] = by_name[name]
                    referenced.add(name)
                else:
                    del node.subgraphs[slot]
    model.graphs = [g for i, g in enumerate(graphs) if i == 0 or g.name not in referenced]
    return model


def _attrs(raw) -> dict[str, Any]:
    if isinstance(raw, dict):
        items = raw.items()
    elif isinstance(raw, list):
        items = ((a.get("key"), a.get("value")) for a in raw if isinstance(a, dict))
    else:
        return {}
    return {str(k): _attr_value(v) for k, v in items}


def _attr_value(v) -> Any:
    if not isinstance(v, dict):
        return v
    for key in ("s", "i", "f", "b", "dt"):
        if key in v:
            return v[key]
    if "list" in v and isinstance(v["list"], dict):
        lst = v["list"]
        for key in ("s", "i", "f", "b", "dt"):
            if key in lst:
                return lst[key]
        return []
    if "g" in v and isinstance(v["g"], dict):
        return {"graph": v["g"].get("name", "")}
    if "t" in v or "td" in v:
        return "<tensor>"
    return v


def _value(name: str, desc: dict) -> Value:
    shape = desc.get("shape", {})
    dims = shape.get("dim", []) if isinstance(shape, dict) else []
    dtype = desc.get("dtype")
    dtype = _DT.get(dtype, str(dtype).removeprefix("DT_").lower()) if dtype is not None else None
    return Value(name, tuple(None if int(d) < 0 else int(d) for d in dims), dtype, desc.get("layout") or None)


def _graph(g: dict, path: Path, index: int) -> Graph:
    graph = Graph(str(g.get("name") or f"graph{index}"))
    graph.inputs = [str(i) for i in g.get("input", [])]
    graph.outputs = [str(o) for o in g.get("output", [])]
    for k, op in enumerate(g.get("op", [])):
        if not isinstance(op, dict) or "name" not in op:
            raise UserError(f"op #{k} has no name", f"{path}, graph[{index}].op[{k}]",
                            "Run atc --mode=1 again; the file may have been edited.")
        name, op_type = str(op["name"]), str(op.get("type", "?"))
        attrs = _attrs(op.get("attr"))
        outs = op.get("output_desc") or [{}]
        ins = op.get("input_desc") or []
        if op_type in ("Const", "Constant"):
            value = _value(f"{name}:0", outs[0])
            graph.initializers[value.name] = Tensor(value.name, tuple(d if d is not None else -1 for d in value.shape or ()),
                                                    value.dtype or "?", problem="weights are not stored in the JSON")
            graph.values[value.name] = value
            continue
        node = Node(name=name, type=op_type, attributes=attrs)
        for j, desc in enumerate(outs):
            node.outputs.append(f"{name}:{j}")
            graph.values[f"{name}:{j}"] = _value(f"{name}:{j}", desc)
        for j, ref in enumerate(op.get("input", [])):
            ref = str(ref)
            src, _, idx = ref.rpartition(":")
            if idx == "-1":
                node.control_inputs.append(src)
                continue
            node.inputs.append(ref)
            if ref and j < len(ins) and ref not in graph.values:
                graph.values[ref] = _value(ref, ins[j])
        for j, sub in enumerate(op.get("subgraph_name", [])):
            node.subgraphs[f"subgraph_{j}"] = str(sub)
        graph.nodes.append(node)
    if not graph.inputs:
        graph.inputs = [n.outputs[0] for n in graph.nodes if n.type == "Data"]
    if not graph.outputs:
        graph.outputs = [i for n in graph.nodes if n.type == "NetOutput" for i in n.inputs if i]
    return graph


def match_om_json(path: Path, head: bytes) -> bool:
    """ModelDef JSON: a top-level object with ``graph`` lists of ``op`` lists, or ATC model attributes."""
    text = json_text(head)
    return bool(text and text.startswith("{") and (
        re.search(r'"graph"\s*:\s*\[', text) and re.search(r'"op"\s*:\s*\[', text)
        or re.search(r'"key"\s*:\s*"(atc_cmdline|om_info_list|soc_version)"', text)))


OM_JSON = FileFormat("om_json", "OM model as JSON (atc --mode=1)", GRAPH, match_om_json, read_om_json)
