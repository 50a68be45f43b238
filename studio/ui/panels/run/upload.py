"""A run configuration's "upload the deployment first", as a job step in the Run console.

The plan is printed into the console (counts, then one line per file that moves) before any file
moves; the upload never deletes; a failed, refused or conflicting file stops the run before it starts.
"""

from __future__ import annotations

from collections.abc import Generator

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress

SHOWN = 200  # plan lines printed; the rest are counted


def upload_first(context, deployment_name: str, cancel: CancelToken | None = None) -> Generator[Progress, None, None]:
    """Upload the deployment called ``deployment_name`` through ``context``'s pooled connection."""
    from studio.tools.deploy.deployments import DeploymentStore
    from studio.tools.deploy.sync import host_connector
    from studio.tools.deploy.sync import run_job as sync_job

    if context is None:
        raise UserError("Uploading a deployment needs the window's host list", deployment_name,
                        "Upload it in the Deployment panel, then run.")
    deployment = DeploymentStore().get(deployment_name)
    pending: list[str] = []

    def on_plan(plan) -> None:
        counts = ", ".join(f"{k} {v}" for k, v in plan.counts().items() if v)
        pending.append(f"upload plan of {deployment.name}: {counts or 'nothing to do'}")
        moving = [i for i in plan.items if i.effective_action(False) not in ("same", "unchanged", "skip")]
        pending.extend(f"  {i.effective_action(False):<9} {i.path}" for i in moving[:SHOWN])
        if len(moving) > SHOWN:
            pending.append(f"  … and {len(moving) - SHOWN} more")

    yield Progress(None, f"uploading deployment {deployment.name} first")
    job = sync_job(deployment, "upload", host_connector(context, deployment), False, False, None, cancel, on_plan)
    try:
        while True:
            try:
                step = next(job)
            except StopIteration as done:
                _plan, result = done.value
                break
            while pending:
                yield Progress(None, pending.pop(0))
            if cancel is not None:
                cancel.raise_if_cancelled()
    finally:
        job.close()
    while pending:
        yield Progress(None, pending.pop(0))
    yield Progress(None, result.summary())
    if not result.ok:
        raise UserError(f"The upload of deployment {deployment.name} did not complete, so the run did not start",
                        deployment.name, "Look at it in the Deployment panel, then run again.")
