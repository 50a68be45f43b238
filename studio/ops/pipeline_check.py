"""``studio pipeline check FILE --host NAME``: check a pipeline's files where the app runs.

The app on the host reads ``modelPath`` and the other file properties relative to its own folder
there, so the local project folder is mapped to the host through the deployment that syncs it
(or ``--remote-project``), and every path is tested on the host in one round trip.
"""

from __future__ import annotations

import shlex
from pathlib import Path, PurePosixPath

from studio.core.errors import UserError


def remote_project(project: Path, host: str, deployments: list) -> tuple[str, str]:
    """(the project's folder on ``host``, how it was found) through the deployment whose local
    folder holds ``project``; the innermost one wins when several do."""
    project = Path(project).resolve()
    found = []
    for deployment in deployments:
        if deployment.host != host:
            continue
        root = deployment.local_root.resolve()
        if project == root or root in project.parents:
            found.append((len(root.parts), deployment, project.relative_to(root)))
    if not found:
        raise UserError(f"No deployment syncs {project} to {host}", "--host",
                        f"Add one (studio deploy add NAME --host {host} --local {project} --remote DIR), "
                        "or give the app's folder there with --remote-project DIR.")
    _, deployment, relative = max(found, key=lambda f: f[0])
    remote = str(PurePosixPath(deployment.remote) / PurePosixPath(relative.as_posix()))
    return remote.rstrip("/") if remote != "/" else remote, f"deployment {deployment.name!r}"


def exists_script(paths: list[str]) -> str:
    """A shell script printing 1 or 0 per path, in order (``~/`` expands to the login's home)."""
    lines = []
    for path in paths:
        if path == "~" or path.startswith("~/"):
            word = '"$HOME"' + (shlex.quote(path[1:]) if len(path) > 1 else "")
        else:
            word = shlex.quote(path)
        lines.append(f"if [ -e {word} ]; then echo 1; else echo 0; fi")
    return "\n".join(lines) or "true"


def host_files(target, paths: list[str], project: str):
    """:class:`HostFiles` for ``paths`` on ``target`` (one round trip)."""
    from studio.tools.graph.pipeline.check import HostFiles

    status, out, err = target.run_script(exists_script(paths), timeout=60)
    answers = out.decode(errors="replace").split()
    if status != 0 or len(answers) != len(paths):
        raise UserError(f"Cannot check the pipeline's files on {target.where}: "
                        f"{err.decode(errors='replace').strip() or 'no answer'}", target.where,
                        f"Check the connection: studio ssh test {target.where}")
    return HostFiles(target.where, project, {path: answer == "1" for path, answer in zip(paths, answers)})


def check_on_host(context, host: str, pipeline, project: Path | None, remote: str | None = None):
    """Check ``pipeline`` with its files looked up on ``host``: returns the CheckResult."""
    from studio.runs.where import target_for_host
    from studio.tools.deploy.deployments import DeploymentStore
    from studio.tools.graph.pipeline.check import check_pipeline, guess_project, host_paths

    if remote is None:
        local = Path(project) if project is not None else guess_project(pipeline)[0]
        remote, _how = remote_project(local, host, list(DeploymentStore().deployments.values()))
    with target_for_host(context, host) as target:
        files = host_files(target, host_paths(pipeline, remote), remote)
    return check_pipeline(pipeline, project, files)
