"""What the Deployment panel shows, without Qt: the texts for a deployment and its plan, whether a
plan has anything to apply, what an apply would delete, and which deployment holds a file.

The panel (``panel.py``) lays out the list, the plan table and the buttons and wires them to this.
"""

from __future__ import annotations

from pathlib import Path

from studio.tools.deploy.deployments import Deployment
from studio.tools.deploy.plan import CONFLICT, DELETE_LOCAL, DELETE_REMOTE, DOWNLOAD, UPLOAD, Plan

MODES = (("sync", "Sync (two-way)"), ("upload", "Upload (local → remote)"), ("download", "Download (remote → local)"))
NO_DEPLOYMENTS = "Select a deployment on the left, or add one."
EMPTY_TEXT = ("Map a local folder to a folder on an SSH host: <b>Dry run</b> shows what would change, <b>Apply</b> "
              "copies it (also: <code>studio deploy add NAME --host HOST --local DIR --remote DIR</code>).")
NO_PLAN = "Press “Dry run” to see what would change.\nNothing is copied or deleted until you press “Apply”."


def header_text(deployment: Deployment) -> str:
    """The line over the plan (rich text): name, both folders, the excludes."""
    excludes = f" — excluding {', '.join(deployment.excludes)}" if deployment.excludes else ""
    return f"<b>{deployment.name}</b>: {deployment.local} ↔ {deployment.host}:{deployment.remote}{excludes}"


def plan_text(plan: Plan) -> str:
    """The summary of a fresh plan, with what to do about conflicts and the scan's notes."""
    text = plan.summary()
    if plan.conflicts:
        text += ". Conflicts are never overwritten: select them and choose a side."
    for note in plan.notes:
        text += f"\n{note}"
    return text


def actionable(plan: Plan) -> bool:
    """The plan copies or deletes something (as the conflicts are settled now), or records state."""
    wanted = (UPLOAD, DOWNLOAD, DELETE_REMOTE, DELETE_LOCAL)
    return any(i.effective_action(plan.delete) in wanted for i in plan.items) or bool(plan.records)


def has_conflict(plan: Plan | None, rows) -> bool:
    """One of the plan's ``rows`` is a conflict (the choice buttons act on it)."""
    return plan is not None and any(plan.items[r].action == CONFLICT for r in rows)


def deletions(counts: dict[str, int]) -> int:
    """How many files an apply deletes, on both sides."""
    return counts["delete-remote"] + counts["delete-local"]


def deletions_question(deployment: Deployment, counts: dict[str, int], mode: str) -> str:
    """The question asked before an apply that deletes files (the CLI asks the same, or takes --yes)."""
    where = []
    if counts["delete-remote"]:
        where.append(f"{counts['delete-remote']} file(s) on {deployment.host}:{deployment.remote}")
    if counts["delete-local"]:
        where.append(f"{counts['delete-local']} file(s) in {deployment.local}")
    return f"This {mode} deletes " + " and ".join(where) + ". The deleted files are listed in the plan. Go ahead?"


def failure_text(exc: BaseException) -> str:
    """A failed job in one line: what, and how to fix it when the error says."""
    if hasattr(exc, "what"):
        return exc.what + (f" — {exc.fix}" if getattr(exc, "fix", None) else "")
    return str(exc)


def deployment_for(path: Path, deployments: dict[str, Deployment]) -> str | None:
    """The name of the deployment whose local folder is or holds ``path``, or None."""
    path = Path(path).resolve()
    for name, deployment in deployments.items():
        root = deployment.local_root.resolve()
        if path == root or root in path.parents:
            return name
    return None
