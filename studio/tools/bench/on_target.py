"""msame and ais_bench on an .om: their command lines and their numbers read back (no I/O here).

Where the tool runs — this computer or an Ascend host, with the model uploaded first — is the
operations layer's (:mod:`studio.ops.bench_om`, through :func:`studio.ops.toolkit.run_on_toolkit`).
"""

from __future__ import annotations

from studio.core.errors import UserError
from studio.tools.bench.commands import ais_bench_argv, msame_argv
from studio.tools.bench.parsers import parse_ais_bench, parse_msame
from studio.tools.bench.result import BenchResult

#: What to do when the tool is not on the target.
MISSING_FIXES = {"msame": "Build msame from Ascend's tools repository (tools/msame) and put it on PATH, "
                          "or set the host's toolkit path so set_env.sh adds it.",
                 "ais_bench": "Install ais_bench on the host (pip install the aclruntime and ais_bench wheels "
                              "from Ascend's tools repository), or use --tool msame.",
                 "msit": "Install msit on the host (pip install msit; msit install benchmark), or use --tool msame."}


def bench_argv(tool: str, model: str, loop: int, warmup: int, device: int, inputs: list[str] | None,
               output: str | None) -> list[str]:
    """The tool's command line for ``model`` (a path where it runs)."""
    if tool == "msame":
        return msame_argv(model, loop, device, inputs, output)
    if tool in ("ais_bench", "msit"):
        return ais_bench_argv(model, loop, warmup, device, inputs, output, via=tool)
    raise UserError(f"Unknown benchmark tool {tool!r}", "--tool", "Use msame, ais_bench or msit.")


def read_bench(tool: str, text: str, model: str, where: str, device: int, loop: int, warmup: int,
               command: str) -> BenchResult:
    """The numbers the tool printed as a BenchResult (the first device's when it printed several)."""
    results = parse_msame(text, model, where) if tool == "msame" else parse_ais_bench(text, model, where)
    result = results if isinstance(results, BenchResult) else results[0]
    result.tool = "ais_bench" if tool == "msit" else tool
    result.device = str(device)
    result.command = command
    if tool != "msame":
        result.loops, result.warmup = loop, warmup
    elif not result.loops:
        result.loops = loop
    if isinstance(results, list) and len(results) > 1:
        result.notes.append(f"{len(results) - 1} more device summary(ies) printed; the first is shown")
    return result
