"""A MindX SDK pipeline file, read with the line of every element and property.

The file is JSON: ``{stream: {"stream_config": {"deviceId": "0"}, element: {"factory": ...,
"props": {...}, "next": "elem" | ["elem", "elem:port"], "former": "elem"}}}``, one or more
streams. Links come from ``next`` (a name or a list; ``elem:port`` addresses an input port) and
from ``former`` (the element feeding this one). Properties that name other elements
(``dataSource`` and its kin) are references, drawn dashed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.core.errors import UserError
from studio.core.safe_read import SETTINGS_CAP, explain_os_errors, read_text
from studio.tools.graph.pipeline import plugins
from studio.tools.graph.pipeline.spans import Span, line_of, parse

STREAM_CONFIG = "stream_config"


@dataclass
class Link:
    """``src`` feeds ``dst`` (at input ``port`` when the file names one); ``key`` says how it was written."""

    src: str
    dst: str
    port: int | None
    key: str    # "next" or "former"
    line: int


@dataclass
class Element:
    """One element of a stream."""

    name: str
    factory: str
    props: dict[str, Any]
    line: int
    prop_lines: dict[str, int] = field(default_factory=dict)

    @property
    def role(self) -> str:
        """Source, decode, preprocess, infer, postprocess, osd, flow, sink or unknown."""
        return plugins.role_of(self.factory)


@dataclass
class Stream:
    """One stream: its configuration, elements in file order, links and problems of shape."""

    name: str
    line: int
    config: dict[str, Any]
    elements: dict[str, Element] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    bad_links: list[tuple[str, str, str, int]] = field(default_factory=list)  # (element, key, target, line)
    malformed: list[tuple[str, str, int]] = field(default_factory=list)       # (element, what, line)

    def references(self) -> list[tuple[str, str, str, int]]:
        """(element, prop, referenced element, line) for every prop naming another element."""
        out = []
        for element in self.elements.values():
            for prop in plugins.REFERENCE_PROPS:
                value = element.props.get(prop)
                if not isinstance(value, str) or not value or value == "auto":
                    continue
                for target in (t.strip() for t in value.split(",")):
                    if target:
                        out.append((element.name, prop, target, element.prop_lines.get(prop, element.line)))
        return out


@dataclass
class Pipeline:
    """A whole pipeline file."""

    path: Path
    text: str
    streams: list[Stream]


def read_pipeline(path: Path | str) -> Pipeline:
    """Read ``path``; structural problems of elements are kept as findings, JSON errors raise."""
    path = Path(path)
    with explain_os_errors(path, "pipeline"):
        # keep CR LF (no newline translation): edits write the text back; not UTF-8: a UserError naming the byte
        text = read_text(path, "pipeline", SETTINGS_CAP)
    return pipeline_from_text(path, text)


def pipeline_from_text(path: Path, text: str) -> Pipeline:
    """Parse pipeline ``text`` (read from ``path``)."""
    root = parse(text, str(path))
    if not isinstance(root.value, dict) or not root.members:
        raise UserError("Not a MindX SDK pipeline: the top level must be an object of streams", path,
                        'Write {"stream name": {"stream_config": {...}, "element0": {"factory": ...}}}.')
    streams = []
    for name, key_start, span in root.members:
        if not isinstance(span.value, dict):
            raise UserError(f"Stream {name!r} is not an object", f"{path}, line {line_of(text, key_start)}",
                            "Each top-level key is a stream holding its elements.")
        streams.append(_stream(text, name, line_of(text, key_start), span))
    return Pipeline(path, text, streams)


def _stream(text: str, name: str, line: int, span: Span) -> Stream:
    config_span = span.member(STREAM_CONFIG)
    config = config_span.value if config_span is not None and isinstance(config_span.value, dict) else {}
    stream = Stream(name, line, config)
    for element_name, key_start, element_span in span.members:
        if element_name == STREAM_CONFIG:
            continue
        element_line = line_of(text, key_start)
        value = element_span.value
        if not isinstance(value, dict):
            stream.malformed.append((element_name, "is not an object", element_line))
            continue
        factory = value.get("factory")
        if not isinstance(factory, str) or not factory:
            stream.malformed.append((element_name, "has no \"factory\"", element_line))
            factory = "?"
        props_span = element_span.member("props")
        props = props_span.value if props_span is not None and isinstance(props_span.value, dict) else {}
        if props_span is not None and not isinstance(props_span.value, dict):
            stream.malformed.append((element_name, "has \"props\" that is not an object",
                                     line_of(text, props_span.start)))
        prop_lines = {k: line_of(text, s) for k, s, _v in (props_span.members if props_span else [])}
        stream.elements[element_name] = Element(element_name, factory, props, element_line, prop_lines)
        for key in ("next", "former"):
            target_span = element_span.member(key)
            if target_span is not None:
                _links(text, stream, element_name, key, target_span)
    _drop_unknown_targets(stream)
    return stream


def _links(text: str, stream: Stream, element: str, key: str, span: Span) -> None:
    targets = span.items if isinstance(span.value, list) else [span]
    for target in targets:
        line = line_of(text, target.start)
        if not isinstance(target.value, str) or not target.value:
            stream.malformed.append((element, f"has a \"{key}\" that is not an element name", line))
            continue
        other, _, port_text = target.value.partition(":")
        port = int(port_text) if port_text.isdigit() else None
        if port_text and port is None:
            stream.malformed.append((element, f"has a \"{key}\" port that is not a number: {target.value!r}", line))
        if key == "next":
            stream.links.append(Link(element, other, port, key, line))
        else:  # "former": the named element feeds this one
            stream.links.append(Link(other, element, port, key, line))


def _drop_unknown_targets(stream: Stream) -> None:
    """Links naming a missing element become findings; a link written twice (next and former) is one."""
    kept, seen = [], set()
    for link in stream.links:
        missing = link.dst if link.dst not in stream.elements else link.src if link.src not in stream.elements else None
        if missing is not None:
            owner = link.src if link.key == "next" else link.dst
            stream.bad_links.append((owner, link.key, missing, link.line))
            continue
        key = (link.src, link.dst, link.port)
        if key not in seen:
            seen.add(key)
            kept.append(link)
    stream.links = kept
