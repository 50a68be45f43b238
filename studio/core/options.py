"""Each option of an operation declared once, as metadata on the field of its Request.

A Request dataclass declares its fields with :func:`option` (the flag, its help, its default,
how the parsed value becomes the field's value and back, and which files go to a host). From
those declarations come the three things that used to be written by hand and drift apart:

* :func:`add_arguments` - the command's argparse arguments (in the order the command asks for,
  so a command can put its own options between them and its ``--help`` reads as it always did);
* :func:`from_args` - the Request a parsed command line describes;
* :func:`to_argv` - the command line that does exactly this Request (what a host runs).

:func:`restate` gives a subclass the same option in other words (its help, metavar or
``required``): the flag, the conversion and the host rule stay declared once.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from typing import Any

KEY = "studio.option"

#: Host-path rules (:attr:`Option.host`): how a field's files are named on a host.
HOST_RULES = ("model", "inputs", "output", "file", "folder", "here")


@dataclass(frozen=True)
class Option:
    """How one Request field is given on the command line.

    ``flags`` empty: a positional argument named ``dest``. ``arg``: the other ``add_argument``
    keywords (type, metavar, choices, required, nargs, action, default). ``parse(value, read)``
    turns the parsed value into the field's (``read``: the fields read before it, in field order);
    ``format(value)`` gives the word after the flag (a list of words for an ``append`` option).
    ``adder``/``parse``/``format`` together describe options declared by another registry (the
    thresholds): ``adder(parser)`` adds them, ``parse(args, read)`` reads them and ``format(value)``
    gives the whole argv. ``nested``: a dataclass whose own fields are options (EngineOptions).
    ``host``: what a host run does with the value (see :data:`HOST_RULES`; ``file``/``folder``
    take a ``kind``, the name of the folder it is uploaded to). ``exclusive``: options naming the
    same word are one mutually exclusive group (at most one of them on a command line). ``old``: flags
    the option had before it took the spelling every command uses (still read, hidden from
    ``--help``). ``trailing``: :func:`to_argv` writes the option last (a command after ``--``)."""

    flags: tuple[str, ...] = ()
    help: str | None = None
    dest: str | None = None
    arg: dict = dataclasses.field(default_factory=dict)
    parse: Callable | None = None
    format: Callable | None = None
    emit_default: bool = True      # False: to_argv leaves the option out when it has its default
    host: str | None = None
    kind: str | None = None
    group: str | None = None
    adder: Callable | None = None
    nested: type | None = None
    exclusive: str | None = None
    trailing: bool = False         # to_argv puts its words last (a command after ``--``)
    old: tuple[str, ...] = ()      # older spellings: still read, left out of --help

    def argparse_dest(self, name: str) -> str:
        """The attribute of the parsed namespace (argparse's own rule when not given)."""
        if self.dest:
            return self.dest
        longs = [f for f in self.flags if f.startswith("--")]
        return (longs or list(self.flags))[0].lstrip("-").replace("-", "_") if self.flags else name


def option(*flags: str, help: str | None = None, default: Any = MISSING, default_factory: Any = MISSING,
           dest: str | None = None, parse: Callable | None = None, format: Callable | None = None,
           emit_default: bool = True, host: str | None = None, kind: str | None = None, group: str | None = None,
           adder: Callable | None = None, nested: type | None = None, exclusive: str | None = None,
           trailing: bool = False, old: tuple[str, ...] = (),
           **arg: Any) -> Any:
    """A dataclass field declared with its command-line option (see :class:`Option`).

    ``default``/``default_factory`` are the field's; the parser's default is the same unless ``arg``
    says otherwise (an ``append`` option always starts from an empty list)."""
    if host is not None and host not in HOST_RULES:
        raise ValueError(f"unknown host rule {host!r}")
    if "default" not in arg and adder is None and nested is None:
        if arg.get("action") == "append":
            arg["default"] = []
        elif default is not MISSING and arg.get("action") not in ("store_true", "store_false"):
            arg["default"] = default
    meta = Option(tuple(flags), help, dest, arg, parse, format, emit_default, host, kind, group, adder, nested,
                  exclusive, trailing, tuple(old))
    return dataclasses.field(default=default, default_factory=default_factory, metadata={KEY: meta})


def option_of(field: dataclasses.Field) -> Option | None:
    """The option a field was declared with (None: not on the command line)."""
    return field.metadata.get(KEY)


def restate(cls: type, name: str, **changes: Any) -> Any:
    """Field ``name`` of ``cls`` again, for a subclass whose command words it differently:
    ``changes`` set :class:`Option` attributes (``help``, ``parse``, ...) or ``add_argument``
    keywords (``metavar``, ``required``, ``nargs``, ``type``...)."""
    base = cls.__dataclass_fields__[name]
    meta = option_of(base)
    own = {k: v for k, v in changes.items() if k in Option.__dataclass_fields__}
    arg = {**meta.arg, **{k: v for k, v in changes.items() if k not in own}}
    meta = dataclasses.replace(meta, **own, arg=arg)
    return dataclasses.field(default=base.default, default_factory=base.default_factory, metadata={KEY: meta})


def declared(cls: type) -> list[tuple[dataclasses.Field, Option]]:
    """The fields of ``cls`` that are options, in field order."""
    return [(f, option_of(f)) for f in dataclasses.fields(cls) if option_of(f) is not None]


def add_arguments(parser: argparse.ArgumentParser, cls: type, *names: str) -> None:
    """Add the options of ``cls`` named ``names`` (in that order; a nested dataclass's options by
    their own names too), or, without names, every one not added to ``parser`` yet (in field order).

    An option whose argparse destination the parser already has is not added again: two Requests
    of one command (``studio dump`` here and on an Ascend host) share ``-o/--output`` that way."""
    done = parser.__dict__.setdefault("_studio_declared", set())
    options = dict(_flat(cls))
    unknown = [n for n in names if n not in options]
    if unknown:
        raise KeyError(f"{cls.__qualname__} declares no option {unknown}")
    for name in names or list(options):
        key = _key(name, options[name])
        if key in done:
            _add_old(parser, options[name])  # this Request's older spellings of the shared option
            continue
        done.add(key)
        _add(parser, name, options[name])


def _flat(cls: type) -> list[tuple[str, Option]]:
    """The options of ``cls`` by field name, a nested dataclass's in its place."""
    out: list[tuple[str, Option]] = []
    for field, meta in declared(cls):
        out += _flat(meta.nested) if meta.nested is not None else [(field.name, meta)]
    return out


def _key(name: str, meta: Option) -> str:
    # an option of another registry (the thresholds) is known by its field, the others by where
    # argparse puts their value
    return f"field:{name}" if meta.adder is not None else meta.argparse_dest(name)


def _add(parser: argparse.ArgumentParser, name: str, meta: Option) -> None:
    if meta.adder is not None:
        meta.adder(parser)
        return
    target = parser
    if meta.group:  # one group per title, so a nested dataclass's options stay together
        target = next((g for g in parser._action_groups if g.title == meta.group), None) \
            or parser.add_argument_group(meta.group)
    if meta.exclusive:  # one argparse group per word, made by the first of its options
        groups = parser.__dict__.setdefault("_studio_exclusive", {})
        if meta.exclusive not in groups:
            groups[meta.exclusive] = target.add_mutually_exclusive_group()
        target = groups[meta.exclusive]
    kwargs = dict(meta.arg)
    if meta.help is not None:
        kwargs["help"] = meta.help
    if not meta.flags:
        target.add_argument(meta.argparse_dest(name), **kwargs)
        return
    kwargs["dest"] = meta.argparse_dest(name)
    target.add_argument(*meta.flags, **kwargs)
    _add_old(target, meta, kwargs)


def _add_old(parser, meta: Option, kwargs: dict | None = None) -> None:
    """The option under its older spellings (those the parser has not got yet), hidden from --help."""
    old = [flag for flag in meta.old if flag not in getattr(parser, "_option_string_actions", {})]
    if old:
        kwargs = kwargs if kwargs is not None else {**meta.arg, "dest": meta.argparse_dest("")}
        parser.add_argument(*old, **{**kwargs, "help": argparse.SUPPRESS})


def from_args(cls: type, args: argparse.Namespace, **given: Any):
    """The ``cls`` request parsed arguments describe (``given``: fields the caller sets itself)."""
    read: dict[str, Any] = {}
    for field, meta in declared(cls):
        read[field.name] = given[field.name] if field.name in given else _read(field, meta, args, read)
    return cls(**read)


def _read(field: dataclasses.Field, meta: Option, args: argparse.Namespace, read: dict) -> Any:
    if meta.adder is not None:
        return meta.parse(args, read)
    if meta.nested is not None:
        return from_args(meta.nested, args)
    dest = meta.argparse_dest(field.name)
    if not hasattr(args, dest):  # a parser without this option: the field's default
        return field.default_factory() if field.default_factory is not MISSING else field.default
    value = getattr(args, dest)
    return meta.parse(value, read) if meta.parse is not None else value


def to_argv(request) -> list[str]:
    """The command line (after the command's words) that gives ``request`` back through
    :func:`from_args`, in field order."""
    argv: list[str] = []
    last: list[str] = []
    for field, meta in declared(type(request)):
        (last if meta.trailing else argv).extend(_words(field, meta, getattr(request, field.name)))
    return argv + last


def _words(field: dataclasses.Field, meta: Option, value: Any) -> list[str]:
    if meta.adder is not None:
        return list(meta.format(value))
    if meta.nested is not None:
        return to_argv(value)
    action = meta.arg.get("action")
    if action == "store_true":
        return [meta.flags[0]] if value else []
    if action == "store_false":  # a --no-... flag: said only when the field is off
        return [] if value else [meta.flags[0]]
    if action == "append":
        items = meta.format(value) if meta.format is not None else [str(v) for v in value or ()]
        return [word for item in items for word in (meta.flags[0], item)]
    if value is None:
        return []
    if not meta.emit_default and field.default is not MISSING and value == field.default:
        return []
    word = meta.format(value) if meta.format is not None else str(value)
    if not meta.flags:  # a positional: its format may give several words (a command after ``--``)
        return list(word) if isinstance(word, list) else [word]
    return [meta.flags[0], word]
