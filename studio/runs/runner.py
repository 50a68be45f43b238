"""Run a configuration on a target: stream its output, return the exit code and the duration.

The target is a ``studio.targets`` Target (this computer or an SSH host): ``run(argv, cwd,
env_setup, cancel)`` yields output lines and returns the exit status; closing it (Cancel) kills
the process group, here or on the host.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass, field

from studio.jobs import CancelToken, Progress
from studio.runs.config import RunConfig
from studio.targets.base import stream


@dataclass
class RunOutcome:
    """How a run ended."""

    name: str
    where: str
    command: str
    exit_code: int
    duration_s: float
    output: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def summary(self) -> str:
        return f"{self.name}: exit code {self.exit_code} after {self.duration_s:.2f} s on {self.where}"



def run_configuration(config: RunConfig, target, workdir: str | None = None, keep_output: int = 10000,
                      cancel: CancelToken | None = None) -> Generator[Progress, None, RunOutcome]:
    """Run ``config`` on ``target`` in ``workdir`` (default: the configuration's); yields each output
    line as a Progress message and returns a :class:`RunOutcome` (the last ``keep_output`` lines)."""
    argv = config.argv()
    cwd = workdir if workdir is not None else (config.workdir or None)
    setup = config.env_setup() or target.toolkit_setup()
    import shlex

    command = shlex.join(argv)
    yield Progress(None, f"$ {'cd ' + shlex.quote(cwd) + ' && ' if cwd else ''}{command}")
    start = time.monotonic()
    status, output = yield from stream(target.run(argv, cwd=cwd, env_setup=setup, cancel=cancel), keep_output)
    return RunOutcome(config.name, getattr(target, "name", "local"), command, int(status),
                      time.monotonic() - start, output)
