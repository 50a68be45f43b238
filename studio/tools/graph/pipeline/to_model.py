"""A pipeline as a graph the viewer draws: elements are nodes, links are edges, streams are groups.

Nodes are named ``stream/element`` so that the viewer's scope grouping makes one group per
stream. A link becomes a value ``src -> dst`` (with ``:port``); a property naming another element
(``dataSource`` ...) becomes a control input, drawn as a reference rather than a data flow.
"""

from __future__ import annotations

from pathlib import Path
import re

from studio.core.formats import GRAPH, FileFormat, json_text

from studio.tools.graph.model import Graph, Model, Node, Value
from studio.tools.graph.pipeline.document import Pipeline, read_pipeline

DOMAIN = "mindx"


def read_pipeline_model(path: Path | str, cancel=None) -> Model:
    """Read a ``.pipeline`` file as a graph :class:`Model` (format ``mindx_pipeline``), with the
    findings of :func:`check_pipeline` (project folder guessed, as the findings say)."""
    from studio.tools.graph.pipeline.check import check_pipeline

    pipeline = read_pipeline(path)
    model = pipeline_model(pipeline)
    result = check_pipeline(pipeline)
    model.findings = result.findings
    model.metadata["project folder"] = f"{result.project} ({result.project_reason})"
    return model


def pipeline_model(pipeline: Pipeline) -> Model:
    """The graph of an already read pipeline."""
    graph = Graph(name=pipeline.path.stem)
    for stream in pipeline.streams:
        nodes: dict[str, Node] = {}
        for element in stream.elements.values():
            attributes = {"role": element.role, **element.props}
            node = Node(name=f"{stream.name}/{element.name}", type=element.factory, attributes=attributes,
                        domain=DOMAIN)
            nodes[element.name] = node
            graph.nodes.append(node)
        for link in stream.links:
            value = f"{stream.name}/{link.src} -> {link.dst}" + (f":{link.port}" if link.port is not None else "")
            nodes[link.src].outputs.append(value)
            nodes[link.dst].inputs.append(value)
            graph.values[value] = Value(value)
        for element, _prop, target, _line in stream.references():
            if target in nodes and target != element:
                nodes[element].control_inputs.append(f"{stream.name}/{target}")
    model = Model(path=pipeline.path, format="mindx_pipeline", graphs=[graph])
    model.metadata = {"streams": ", ".join(s.name for s in pipeline.streams)}
    for stream in pipeline.streams:
        device = stream.config.get("deviceId")
        if device is not None:
            model.metadata[f"{stream.name} deviceId"] = str(device)
    return model


def match_pipeline(path: Path, head: bytes) -> bool:
    """A stream JSON: an object of streams whose elements have a ``factory`` (``.pipeline`` files)."""
    text = json_text(head)
    if not text or not text.startswith("{"):
        return False
    has_factory = re.search(r'"factory"\s*:\s*"', text) is not None
    return has_factory and (path.suffix.lower() == ".pipeline" or '"stream_config"' in text
                            or re.search(r'"next"\s*:', text) is not None)


MINDX_PIPELINE = FileFormat("mindx_pipeline", "MindX SDK pipeline", GRAPH, match_pipeline, read_pipeline_model)
