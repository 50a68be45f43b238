"""``--input_shape``: parse ATC's syntax, fix an ONNX model's dynamic dims, infer shapes after.

Syntax (ATC): ``"name1:1,3,224,224;name2:8,16"``; ``-1`` is a dynamic dim (ATC only, with a
dynamic_* option), ``1~10`` a range (ATC only), and ``name:`` a scalar. Where MindStudio answered
"Value [-1] for [data_1] is invalid", our errors name the input, the dim and the option to add.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Collection
from typing import TYPE_CHECKING, Union

from studio.core.errors import UserError

if TYPE_CHECKING:
    import onnx

_DIM = re.compile(r"^(-1|\d+|\d+~\d+)$")
# ATC's text, one text per option, or {name: dims} (Studio's callers: no text to misread).
ShapeValue = Union[str, "list[str]", "dict[str, tuple]"]
FORMAT_HINT = '"input_name1:n1,c1,h1,w1;input_name2:n2,c2,h2,w2"'


@dataclass(frozen=True)
class ShapeSpec:
    """One input's entry: its name and dims (ints; -1 dynamic; (lo, hi) a range)."""

    name: str
    dims: tuple

    def text(self) -> str:
        """The entry as ATC writes it."""
        return f"{self.name}:" + ",".join(f"{d[0]}~{d[1]}" if isinstance(d, tuple) else str(d) for d in self.dims)


def parse_input_shape(spec: ShapeValue, allow_dynamic: bool = True,
                      names: Collection[str] | None = None) -> dict[str, ShapeSpec]:
    """Parse an ``--input_shape`` value into ``{input name: ShapeSpec}``.

    ``spec`` is ATC's text (``"a:1,3;b:2"``), several such texts (one per ``--input-shape``
    option; ``NAME=DIMS`` is read too), or already a structure ``{name: dims}`` (what Studio's own
    callers pass: no text, so no name can be misread). ``names``, the model's real input names
    when known, settle where a name holding ``;`` or ``:`` ends (:mod:`studio.core.shape_text`); the
    caller refuses a name not among them (:func:`unknown_input`).

    Raises UserError (ATC's E10002) naming the bad entry. With ``allow_dynamic`` False, -1 and
    ranges are refused, as the local conversion needs static shapes.
    """
    from studio.core.shape_text import split_entries

    result: dict[str, ShapeSpec] = {}
    if isinstance(spec, dict):
        entries = [(name, ",".join(f"{d[0]}~{d[1]}" if isinstance(d, (tuple, list)) else str(d) for d in dims))
                   for name, dims in spec.items()]
    else:
        entries = []
        for text in [spec] if isinstance(spec, str) else list(spec):
            text = text.strip().strip('"').strip("'")
            if not text:
                raise UserError("--input_shape is empty", "--input_shape", f"Give it as {FORMAT_HINT}.")
            parts = split_entries(text, names)
            if parts is None:
                raise UserError(f"Entry {text!r} of --input_shape has no input name (E10002)",
                                "--input_shape", f"Write each entry as name:dims, e.g. {FORMAT_HINT}"
                                + (f"; the model's inputs are: {', '.join(map(repr, names))}." if names else "."))
            entries += parts
    for name, dims_text in entries:
        dims: list = []
        dims_text = re.sub(r"(?<=\d)x(?=\d)", ",", dims_text)  # 1x3x224x224, as other commands read it
        for index, raw in enumerate(filter(None, (d.strip() for d in dims_text.split(",")))):
            if not _DIM.match(raw):
                raise UserError(f"Dim {index} of input {name!r} in --input_shape is {raw!r}, not a number (E10002)",
                                "--input_shape", "Dims are positive integers, -1 (dynamic) or a range lo~hi.")
            if "~" in raw:
                lo, hi = (int(v) for v in raw.split("~"))
                if lo > hi or lo < 1:
                    raise UserError(f"Range {raw} for dim {index} of input {name!r} is empty (E10002)",
                                    "--input_shape", "Write the range as lo~hi with 1 <= lo <= hi.")
                dims.append((lo, hi))
            else:
                value = int(raw)
                if value >= 2 ** 63:
                    raise UserError(f"Dim {index} of input {name!r} in --input_shape is {raw}, beyond 2^63-1, the "
                                    "largest a model can hold (E10002)", "--input_shape",
                                    "Give the size the model really runs with.")
                # ATC refuses a 0; an ONNX model runs with one (an empty KV cache is a decoder's
                # first step), so local conversion (no dynamic dims: allow_dynamic False) takes it.
                if value == 0 and allow_dynamic:
                    raise UserError(f"Dim {index} of input {name!r} is 0 (E10011)", "--input_shape",
                                    "Shape values must be positive integers (or -1 with a dynamic option).")
                dims.append(value)
            if not allow_dynamic and (dims[-1] == -1 or isinstance(dims[-1], tuple)):
                raise UserError(f"Dim {index} of input {name!r} is {raw}: local conversion needs a fixed size",
                                "--input_shape", "Give a positive integer for every dim (ranges and -1 are for ATC).")
        if name in result:
            raise UserError(f"Input {name!r} appears twice in --input_shape", "--input_shape",
                            "Give each input once.")
        result[name] = ShapeSpec(name, tuple(dims))
    return result


