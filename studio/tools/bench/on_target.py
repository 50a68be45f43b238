"""Run msame or ais_bench where a Target says (this computer or an Ascend host) and read its numbers.

The target is anything with ``run(argv, cwd, env_setup, cancel)`` yielding output lines and
returning the exit status, ``name`` and ``toolkit_setup()`` (studio.targets). Output lines are
passed on as Progress so the console shows them while the tool runs.
"""

from __future__ import annotations

from collections.abc import Generator

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.targets.base import stream
from studio.tools.bench.commands import ais_bench_argv, command_line, msame_argv
from studio.tools.bench.parsers import parse_ais_bench, parse_msame
from studio.tools.bench.result import BenchResult

NOT_FOUND = 127


def bench_on_target(target, model: str, tool: str = "msame", loop: int = 100, warmup: int = 5, device: int = 0,
                    inputs: list[str] | None = None, output: str | None = None, cwd: str | None = None,
                    cancel: CancelToken | None = None) -> Generator[Progress, None, BenchResult]:
    """Benchmark the .om at ``model`` (a path where the target runs) with ``tool``."""
    if tool == "msame":
        argv = msame_argv(model, loop, device, inputs, output)
    elif tool in ("ais_bench", "msit"):
        argv = ais_bench_argv(model, loop, warmup, device, inputs, output, via=tool)
    else:
        raise UserError(f"Unknown benchmark tool {tool!r}", "--tool", "Use msame, ais_bench or msit.")
    where = getattr(target, "name", "local")
    line = command_line(argv)
    yield Progress(None, f"$ {line}")
    status, lines = yield from stream(target.run(argv, cwd=cwd, env_setup=target.toolkit_setup(), cancel=cancel))
    text = "\n".join(lines)
    if status != 0:
        raise tool_failure(tool, argv[0], status, where, line, lines)
    results = parse_msame(text, model, where) if tool == "msame" else parse_ais_bench(text, model, where)
    result = results if isinstance(results, BenchResult) else results[0]
    result.tool = "ais_bench" if tool == "msit" else tool
    result.device = str(device)
    result.command = line
    if tool != "msame":
        result.loops, result.warmup = loop, warmup
    elif not result.loops:
        result.loops = loop
    if isinstance(results, list) and len(results) > 1:
        result.notes.append(f"{len(results) - 1} more device summary(ies) printed; the first is shown")
    return result


def tool_failure(tool: str, program: str, status: int, where: str, line: str, lines: list[str]) -> UserError:
    tail = "\n".join(lines[-8:])
    if status == NOT_FOUND or f"{program}: command not found" in tail or "No module named ais_bench" in tail:
        fixes = {"msame": "Build msame from Ascend's tools repository (tools/msame) and put it on PATH, "
                          "or set the host's toolkit path so set_env.sh adds it.",
                 "ais_bench": "Install ais_bench on the host (pip install the aclruntime and ais_bench wheels "
                              "from Ascend's tools repository), or use --tool msame.",
                 "msit": "Install msit on the host (pip install msit; msit install benchmark), or use --tool msame."}
        return UserError(f"{tool} was not found on {where}", f"{where}: {line}", fixes.get(tool, fixes["msame"]))
    return UserError(f"{tool} failed on {where} with exit code {status}" + (f":\n{tail}" if tail else ""),
                     f"{where}: {line}",
                     "Read the output above; logs are under ~/ascend/log/debug/plog/ on the host "
                     "(set ASCEND_GLOBAL_LOG_LEVEL=1 for more).")


def bench_om(target, model, tool: str = "msame", loop: int = 100, warmup: int = 5, device: int = 0,
             inputs: list | None = None, cancel: CancelToken | None = None) -> Generator[Progress, None, BenchResult]:
    """Benchmark a local .om file on ``target``: uploaded into a work folder there first (unless the
    target is this computer), with its input files; then :func:`bench_on_target`."""
    from pathlib import Path

    model = Path(model)
    if not model.is_file():
        raise UserError("Model not found", model, "Give the path of an .om file.")
    if getattr(target, "is_local", True):
        paths = [str(Path(p).resolve()) for p in inputs or []]
        result = yield from bench_on_target(target, str(model.resolve()), tool, loop, warmup, device, paths,
                                            cancel=cancel)
        return result
    work = target.workdir("bench")
    remote_model = f"{work}/{model.name}"
    yield Progress(0.0, f"uploading {model.name} to {target.where}:{work}")
    yield from target.put(model, remote_model, cancel)
    remote_inputs = []
    for item in inputs or []:
        item = Path(item)
        yield from target.put(item, f"{work}/{item.name}", cancel)
        remote_inputs.append(f"{work}/{item.name}")
    result = yield from bench_on_target(target, remote_model, tool, loop, warmup, device, remote_inputs, cwd=work,
                                        cancel=cancel)
    result.model = str(model)
    return result
