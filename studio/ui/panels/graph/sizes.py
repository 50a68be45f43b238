"""Ask the user for the sizes of a model's dynamic inputs (Run shapes never sets a dim to 1 on its own)."""

from __future__ import annotations

from PySide6.QtWidgets import QInputDialog, QWidget

from studio.core.errors import UserError
from studio.tools.graph.model import Graph
from studio.tools.graph.shapes import parse_input_shapes, unknown_input_dims


def size_template(graph: Graph) -> str:
    """``x=?,3,?,?`` for every input with a dynamic dim: the known dims filled in, "?" to replace."""
    dynamic = {name for name, _, _ in unknown_input_dims(graph)}
    entries = []
    for name in graph.inputs:
        if name in dynamic:
            shape = graph.value(name).shape or ()
            entries.append(f"{name}=" + ",".join(str(d) if isinstance(d, int) and d > 0 else "?" for d in shape))
    return "; ".join(entries)


def ask_input_sizes(parent: QWidget, graph: Graph) -> dict[str, tuple[int, ...]] | None:
    """{} when every input has fixed sizes, the sizes typed, or None when the user cancels."""
    template = size_template(graph)
    if not template:
        return {}
    dims = ", ".join(f"{name}[{axis}] ({dim})" for name, axis, dim in unknown_input_dims(graph))
    text, prompt = template, f"Dynamic dims: {dims}.\nReplace every ? with a size (NAME=d0,d1,...; ';' between inputs):"
    while True:
        text, ok = QInputDialog.getText(parent, "Input sizes for the run", prompt, text=text)
        if not ok:
            return None
        try:
            sizes = parse_input_shapes([text], option="input sizes")
        except UserError as exc:
            prompt = f"{exc.what}. {exc.fix}\nDynamic dims: {dims}."
            continue
        problem = _check(graph, sizes)
        if problem is None:
            return sizes
        prompt = f"{problem}\nDynamic dims: {dims}."


def _check(graph: Graph, sizes: dict[str, tuple[int, ...]]) -> str | None:
    """Why ``sizes`` cannot run ``graph`` (unknown input, wrong rank, a dynamic input left out), or None."""
    for name, dims in sizes.items():
        if name not in graph.inputs:
            return f"The model has no input {name!r} (inputs: {', '.join(graph.inputs)})."
        shape = graph.value(name).shape
        if shape is not None and len(shape) != len(dims):
            return f"{name} has {len(shape)} dims, {len(dims)} sizes were given."
    missing = sorted({name for name, _, _ in unknown_input_dims(graph)} - set(sizes))
    return f"No sizes for {', '.join(missing)}." if missing else None

