"""Input shapes the user gives (``--input-shape NAME=1,3,640,640``), shapes inferred from them, and
the dims that stay unknown.

A model with dynamic inputs (``x: [N,3,H,W]``) has no sizes to count MACs with. Given sizes are set
on a copy of the ONNX graph's inputs and ONNX shape inference (with data propagation, and the
graph's own size computations evaluated: :mod:`.shape_fold`, so PyTorch's and Paddle's
Shape/Gather/Slice/Concat/Expand chains resolve) fills every tensor; nothing is guessed. :class:`ShapeSource`
records which it was, so every output can say "shapes given: …" or name the dims left unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.core.errors import UserError
from studio.tools.graph.model import Graph, Model, Value

OPTION = "--input-shape"


@dataclass
class ShapeSource:
    """Where the shapes of a graph came from: ``given`` (the user's), else inferred from the file."""

    given: dict[str, tuple[int, ...]] = field(default_factory=dict)
    unknown_dims: list[tuple[str, int, str]] = field(default_factory=list)  # (input, axis, dim name)
    run: bool = False  # the shapes were recorded by an ONNX Runtime run with the given sizes
    compiled: bool = False  # an OM model: the shapes ATC compiled in, which no option changes
    fed: dict[str, str] = field(default_factory=dict)  # input -> what the run fed it (run shapes only)

    def text(self, fix: str = f"give them with {OPTION} NAME=d0,d1,...") -> str:
        """One line: given, from a run or inferred, and what stayed unknown (with ``fix``, in the words
        of the surface showing it)."""
        sizes = "; ".join(f"{k}={','.join(map(str, v))}" for k, v in self.given.items())
        if self.run:
            head = "shapes from a run" + (f" with {sizes}" if sizes else "")
        elif self.given:
            head = f"shapes given: {sizes}"
        elif self.compiled:
            head = "shapes as ATC compiled them into the model"
            fix = "dynamic in the compiled model"
        else:
            head = "shapes inferred from the file"
        if self.run and self.fed:
            head += " (fed " + "; ".join(f"{k}: {v}" for k, v in self.fed.items()) + ")"
        if self.unknown_dims:
            dims = ", ".join(f"{name}[{axis}]={dim}" for name, axis, dim in self.unknown_dims)
            head += f"; unknown dims: {dims} ({fix})"
        return head


def parse_input_shapes(specs: list[str] | None, option: str = OPTION) -> dict[str, tuple[int, ...]]:
    """``["x=1,3,640,640", "y:1,16"]`` (``;`` also separates entries) -> ``{"x": (1,3,640,640), ...}``.

    ``option`` names the field in messages, as the surface that asked spells it. Read by the one
    parser every command shares (:func:`studio.core.model_inputs.parse_input_shapes`).
    """
    from studio.core.model_inputs import parse_input_shapes as parse

    return parse(specs, option)


def unknown_input_dims(graph: Graph) -> list[tuple[str, int, str]]:
    """(input, axis, dim name) of every input dim without a size ("?" for a dim with no name)."""
    out = []
    for name in graph.inputs:
        shape = graph.value(name).shape
        if shape is None:
            out.append((name, -1, "rank unknown"))
            continue
        for axis, dim in enumerate(shape):
            if not (isinstance(dim, int) and dim > 0):
                out.append((name, axis, str(dim) if dim not in (None, -1) else "?"))
    return out


def shape_source(model: Model) -> ShapeSource:
    """The source of the shapes the model holds now: given, from a run, or inferred from the file."""
    return model.shape_source or ShapeSource({}, unknown_input_dims(model.main), compiled=model.format != "onnx")


def _numpy_dtype(array) -> str:
    return "bool" if array.dtype.kind == "b" else str(array.dtype)


def apply_input_shapes(model: Model, given: dict[str, tuple[int, ...]]) -> ShapeSource:
    """Set the given input sizes, re-run ONNX shape inference and update every graph's values.

    Raises UserError for an input the model lacks, a rank that differs from the model's, or a
    model that is not ONNX. Returns the :class:`ShapeSource` (given sizes, dims still unknown).
    """
    if not given:
        return shape_source(model)
    if model.format != "onnx":
        raise UserError(f"{OPTION} needs an ONNX model", model.path,
                        "OM models have the shapes ATC compiled into them; drop the option.")
    import onnx

    main = model.main
    for name, dims in given.items():
        if name not in main.inputs:
            raise UserError(f"The model has no input named {name!r}", OPTION,
                            "Its inputs are: " + ", ".join(f"{n} {main.value(n).shape_text()}" for n in main.inputs))
        declared = main.value(name).shape
        if declared is not None and len(declared) != len(dims):
            raise UserError(f"Input {name!r} has {len(declared)} dims {main.value(name).shape_text()}, "
                            f"{OPTION} gives {len(dims)}", OPTION, f"Give {len(declared)} sizes for {name}.")
        for axis, (want, have) in enumerate(zip(dims, declared or ())):
            if isinstance(have, int) and have > 0 and have != want:
                raise UserError(f"Dim {axis} of input {name!r} is fixed at {have} in the model, {OPTION} gives {want}",
                                OPTION, f"Give {have} for dim {axis} of {name} (only dynamic dims can change).")
    proto = onnx.load(str(model.path), load_external_data=False)
    for inp in proto.graph.input:
        if inp.name in given:
            shape = inp.type.tensor_type.shape
            shape.ClearField("dim")
            for d in given[inp.name]:
                shape.dim.add().dim_value = d
    from studio.tools.graph.shape_fold import infer_folded

    try:
        inferred, folded = infer_folded(proto)  # the Shape/Slice/Expand chains of exports evaluated
    except Exception as exc:  # noqa: BLE001 - inference errors are the model's, say so
        raise UserError(f"Shape inference with the given sizes failed: {str(exc).strip().splitlines()[0][:300]}",
                        model.path, f"Check the sizes given with {OPTION}.") from exc
    from studio.tools.graph.onnx_reader import _value_from_info

    values: dict[str, Value] = {}
    stack = [inferred.graph]
    while stack:
        g = stack.pop()
        for info in (*g.input, *g.output, *g.value_info):
            value = _value_from_info(info)
            if value.shape is not None or value.name not in values:
                values[value.name] = value
        for node in g.node:
            for attr in node.attribute:
                if attr.type == attr.GRAPH:
                    stack.append(attr.g)
                stack.extend(attr.graphs)
    values.update({name: Value(name, tuple(int(d) for d in array.shape), _numpy_dtype(array))
                   for name, array in folded.items()})
    for graph in model.all_graphs():
        known = set(graph.values) | set(graph.inputs) | {o for n in graph.nodes for o in n.outputs}
        for name in known & set(values):
            old = graph.values.get(name)
            if old is not None and old.runtime:
                continue  # a run's shapes stay the most trusted
            if name in graph.initializers:
                continue  # a weight's shape is its own
            graph.values[name] = values[name]
    model.shape_source = ShapeSource(dict(given), unknown_input_dims(main))
    return model.shape_source