def unknown_input(option: str, name: str, inputs: list[str], model: str = "the model") -> UserError:
    """The refusal of ``name``, not an input of ``model`` (E10016): the closest name, and every input
    name quoted (a name may hold ``,``, ``;`` or ``:``)."""
    import difflib

    close = difflib.get_close_matches(name, inputs, n=1)
    return UserError(f"{option} names {name!r}, which is not an input of {model} (E10016)", option,
                     (f"Did you mean {close[0]!r}? " if close else "")
                     + f"The model's inputs are: {', '.join(map(repr, inputs)) or '(none)'}. Give one "
                     "--input-shape NAME=DIMS per input, the name as the model spells it (quoted for the shell).")


def input_dims(model: onnx.ModelProto) -> dict[str, list]:
    """The graph's real inputs (not initializers) and their dims: int, a dim_param string, or None."""
    initializers = {init.name for init in model.graph.initializer}
    result = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dims = []
        for dim in tensor.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value > 0:
                dims.append(dim.dim_value)
            else:
                dims.append(dim.dim_param or None)
        result[value.name] = dims
    return result


def suggest_spec(model: onnx.ModelProto, fill: int = 1) -> str:
    """An --input_shape value for the model, with open dims set to ``fill``."""
    entries = []
    for name, dims in input_dims(model).items():
        entries.append(f"{name}:" + ",".join(str(d) if isinstance(d, int) else str(fill) for d in dims))
    return ";".join(entries)


def fix_input_shapes(model: onnx.ModelProto, spec: ShapeValue | None, from_files: dict | None = None
                     ) -> dict[str, list[int]]:
    """Set the model's input dims from ``spec`` (text read against the model's input names, or a
    ``{name: dims}`` structure); refuse any dim left open. Returns the final dims.

    ``from_files`` maps input names to the arrays given for them (``--input NAME=FILE.npy``): a
    given file fixes its input's shape (:func:`studio.core.model_inputs.shapes_with_files`), so such
    an input needs no ``--input_shape``. Intermediate shapes recorded in the model are dropped and
    inferred again from the new input shapes (a stale ``value_info`` would otherwise contradict
    the new sizes).
    """
    import onnx

    from studio.core.model_inputs import shapes_with_files

    current = input_dims(model)
    parsed = parse_input_shape(spec, allow_dynamic=False, names=list(current)) if spec else {}
    for option, names in (("--input_shape", parsed), ("--input", from_files or {})):
        unknown = [name for name in names if name not in current]
        if unknown:
            raise unknown_input(option, unknown[0], list(current))
    given = shapes_with_files({name: tuple(v.dims) for name, v in parsed.items()}, from_files or {}, "--input_shape")
    final: dict[str, list[int]] = {}
    for value in model.graph.input:
        if value.name not in current:
            continue
        dims = current[value.name]
        if value.name in given:
            new = list(given[value.name])
            if len(new) != len(dims):
                raise UserError(f"Input {value.name!r} has {len(dims)} dims but --input_shape gives {len(new)} (E10049)",
                                "--input_shape", f"Give {len(dims)} dims for {value.name!r}, e.g. "
                                f"{value.name}:{','.join(str(d) if isinstance(d, int) else '1' for d in dims)}.")
            for index, (old, fixed) in enumerate(zip(dims, new)):
                if isinstance(old, int) and old != fixed:
                    raise UserError(f"Dim {index} of input {value.name!r} is fixed at {old} in the model, "
                                    f"--input_shape asks for {fixed}", "--input_shape",
                                    f"Keep {old} for dim {index}; only dynamic dims can be set.")
            dims = new
        open_dims = [i for i, d in enumerate(dims) if not isinstance(d, int)]
        if open_dims:
            index = open_dims[0]
            label = current[value.name][index]
            raise UserError(
                f"Input {value.name!r} has a dynamic dim {index}"
                + (f" ({label!r})" if isinstance(label, str) else "") + " and no size was given for it",
                f"model input {value.name!r}, dim {index}",
                f'Add --input_shape="{suggest_spec_for(value.name, current[value.name])}" '
                "(replace 1 with the size you deploy with).")
        for dim_proto, size in zip(value.type.tensor_type.shape.dim, dims):
            dim_proto.Clear()
            dim_proto.dim_value = size
        final[value.name] = dims
    del model.graph.value_info[:]
    return final


def suggest_spec_for(name: str, dims: list) -> str:
    """One --input_shape entry for ``name`` with open dims set to 1."""
    return f"{name}:" + ",".join(str(d) if isinstance(d, int) else "1" for d in dims)


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX shape inference; an inconsistency becomes a UserError naming the op."""
    import onnx

    # Strict mode turns a wrong size into an error naming the op; ops of other domains (custom
    # or com.microsoft) have no schema here, so such models are inferred leniently.
    custom = any(node.domain not in ("", "ai.onnx") for node in model.graph.node)
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=not custom, data_prop=True)
    except onnx.shape_inference.InferenceError as exc:
        raise UserError(f"Shape inference failed after fixing the input shapes: {exc}", "--input_shape",
                        "Check the sizes given: they must fit every op of the model (e.g. a Reshape's target).") from exc
