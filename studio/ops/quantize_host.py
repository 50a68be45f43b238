"""The Ascend half of ``studio quantize --ascend DIR --host NAME``: the folder's ``commands.sh``
(``amct_onnx calibration`` with the rollback set as ``skip_layers``, then ``atc``) run on the host
through :func:`~studio.ops.toolkit.run_on_toolkit` — the folder goes up into a new work folder, the
commands run after the toolkit's ``set_env.sh`` with their output streamed, and AMCT's deployable
model, the ``.om`` and the run's log come back into ``DIR``."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.ops.toolkit import ToolRun, run_on_toolkit

LOG = "quantize_ascend.log"


@dataclass
class AscendRun:
    """Where the commands ran and what came back."""

    host: str
    work: str | None
    seconds: float
    deploy_model: Path
    om: Path
    log: Path


def run_ascend(folder: Path, ascend: dict, target, cancel: CancelToken | None = None
               ) -> Generator[Progress, None, AscendRun]:
    """Job: run ``folder``'s commands.sh on ``target`` (see the module docstring); ``ascend`` is what
    :func:`~studio.tools.quantize.amct.write_amct` wrote (the names of the deployable model and .om)."""
    folder = Path(folder)
    uploads = [(path, path.relative_to(folder).as_posix()) for path in sorted(folder.rglob("*"))
               if path.is_file() and path.name != LOG]
    deploy, om = ascend["deploy_model"], ascend["om"]
    local_deploy, local_om = folder / deploy, folder / om
    local_deploy.parent.mkdir(parents=True, exist_ok=True)
    run = ToolRun("AMCT and ATC", ["sh", "commands.sh"], work="quantize", uploads=uploads,
                  outputs=[(deploy, local_deploy), (om, local_om), (LOG, folder / LOG)], log=LOG,
                  missing_fix="Install CANN's AMCT (amct_onnx) and ATC on the host; its toolkit's set_env.sh puts "
                              "them on PATH.",
                  show=lambda line: Progress(None, line[:200]))
    outcome = yield from run_on_toolkit(run, target, cancel)
    if not local_om.is_file():
        raise UserError("The host's commands ended without an .om", f"{outcome.where}:{outcome.work}",
                        f"Read {LOG} in that folder.")
    return AscendRun(outcome.where, outcome.work, outcome.seconds, local_deploy, local_om, folder / LOG)
