"""Run a configuration on a target: stream its output, return the exit code and the duration.

The target is a ``studio.targets`` Target (this computer or an SSH host): ``run(argv, cwd,
env_setup, cancel)`` yields output lines and returns the exit status; closing it (Cancel) kills
the process group, here or on the host.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.runs.config import RunConfig
from studio.runs.results import MetricsTable, fetch_outputs, parse_metrics
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
    metrics: MetricsTable = field(default_factory=MetricsTable)
    results: Path | None = None  # the local folder the run's output files were fetched into
    fetched: list[Path] = field(default_factory=list)
    not_fetched: list[str] = field(default_factory=list)  # matched, but reached through a symlinked folder

    __json_omit_empty__ = ("not_fetched",)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def summary(self) -> str:
        return f"{self.name}: exit code {self.exit_code} after {self.duration_s:.2f} s on {self.where}"


def results_folder(base: Path, name: str, now: dt.datetime | None = None) -> Path:
    """A new folder for one run's fetched outputs: ``<base>/runs/<name>_<YYYYmmdd-HHMMSS>``."""
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    folder, suffix = Path(base) / "runs" / f"{safe}_{stamp}", 2
    while folder.exists():  # two runs within a second keep their own files
        folder, suffix = Path(base) / "runs" / f"{safe}_{stamp}-{suffix}", suffix + 1
    return folder


def studio_on_path() -> str:
    """The shell line that puts the folder of the program running Studio (its interpreter, or the
    packaged program) first on PATH: a local configuration names it (``python -m studio …``)
    instead of storing a clone's absolute path."""
    import shlex
    import sys

    return f'export PATH={shlex.quote(str(Path(sys.executable).parent))}:"$PATH"'


def run_configuration(config: RunConfig, target, workdir: str | None = None, keep_output: int = 10000,
                      cancel: CancelToken | None = None, results_base: Path | None = None
                      ) -> Generator[Progress, None, RunOutcome]:
    """Run ``config`` on ``target`` in ``workdir`` (default: the configuration's); yields each output
    line as a Progress message and returns a :class:`RunOutcome` (the last ``keep_output`` lines),
    with the metrics the run printed and, when the configuration names outputs to fetch, the
    files fetched into a new folder under ``results_base`` (the workspace)."""
    argv = config.argv()
    cwd = workdir if workdir is not None else (config.workdir or None)
    setup = config.env_setup() or target.toolkit_setup()
    if getattr(target, "is_local", False):
        setup = " && ".join(part for part in (setup, studio_on_path()) if part)
    import shlex

    command = shlex.join(argv)
    yield Progress(None, f"$ {'cd ' + shlex.quote(cwd) + ' && ' if cwd else ''}{command}")
    start = time.monotonic()
    status, output = yield from stream(target.run(argv, cwd=cwd, env_setup=setup, cancel=cancel), keep_output)
    outcome = RunOutcome(config.name, getattr(target, "name", "local"), command, int(status),
                         time.monotonic() - start, output, parse_metrics(output, config.metrics))
    if config.fetch and results_base is not None:
        folder = results_folder(results_base, config.name)
        outcome.fetched = yield from fetch_outputs(target, cwd, config.fetch, folder, cancel,
                                                     outcome.not_fetched)
        outcome.results = folder if outcome.fetched else None
        if outcome.fetched:
            yield Progress(None, f"fetched {len(outcome.fetched)} file(s) into {folder}")
    return outcome
