"""The limits every accuracy verdict is judged by, declared once: their names, defaults, flags and help.

``studio convert --validate``, ``fp16-check``, ``compare``, ``accuracy reduce`` and ``accuracy
precision`` all take the same options (``--cosine``, ``--rel-euclidean``, ``--kl-div``, ``--rmse``,
``--mean-rel-err``) and print the values they used beside each verdict. The defaults are msit's
"normal accuracy" reference values.
"""

from __future__ import annotations

import argparse

# name: (default, flag, what it limits). cosine must be above its limit; the others below.
LIMITS: dict[str, tuple[float, str, str]] = {
    "cosine": (0.99, "--cosine", "cosine similarity must be above this"),
    "rel_euclidean": (0.05, "--rel-euclidean", "relative Euclidean distance ‖t−g‖/‖g‖ must be below this"),
    "kl_div": (0.005, "--kl-div", "KL divergence of the normalised values must be below this"),
    "rmse": (1.0, "--rmse", "root mean square error must be below this"),
    "mean_rel_err": (1.0, "--mean-rel-err", "mean relative error |t/g − 1| must be below this"),
}
DEFAULTS = {name: default for name, (default, _flag, _help) in LIMITS.items()}


def add_threshold_arguments(parser: argparse.ArgumentParser) -> None:
    """The five limit options, each defaulting to None (= the default printed in its help)."""
    group = parser.add_argument_group("thresholds (printed beside every verdict)")
    for name, (default, flag, text) in LIMITS.items():
        group.add_argument(flag, dest=name, type=float, default=None, metavar="X",
                           help=f"{text} (default {default:g})")


def thresholds_from_args(args: argparse.Namespace) -> dict[str, float]:
    """The limits given on the command line, in print order (the others are left to their defaults,
    so a request made from these arguments says only what the user said)."""
    return {name: getattr(args, name) for name in DEFAULTS if getattr(args, name, None) is not None}


def threshold_argv(values: dict[str, float] | None) -> list[str]:
    """The options that give ``values`` again (:func:`thresholds_from_args` reads them back equal)."""
    argv: list[str] = []
    for name, (_default, flag, _text) in LIMITS.items():
        value = (values or {}).get(name)
        if value is not None:
            argv += [flag, repr(float(value))]
    return argv


def threshold_field():
    """The thresholds as a Request field ({limit name: value}, missing ones at their defaults),
    declared once with the five options above (:mod:`studio.core.options`)."""
    from studio.core.options import option

    return option(default_factory=dict, adder=add_threshold_arguments, format=threshold_argv,
                  parse=lambda args, _read: thresholds_from_args(args))
