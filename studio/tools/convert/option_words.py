"""How the fields of :class:`~studio.tools.convert.options.ConvertOptions` read from and write
back to ``studio convert``'s command line, for the options that are more than one flag and one
value: the model (positional, or ATC's ``--model=FILE``), ``--input-shape`` (ATC's text or one
``NAME=DIMS`` per input), ``--pass`` (the local pass registry), ``--validate`` (implied by
``--input``) and ``--extra`` (ATC's own arguments, one shell string).

Each ``*_adder(parser)`` adds its options, ``*_read(args, read)`` gives the field's value and
``*_words(value)`` the argv that reads back as that value (:mod:`studio.core.options`)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from studio.core.errors import UserError

ATC_GROUP = "ATC (NPU)"


# ------------------------------------------------------------------ MODEL / --model=FILE
def model_adder(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, nargs="?", metavar="MODEL",
                        help="model file (.onnx; with --atc also .pb, .prototxt, .air); or --model=FILE as in ATC")
    parser.add_argument("--model", type=Path, dest="model_option", metavar="MODEL", help=argparse.SUPPRESS)


def model_read(args: argparse.Namespace, _read=None) -> Path:
    """MODEL, given as the positional argument or as ATC's --model=FILE (not both)."""
    given, option = getattr(args, "model", None), getattr(args, "model_option", None)
    if given is not None and option is not None and given != option:
        raise UserError(f"Two models given: {given} and --model={option}", "MODEL", "Give the model once.")
    model = given if given is not None else option
    if model is None:
        raise UserError("No model given", "MODEL", "Run: studio convert MODEL -o OUT.onnx (or --model=MODEL).")
    return Path(model)


def model_words(model: Path) -> list[str]:
    return [str(model)]


# ------------------------------------------------------------------ --input-shape
def input_shape_read(values: list[str] | str | None, _read=None) -> list[str] | str | None:
    """``--input-shape`` values as the converter takes them: one value as it is, several as a list
    (never joined into one string: a name may hold ``;`` or ``:``, tf2onnx's
    ``model_1/conv/BiasAdd;model_1/conv/Conv2D:0``, and only the model's input names can tell
    where it ends). ``NAME=DIMS`` and ATC's ``a:dims;b:dims`` are both read by
    :func:`studio.tools.convert.input_shape.parse_input_shape`."""
    if not values:
        return None
    if isinstance(values, str):
        return values
    return values[0] if len(values) == 1 else list(values)


def input_shape_texts(value: str | list[str] | dict | None) -> list[str]:
    """One ``--input-shape`` text per value: the texts given, or ``NAME=DIMS`` per input of a
    structure (the dims follow the last ``=``, so any name reads back whole)."""
    if not value:
        return []
    if isinstance(value, dict):
        return [f"{name}=" + ",".join(f"{d[0]}~{d[1]}" if isinstance(d, (tuple, list)) else str(d) for d in dims)
                for name, dims in value.items()]
    return [value] if isinstance(value, str) else list(value)


# ------------------------------------------------------------------ --pass NAME=on|off
def pass_adder(parser: argparse.ArgumentParser) -> None:
    from studio.tools.convert.passes import PASS_NAMES

    parser.add_argument("--pass", dest="passes", action="append", default=[], metavar="NAME=on|off",
                        help="switch one of Studio's local passes on or off (repeatable; all are on by default, "
                             "after --fusion-switch-file): " + ", ".join(PASS_NAMES))


def pass_switches(items: list[str]) -> dict[str, bool]:
    """``--pass NAME=on|off`` values as {name: on}."""
    from studio.tools.convert.passes import PASS_NAMES

    switches: dict[str, bool] = {}
    for item in items:
        name, sep, state = item.partition("=")
        state = state.strip().lower()
        if not sep or state not in ("on", "off"):
            raise UserError(f"--pass {item!r} is not NAME=on or NAME=off", "--pass",
                            "Example: --pass ConvBnFusion=off")
        if name.strip() not in PASS_NAMES:
            raise UserError(f"Unknown pass {name.strip()!r}", "--pass", "Passes: " + ", ".join(PASS_NAMES))
        switches[name.strip()] = state == "on"
    return switches


def pass_read(args: argparse.Namespace, _read=None) -> dict[str, bool]:
    return pass_switches(getattr(args, "passes", None) or [])


def pass_words(fusions: dict[str, bool]) -> list[str]:
    return [word for name, on in fusions.items() for word in ("--pass", f"{name}={'on' if on else 'off'}")]


# ------------------------------------------------------------------ --validate (or --input)
def validate_adder(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--validate", action="store_true",
                        help="compare with the original in ONNX Runtime (seeded random input unless --input gives data)")


def validate_read(args: argparse.Namespace, _read=None) -> bool:
    # --input gives validation data, so it asks for the validation too
    return bool(getattr(args, "validate", False) or getattr(args, "input", None))


def validate_words(validate: bool) -> list[str]:
    return ["--validate"] if validate else []


# ------------------------------------------------------------------ --extra="ATC ARGS"
def extra_adder(parser: argparse.ArgumentParser) -> None:
    group = next((g for g in parser._action_groups if g.title == ATC_GROUP), None) \
        or parser.add_argument_group(ATC_GROUP)
    group.add_argument("--extra", default="", metavar="ARGS",
                       help='additional ATC arguments; write it with "=": --extra="--op_select_implmode=high_precision"')


def extra_read(args: argparse.Namespace, _read=None) -> list[str]:
    """``--extra`` split like a shell would (the wizard's free-text additional arguments too)."""
    return split_extra_args(getattr(args, "extra", "") or "")


def split_extra_args(text: str) -> list[str]:
    """Split the wizard's free-text additional arguments like a shell would."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise UserError(f"Cannot split the additional arguments: {exc}", "additional arguments",
                        "Close the open quote.") from exc


def extra_words(extra: list[str]) -> list[str]:
    # one word with "=": a value starting with "--" would read as an option of its own
    return [f"--extra={shlex.join(extra)}"] if extra else []


def inputs_read(values: list[str] | None, _read=None) -> dict[str, Path]:
    from studio.core.model_inputs import input_files

    return input_files(values or [])


def inputs_words(inputs: dict[str, Path]) -> list[str]:
    return [f"{name}={file}" for name, file in inputs.items()]


def keep_fp32_read(values: list[str] | None, _read=None) -> list[str]:
    # split on ',' by the converter, which knows the model's op names (a name may hold a comma)
    return [value.strip() for value in values or [] if value.strip()]


def short(value: float) -> str:
    """A tolerance as the help shows it: 1e-4, not 0.0001."""
    return f"{value:.0e}".replace("e-0", "e-")
