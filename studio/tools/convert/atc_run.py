"""Run ATC here (when CANN is installed) as a job that streams its output.

The argv comes from :func:`~studio.tools.convert.atc_command.build_atc_argv`; a remote executor
can run the same argv over SSH. Cancelling kills the process (the generator's ``finally``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Generator
from dataclasses import dataclass, field

from studio.errors import ToolUnavailable, UserError
from studio.jobs import CancelToken, Progress
from studio.tools.convert.atc_log import AtcMessage, parse_atc_output, succeeded


@dataclass
class AtcResult:
    """The run's exit code, its full output and the findings in it."""

    argv: list[str]
    returncode: int
    output: str
    messages: list[AtcMessage] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and (succeeded(self.output) or not any(m.level == "error" for m in self.messages))


def run_atc(argv: list[str], cancel: CancelToken | None = None) -> Generator[Progress, None, AtcResult]:
    """Run ``argv`` (``atc ...``) and stream each output line as a Progress message."""
    program = shutil.which(argv[0])
    if program is None:
        raise ToolUnavailable("atc", "the ATC program is not on PATH on this machine",
                              "Source CANN's set_env.sh, or copy the command (--print-command) to the Ascend host.")
    process = subprocess.Popen([program, *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, bufsize=1)
    lines: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if cancel is not None:
                cancel.raise_if_cancelled()
            lines.append(line)
            yield Progress(None, line.rstrip())
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = "".join(lines)
    result = AtcResult(argv, process.returncode, output, parse_atc_output(output))
    if not result.ok:
        first = next((m for m in result.messages if m.code), None) or next(iter(result.messages), None)
        raise UserError(f"ATC failed (exit {process.returncode})" + (f": {first.code or ''} {first.text}" if first else ""),
                        "atc", first.fix if first and first.fix else "Read the ATC output above.")
    return result
