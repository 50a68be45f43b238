"""Command lines for msame and ais_bench (or ``msit benchmark``) on an Ascend host.

Options as the tools document them: msame ``--model --input --output --outfmt --loop --device``
(no warm-up option: its "without first time" figure leaves out the first loop); ais_bench
``--model --input --output --loop --warmup_count --device --display_all_summary``; msit benchmark
the same with hyphens and ``--om-model``. Inputs are .bin/.npy files or folders joined with
commas, as both tools expect. The argv lists are run by a Target, which quotes each word.
"""

from __future__ import annotations

import shlex

from studio.core.errors import UserError

TOOLS = ("msame", "ais_bench", "msit")


def msame_argv(model: str, loop: int = 100, device: int = 0, inputs: list[str] | None = None,
               output: str | None = None, program: str = "msame") -> list[str]:
    """``msame --model M --loop N --device D [--input a,b] [--output DIR --outfmt BIN]``."""
    _check(model, loop)
    argv = [program, "--model", model, "--loop", str(loop), "--device", str(device)]
    if inputs:
        argv += ["--input", ",".join(inputs)]
    if output:
        argv += ["--output", output, "--outfmt", "BIN"]
    return argv


def ais_bench_argv(model: str, loop: int = 100, warmup: int = 5, device: int = 0,
                   inputs: list[str] | None = None, output: str | None = None, via: str = "ais_bench",
                   python: str = "python3") -> list[str]:
    """``python3 -m ais_bench --model M ...`` or ``msit benchmark --om-model M ...``."""
    _check(model, loop)
    if warmup < 0:
        raise UserError("--warmup must be >= 0", f"--warmup {warmup}", "Use e.g. --warmup 5.")
    if via == "msit":
        argv = ["msit", "benchmark", "--om-model", model, "--loop", str(loop), "--warmup-count", str(warmup),
                "--device", str(device), "--display-all-summary", "1"]
    else:
        argv = [python, "-m", "ais_bench", "--model", model, "--loop", str(loop), "--warmup_count", str(warmup),
                "--device", str(device), "--display_all_summary", "True"]
    if inputs:  # both spell these two alike
        argv += ["--input", ",".join(inputs)]
    if output:
        argv += ["--output", output]
    return argv


def command_line(argv: list[str]) -> str:
    """The argv as one shell-quoted line (shown to the user before it runs)."""
    return shlex.join(argv)


def _check(model: str, loop: int) -> None:
    if not model:
        raise UserError("No model given", "--model", "Give the .om file's path on the host.")
    if loop < 1:
        raise UserError("--loop must be >= 1", f"--loop {loop}", "Use e.g. --loop 100.")
