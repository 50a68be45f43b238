"""Shared helpers for the deployment tests: awkward trees, a deployment on the test sshd."""

from __future__ import annotations

import os
from pathlib import Path

from studio.core.jobs import run_job
from studio.remote.connection import connect
from studio.tools.deploy.deployments import Deployment

# Names that break naive quoting or line-based parsing, and non-ASCII.
AWKWARD = {
    "plain.txt": b"plain\n",
    "with space/a b.txt": b"space\n",
    "quotes/it's \"q\".txt": b"quotes\n",
    "subst/$(touch INJECTED).txt": b"no subst\n",
    "semi/x; touch INJECTED2": b"semi\n",
    "new\nline.txt": b"newline\n",
    "unicode/模型-ü.onnx": b"\x00\x01binary\xff",
    "-dash-first.txt": b"dash\n",
    "deep/a/b/c/d.bin": os.urandom(3000),
}


def write_tree(root: Path, files: dict[str, bytes], mtime: int | None = 1_700_000_000) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if mtime is not None:
            os.utime(path, (mtime, mtime))


def read_tree(root: Path) -> dict[str, bytes]:
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def make_deployment(tmp_path: Path, excludes=(), name: str = "proj") -> Deployment:
    local = tmp_path / "local"
    local.mkdir(parents=True, exist_ok=True)
    return Deployment(name=name, host="testhost", local=str(local), remote=str(tmp_path / "remote"),
                      excludes=list(excludes))


def connector_for(sshd_host):
    entry, known = sshd_host
    return lambda: connect(entry, known)


def plan(deployment, mode, sshd_host, **kw):
    from studio.tools.deploy.sync import plan_job

    return run_job(plan_job(deployment, mode, connector_for(sshd_host), **kw))


def apply(deployment, the_plan, sshd_host, cancel=None, on_progress=None):
    from studio.tools.deploy.sync import apply_job

    return run_job(apply_job(deployment, the_plan, connector_for(sshd_host), cancel=cancel), cancel,
                   on_progress=on_progress)


def actions(the_plan) -> dict[str, str]:
    return {i.path: i.effective_action(the_plan.delete) for i in the_plan.items}


def count_reads(monkeypatch, owner, name: str, source_at: int) -> list[int]:
    """Patch ``owner.name`` (a function whose positional argument ``source_at`` is a readable) so the
    sizes of the chunks read from that source are counted; returns the list they are appended to
    (its sum: the bytes that really went over the link)."""
    real, counts = getattr(owner, name), []

    class Counted:
        def __init__(self, source):
            self.source = source

        def read(self, n):
            chunk = self.source.read(n)
            counts.append(len(chunk))
            return chunk

    def counting(*args, **kwargs):
        args = list(args)
        args[source_at] = Counted(args[source_at])
        return real(*args, **kwargs)
    monkeypatch.setattr(owner, name, counting)
    return counts
