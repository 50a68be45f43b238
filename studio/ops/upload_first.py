"""A run configuration's "upload the deployment first": one operation for ``studio run``,
``studio profile run --host``, ``studio dump --host`` and the Run console.

The plan is shown (counts, then one line per file that moves) before any file moves; the upload
never deletes; a failed, refused or conflicting file stops the run before it starts.

Steps with a message are lines to show (the Run console prints each; the command line prints
them); steps without one carry the transfer's progress only.
"""

from __future__ import annotations

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Job, Progress, relay

SHOWN = 200  # plan lines shown; the rest are counted


def plan_lines(name: str, plan) -> list[str]:
    """What the plan of ``name``'s upload says before anything moves."""
    counts = ", ".join(f"{k} {v}" for k, v in plan.counts().items() if v)
    lines = [f"note: {note}" for note in plan.notes]
    lines.append(f"upload plan of {name}: {counts or 'nothing to do'}")
    moving = [i for i in plan.items if i.effective_action(False) not in ("same", "unchanged", "skip")]
    lines.extend(f"  {i.effective_action(False):<9} {i.path}" for i in moving[:SHOWN])
    if len(moving) > SHOWN:
        lines.append(f"  … and {len(moving) - SHOWN} more")
    return lines


def run(context, deployment_name: str, cancel: CancelToken | None = None) -> Job:
    """Upload the deployment called ``deployment_name`` through ``context``'s connection (the
    window's pooled one or the command line's); returns the sync result."""
    from studio.tools.deploy.deployments import DeploymentStore
    from studio.tools.deploy.sync import host_connector
    from studio.tools.deploy.sync import run_job as sync_job

    if context is None:
        raise UserError("Uploading a deployment needs the host list", deployment_name,
                        "Upload it in the Deployment panel (or `studio deploy upload`), then run.")
    deployment = DeploymentStore().get(deployment_name)
    pending: list[str] = []
    yield Progress(None, f"uploading deployment {deployment.name} first")
    job = sync_job(deployment, "upload", host_connector(context, deployment), False, False, None, cancel,
                   lambda plan: pending.extend(plan_lines(deployment.name, plan)))

    def passed_on(step):
        while pending:
            yield Progress(None, pending.pop(0))
        if isinstance(step, Progress) and step.fraction is not None:
            yield Progress(step.fraction, "")  # the transfer's progress, no line
        if cancel is not None:
            cancel.raise_if_cancelled()

    try:
        _plan, result = yield from relay(job, passed_on)
    finally:
        job.close()
    while pending:
        yield Progress(None, pending.pop(0))
    yield Progress(None, result.summary())
    if not result.ok or result.conflicts:
        raise UserError(f"The upload of deployment {deployment.name} did not complete, so the run did not start",
                        f"deployment {deployment.name}",
                        f"Look at it with `studio deploy status {deployment.name}` (or in the Deployment panel), "
                        "then run again.")
    return result
