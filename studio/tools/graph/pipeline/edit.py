"""Change one property of a pipeline element, keeping the rest of the file byte for byte.

Pipelines are written by hand: their key order, indentation and CR LF line endings matter to
the people who keep them in version control. So the new value is spliced into the text at the
span of the old one; a new property is added after the element's last property with the same
indentation. The result is parsed again and compared before anything is written.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.graph.pipeline.document import STREAM_CONFIG, Pipeline, read_pipeline
from studio.tools.graph.pipeline.spans import Span, parse


def parse_assignment(text: str) -> tuple[str | None, str, str, str]:
    """``[STREAM/]ELEMENT.PROP=VALUE`` -> (stream or None, element, prop, value)."""
    target, eq, value = text.partition("=")
    element_path, dot, prop = target.rpartition(".")
    if not eq or not dot or not element_path or not prop:
        raise UserError(f"Cannot read {text!r} as ELEMENT.PROP=VALUE", None,
                        "Write e.g. mxpi_tensorinfer0.modelPath=model/unet.om (STREAM/ELEMENT.PROP=... when "
                        "the element's name is used in several streams).")
    stream, _, element = element_path.rpartition("/")
    return stream or None, element, prop, value


def set_prop(pipeline: Pipeline, stream: str | None, element: str, prop: str, value: str) -> str:
    """The pipeline's text with ``element.prop`` set to the string ``value`` (added if absent)."""
    text = pipeline.text
    root = parse(text, str(pipeline.path))
    element_span, stream = _find_element(pipeline, root, stream, element)
    props = element_span.member("props")
    literal = json.dumps(value, ensure_ascii=False)
    if props is not None and not isinstance(props.value, dict):
        raise UserError(f"{element}'s \"props\" is not an object", pipeline.path, "Fix the file by hand first.")
    current = props.member(prop) if props is not None else None
    if current is not None:
        if isinstance(current.value, (dict, list)):
            raise UserError(f"{element}.{prop} holds an object, not a value", pipeline.path,
                            "Edit nested property objects in a text editor.")
        new_text = text[:current.start] + literal + text[current.end:]
    elif props is not None:
        new_text = _append_member(text, props, f"{json.dumps(prop)}: {literal}")
    else:
        new_text = _append_member(text, element_span, f"\"props\": {{{json.dumps(prop)}: {literal}}}")
    _verify(pipeline, new_text, stream, element, prop, value)
    return new_text


def save_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (a crash leaves the old or the new file, never half of one)."""
    path = Path(path)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        shutil.copymode(path, temp)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def set_prop_in_file(path: Path | str, assignment: str) -> tuple[str, str, str]:
    """``studio pipeline set``: apply ``[STREAM/]ELEMENT.PROP=VALUE`` to the file at ``path``.

    Returns (stream, element, prop) as resolved.
    """
    pipeline = read_pipeline(path)
    stream, element, prop, value = parse_assignment(assignment)
    root = parse(pipeline.text, str(pipeline.path))
    _span, stream = _find_element(pipeline, root, stream, element)
    save_text(pipeline.path, set_prop(pipeline, stream, element, prop, value))
    return stream, element, prop


def _find_element(pipeline: Pipeline, root: Span, stream: str | None, element: str) -> tuple[Span, str]:
    found = []
    for name, _start, span in root.members:
        if stream is not None and name != stream:
            continue
        candidate = span.member(element) if isinstance(span.value, dict) and element != STREAM_CONFIG else None
        if candidate is not None and isinstance(candidate.value, dict):
            found.append((candidate, name))
    streams = [s.name for s in pipeline.streams]
    if not found:
        where = f"stream {stream!r}" if stream else f"any stream ({', '.join(streams)})"
        raise UserError(f"No element {element!r} in {where}", pipeline.path,
                        "Give an element name as the pipeline spells it (studio graph summary FILE lists them).")
    if len(found) > 1:
        raise UserError(f"Element {element!r} is in several streams: {', '.join(n for _s, n in found)}",
                        pipeline.path, f"Name the stream: STREAM/{element}.PROP=VALUE.")
    return found[0]


def _append_member(text: str, obj: Span, member: str) -> str:
    """Insert ``member`` as the last member of object ``obj``, indented like its siblings."""
    newline = "\r\n" if "\r\n" in text else "\n"
    if not obj.members:
        close = obj.end - 1
        return text[:close] + member + text[close:]
    last_key_start = obj.members[-1][1]
    line_start = text.rfind("\n", 0, last_key_start) + 1
    indent = text[line_start:last_key_start]
    last_end = obj.members[-1][2].end
    if indent.strip():  # siblings share a line: stay on it
        return text[:last_end] + ", " + member + text[last_end:]
    return text[:last_end] + "," + newline + indent + member + text[last_end:]


def _verify(pipeline: Pipeline, new_text: str, stream: str, element: str, prop: str, value: str) -> None:
    """The edit changed exactly one property: anything else is a bug, and nothing is written."""
    before = json.loads(pipeline.text.lstrip("\ufeff"))
    after = json.loads(new_text.lstrip("\ufeff"))
    before[stream][element].setdefault("props", {})[prop] = value
    if before != after:
        raise UserError("Internal check failed: the edit would change more than one property", pipeline.path,
                        "The file was not changed; edit it by hand and report this.")
