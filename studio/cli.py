"""Command line entry point: no subcommand opens the workbench, a subcommand runs a tool headless.

``studio [--demo] [--workspace DIR] [FILE ...]``   open the workbench
``studio <command> ...``                           run one tool without a window
``studio --version``
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

from studio import __version__


def _command_modules() -> dict[str, ModuleType]:
    import studio.commands as package

    modules = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"studio.commands.{info.name}")
        modules[module.NAME] = module
    return modules


def _gui_parser(commands: dict[str, ModuleType]) -> argparse.ArgumentParser:
    listing = "\n".join(f"  {name:<12} {module.HELP}" for name, module in commands.items())
    parser = argparse.ArgumentParser(
        prog="studio",
        description="Studio: convert, deploy, profile, compare and inspect models for Ascend NPUs and ONNX Runtime.",
        epilog=f"commands (run headless; `studio COMMAND --help` for details):\n{listing}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"studio {__version__}")
    parser.add_argument("--demo", action="store_true", help="open the demo workspace (written on first use)")
    parser.add_argument("--workspace", type=Path, metavar="DIR", help="open this workspace folder (a studio.toml is added if it has none)")
    parser.add_argument("files", nargs="*", type=Path, metavar="FILE", help="files or folders to open")
    parser.add_argument("--startup-probe", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the GUI or one command; return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:  # answer before importing anything else
        print(f"studio {__version__}")
        return 0
    commands = _command_modules()
    if argv and argv[0] in commands:
        return _run_command(commands[argv[0]], argv[1:])
    args = _gui_parser(commands).parse_args(argv)
    from studio.ui.app import run_gui

    return run_gui(demo=args.demo, workspace=args.workspace, files=args.files, startup_probe=args.startup_probe)


def command_parser(module: ModuleType | str) -> argparse.ArgumentParser:
    """The argument parser of one subcommand (a module of studio.commands, or its name)."""
    if isinstance(module, str):
        module = _command_modules()[module]
    parser = argparse.ArgumentParser(prog=f"studio {module.NAME}", description=module.HELP)
    module.add_arguments(parser)
    return parser


def _run_command(module: ModuleType, argv: list[str]) -> int:
    from studio.core.errors import Cancelled, StudioError

    args = command_parser(module).parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        # Names read from files can hold lone surrogates ("\ud800" in JSON is valid): print them as
        # \ud800, never fail on them after the work is done.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        return int(module.run(args) or 0)
    except Cancelled:
        print("cancelled", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except StudioError as exc:
        from studio.core.printable import printable

        # A message may quote a host's words (its stderr): no escape sequence reaches the terminal.
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`studio ... | head`): stop quietly, as other Unix tools do.
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
