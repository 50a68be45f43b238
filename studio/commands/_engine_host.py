"""The options every engine command shares (``--provider``, how a host's engine is made) and the
one way a command runs an operation (:mod:`studio.ops`), here or with ``--host NAME``.

``studio profile run MODEL.onnx --host NAME -o DIR``, ``studio dump MODEL.onnx --host NAME -o DIR``,
``studio convert MODEL.onnx --validate --host NAME -o OUT.onnx`` and ``studio bench MODEL.onnx
--host NAME`` run the same request with Studio's engine on that host
(:func:`studio.ops.engine.run_on_engine`); the output is the local command's, plus where it ran.
"""

from __future__ import annotations

import json
import sys


def add_provider_argument(parser) -> None:
    """``--provider NAME`` (repeatable): the ONNX Runtime execution providers, here and on a host."""
    from studio.core.options import add_arguments
    from studio.ops.inputs import ModelRun

    add_arguments(parser, ModelRun, "providers")


def add_engine_arguments(parser) -> None:
    """How the host's engine venv is made (only with --host and an .onnx model)."""
    from studio.core.options import add_arguments
    from studio.ops.engine import EngineOptions

    add_arguments(parser, EngineOptions)


def is_engine_model(path) -> bool:
    return str(path).lower().endswith(".onnx")


def run_op(op, request, host: str | None, quiet: bool):
    """Run ``op.run(request, host)`` with the command line's progress and host context.

    On a host the progress lines are printed (to stderr with ``--json``, which keeps stdout for
    the result); here they update one terminal line, as every local command does."""
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job

    if not host:
        return run_job(op.run(request), on_progress=print_progress)
    from studio.commands._context import cli_context

    def show(step) -> None:
        if step.message:
            print(step.message, file=sys.stderr if quiet else sys.stdout, flush=True)

    return run_job(op.run(request, host, cli_context()), on_progress=show)


def print_result(result, as_json: bool, indent: int = 2, **text) -> None:
    """A Result as ``--json`` (its ``to_json()``) or as text (its ``text()``)."""
    print(json.dumps(result.to_json(), indent=indent) if as_json else result.text(**text))


def use_providers(args) -> None:
    """Apply ``--provider`` to this process's engine sessions."""
    from studio.core import ort_providers

    ort_providers.choose(getattr(args, "provider", None))


def run_check(op, args) -> int:
    """Run a checking operation (fp16-check, cross-check) from its parsed arguments and print it;
    exit 1 with ``--check`` when a compared tensor fails."""
    result = run_op(op, op.Request.from_args(args), args.host, args.json)
    print_result(result, args.json, indent=1)
    return 1 if args.check and not result else 0
