"""Studio's headless engine in a venv on a host: made once, reused, repaired when it differs.

Layout on the host (``ROOT`` is ``~/.cache/studio-remote`` unless the host entry sets
``engine_root``)::

    ROOT/<version>/venv/              python3 -m venv (the host's python3 >= 3.11)
    ROOT/<version>/wheels/            the Studio wheel uploaded from here
    ROOT/<version>/studio-env.json    marker: wheel sha256, dependency pins, python version
    ROOT/<version>/home/              STUDIO_HOME of the engine's runs

One probe script (one SSH round trip) reads the marker and asks the venv's python what is
installed. When everything matches, nothing else happens. Otherwise only what differs is done:
a venv that does not run (or runs another python) is made again, missing or other dependency
versions are installed, a different wheel is reinstalled.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Generator
from dataclasses import dataclass, field

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, Progress
from studio.runs.engine_wheel import DIST_NAME, EngineWheel, build_wheel, engine_pins
from studio.runs.engine_folders import (DEFAULT_ROOT, UNSAFE, enter_script, env_root, pinned_script,  # noqa: F401
                                        unsafe_error, unsafe_line)
from studio.runs.engine_hashes import file_requirement, put_requirements, wheel_requirement
from studio.runs.engine_put import put_pinned
from studio.runs.engine_lock import hold_setup_lock
from studio.targets.base import stream

MARKER = "studio-env.json"
VENV_PYTHON = "./venv/bin/python"  # run only from inside the checked engine folder (pinned_script)
MIN_PYTHON = (3, 11)

# Printed by the venv's python: its version and the installed versions of the names given.
_REPORT = ("import json, sys\nfrom importlib import metadata as m\nout = {'python': '%d.%d.%d' % sys.version_info[:3]}\n"
           "for n in sys.argv[1:]:\n    try: out[n] = m.version(n)\n    except Exception: out[n] = None\n"
           "print('report=' + json.dumps(out))")


@dataclass
class EngineEnv:
    """A ready engine venv on a target, and what the bootstrap did to make it so."""

    where: str
    folder: str
    python: str
    python_version: str
    actions: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def reused(self) -> bool:
        return not self.actions

    # studio.core.serial: the JSON keys
    __json_rename__ = {"where": "host"}
    __json_round__ = {"seconds": 3}
    __json_extra__ = ("reused",)


# The first python3 that runs and is new enough; else the first that runs (named in the error).
_FIND_PYTHON = ("P=; V=; for p in python3 python3.13 python3.12 python3.11; do "
            "  C=$(command -v $p 2>/dev/null) || continue; "
            "  W=$(\"$C\" -c 'import sys; print(\"%d.%d.%d\" % sys.version_info[:3])' 2>/dev/null) || continue; "
            "  [ -z \"$P\" ] && P=$C && V=$W; "
            "  case $W in 3.1[1-9].*|3.[2-9][0-9].*) P=$C; V=$W; break;; esac; done; "
            "echo \"python3=$P\"; [ -n \"$P\" ] && echo \"host_python=$V\"; "
                "if [ -n \"$P\" ]; then \"$P\" -c 'import venv, ensurepip' 2>/dev/null && echo venv=yes || echo venv=no; fi")


def probe_script(root: str, version: str, names: list[str], find_python: bool = False) -> str:
    """The one script that finds the folder, the marker and the venv's packages; the host's python3
    too when the venv does not answer (or ``find_python``). Python start-ups are the slow part of
    a reuse check (pyenv shims take ~0.3 s each), so a healthy venv costs one start-up only."""
    report = shlex.quote(_REPORT)
    args = " ".join(shlex.quote(n) for n in names)
    # enter_script leaves the shell in the checked folder: the venv's python is run as ./venv/...,
    # never by a path a folder exchanged after the check could redirect. A venv or marker made
    # by an older Studio with the login umask is made private again.
    return (f"{enter_script(root, version)}; echo \"env=$ENV\"; "
            f"if [ -d ./venv ]; then chmod 700 ./venv; fi; "
            f"if [ -f ./{MARKER} ]; then chmod 600 ./{MARKER}; printf 'marker='; tr -d '\\n' < ./{MARKER}; echo; fi; "
            f"R=$(./venv/bin/python -c {report} {args} 2>/dev/null | tail -1); echo \"$R\"; "
            + ("" if not find_python else "R=; ")
            + f"case $R in report=*) ;; *) {_FIND_PYTHON};; esac")


def parse_probe(text: str) -> dict:
    """``key=value`` lines of the probe as a dict (the marker and report parsed as JSON)."""
    found: dict = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key in ("marker", "report"):
            try:
                found[key] = json.loads(value)
            except ValueError:
                found[key] = None  # a damaged marker is as good as none
        else:
            found[key] = value
    return found


def plan(found: dict, source: str, pins: dict[str, str], wheel_sha256: str | None = None
         ) -> tuple[bool, dict[str, str], bool]:
    """(make the venv again, pins to install, reinstall the wheel) for a probe's findings.

    The wheel goes in again when the marker names other sources or (given ``wheel_sha256``)
    another wheel: builds are reproducible, so the same sources give the same bytes."""
    report = found.get("report") or {}
    marker = found.get("marker") or {}
    venv_python = report.get("python") if isinstance(report, dict) else None
    # A venv that does not run, or runs another python than it was made with (an upgrade in place).
    recreate = not venv_python or marker.get("python") not in (None, venv_python)
    if recreate:
        return True, dict(pins), True
    missing = {name: ver for name, ver in pins.items() if report.get(name) != ver}
    wheel = marker.get("source") != source or not report.get(DIST_NAME) or \
        (wheel_sha256 is not None and marker.get("wheel_sha256") != wheel_sha256)
    return False, missing, wheel


def _check_python(target, found: dict) -> None:
    where = target.where
    python = found.get("python3") or ""
    if not python:
        raise UserError(f"{where} has no python3, which Studio's engine needs", f"{where}: python3",
                        "Install Python 3.11 or newer there (e.g. `sudo apt install python3 python3-venv`).")
    version = found.get("host_python", "")
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if len(parts) < 2 or parts < MIN_PYTHON:
        raise UserError(f"{where} has Python {version or 'of unknown version'} at {python}; Studio's engine needs "
                        f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer", f"{where}: {python}",
                        "Install a newer python3 there (e.g. `sudo apt install python3.11 python3.11-venv`).")
    if found.get("venv") != "yes":
        minor = ".".join(version.split(".")[:2])
        raise UserError(f"{python} on {where} (Python {version}) cannot make a venv: the venv/ensurepip module "
                        "is missing", f"{where}: {python} -m venv",
                        f"Install it there: `sudo apt install python{minor}-venv` (or python3-venv).")


def _run(target, argv: list[str], what: str, cancel: CancelToken | None, folder: str, keep: int = 200
         ) -> Generator[Progress, None, list[str]]:
    """``argv`` run inside the engine folder ``folder`` entered by :func:`pinned_script` (paths in
    ``argv`` are ``./NAME``); a failure is a UserError with the command's last lines."""
    status, lines = yield from stream(target.run(argv, env_setup=pinned_script(folder), cancel=cancel), keep)
    found = unsafe_line(lines)
    if status == UNSAFE and found:
        raise unsafe_error(target.where, env_root(target), found)
    if status != 0:
        tail = "\n".join(lines[-15:])
        raise UserError(f"{what} failed on {target.where} (exit code {status}):\n{tail}",
                        f"{target.where}: {shlex.join(argv)[:300]}", _pip_fix(tail, target.where))
    return lines


def _pip_fix(output: str, where: str) -> str:
    lowered = output.lower()
    if any(s in lowered for s in ("no matching distribution", "could not find a version",
                                  "connection", "network is unreachable", "temporary failure in name resolution",
                                  "max retries exceeded")):
        return (f"{where} cannot reach a Python package index. Give it one (pip config set global.index-url URL), "
                "or let Studio upload the wheels from here: --engine-wheels upload.")
    if "do not match the hashes" in lowered:
        return (f"A wheel on {where} is not the one Studio sent (changed or damaged there after the upload); "
                "nothing was installed from it. Run again; if it persists, check who else writes the engine folder.")
    if "no space left" in lowered:
        return f"Free disk space on {where} (the engine venv needs about 300 MB)."
    return "Read pip's message above; `studio ssh run HOST -- python3 -m pip --version` checks pip there."


def ensure_engine(target, cancel: CancelToken | None = None, wheel: EngineWheel | None = None,
                  system_site_packages: bool = False, wheels_from: str = "index"
                  ) -> Generator[Progress, None, EngineEnv]:
    """Make sure Studio's engine venv on ``target`` matches this Studio; return where it is.

    ``wheels_from`` is "index" (the host's package index) or "upload" (the dependency wheels are
    downloaded here for the host's python and platform, uploaded, and installed without an index).
    ``system_site_packages`` lets the venv see the host's own packages (explicit only).
    """
    start = time.monotonic()
    wheel = wheel or build_wheel()
    pins = engine_pins()
    names = sorted(pins) + [DIST_NAME]
    yield Progress(None, f"checking Studio's engine on {target.where}")
    found = _probe(target, wheel.version, names)
    recreate, install, reinstall_wheel = plan(found, wheel.source, pins, wheel.sha256)
    lock = None
    if recreate or install or reinstall_wheel:  # one set-up at a time; a ready engine takes no lock
        lock = yield from hold_setup_lock(target, found["env"], cancel)
    try:
        if lock is not None:  # another set-up may have finished while this one waited: look again
            found = _probe(target, wheel.version, names)
            recreate, install, reinstall_wheel = plan(found, wheel.source, pins, wheel.sha256)
        env = yield from _set_up(target, found, wheel, pins, names, recreate, install, reinstall_wheel,
                                 system_site_packages, wheels_from, cancel)
    finally:
        if lock is not None:
            lock.release()
    env.seconds = time.monotonic() - start
    yield Progress(1.0, f"Studio's engine on {target.where}: " + ("reused" if env.reused else "; ".join(env.actions)))
    return env


def _probe(target, version: str, names: list[str]) -> dict:
    """Run the probe (see :func:`probe_script`); its findings, or a UserError saying why not."""
    status, out, err = target.run_script(probe_script(env_root(target), version, names), timeout=60)
    found = parse_probe(out.decode("utf-8", "replace"))
    if status == UNSAFE and "unsafe" in found:
        raise unsafe_error(target.where, env_root(target), found["unsafe"])
    if status != 0 or "env" not in found:
        raise UserError(f"Cannot make the engine folder on {target.where}: {err.decode('utf-8', 'replace').strip()}",
                        f"{target.where}:{env_root(target)}/{version}",
                        "Check the free disk space and the permissions of that folder (or set engine_root).")
    return found


def _set_up(target, found: dict, wheel: EngineWheel, pins: dict[str, str], names: list[str], recreate: bool,
            install: dict[str, str], reinstall_wheel: bool, system_site_packages: bool, wheels_from: str,
            cancel: CancelToken | None) -> Generator[Progress, None, EngineEnv]:
    """Do what the probe found missing (nothing for a ready engine); the engine as it is then."""
    folder = found["env"]
    python = f"{folder}/venv/bin/python"
    if recreate and "python3" not in found:  # the venv answered but must go: ask for the host's python
        status, out, _ = target.run_script(probe_script(env_root(target), wheel.version, names, True), timeout=60)
        found.update({k: v for k, v in parse_probe(out.decode("utf-8", "replace")).items()
                      if k in ("python3", "host_python", "venv")})
    if recreate:
        _check_python(target, found)
    try:
        actions = yield from _set_up_steps(target, cancel, wheel, system_site_packages, wheels_from, found, folder,
                                           python, recreate, install, reinstall_wheel, pins)
    except Cancelled:
        raise  # the next set-up makes the venv again (--clear); a cancel does not wait for a clean-up
    except Exception as exc:
        if not recreate:
            raise
        error = _set_up_failed(target, folder, exc)  # a half-made venv is not left to fill the disk
        if error is exc:
            raise
        raise error from exc
    version = found.get("host_python", "") if recreate else (found.get("report") or {}).get("python", "")
    return EngineEnv(target.where, folder, python, version, actions)


def _set_up_failed(target, folder: str, exc: BaseException) -> BaseException:
    """Remove the venv a failed set-up made part of; the error to raise (a full disk said as such)."""
    from studio.targets.files import SPACE_MARGIN, DiskFull, free_space

    space = free_space(target.run_script, folder)
    try:
        target.run_script(f"{pinned_script(folder)}; rm -rf -- ./venv ./{MARKER}", timeout=120)
    except Exception:  # the link is gone: the next set-up makes the venv again anyway
        pass
    if space is not None and space[1] < SPACE_MARGIN:
        mount, free = space
        return DiskFull(f"The disk of {target.where} is full: Studio's engine could not be set up in {folder} (the "
                        f"file system mounted at {mount} had {free / 1e6:.1f} MB free); the partial venv was removed",
                        f"{target.where}:{folder}",
                        f"Free about 300 MB on {target.where} under {mount}, or give the host an engine_root on "
                        "another disk, then run the same command again.")
    return exc


def _set_up_steps(target, cancel, wheel, system_site_packages, wheels_from, found, folder, python, recreate, install,
                  reinstall_wheel, pins) -> Generator[Progress, None, list[str]]:
    """Make the venv, install what is missing, the wheel, and the marker; the actions taken."""
    actions: list[str] = []
    if recreate:
        actions.append("created the venv" if not found.get("report") else "made the venv again")
        argv = [found["python3"], "-m", "venv", "--clear"] + (["--system-site-packages"] if system_site_packages
                                                              else []) + ["./venv"]
        yield Progress(None, f"making a venv on {target.where} with {found['python3']}")
        yield from _run(target, ["rm", "-f", f"./{MARKER}"], "Removing the old marker", cancel, folder)
        yield from _run(target, argv, "Making the engine venv", cancel, folder)
    if install:
        actions.append("installed " + " ".join(f"{k}=={v}" for k, v in sorted(install.items())))
        yield Progress(None, f"installing {', '.join(sorted(install))} on {target.where}")
        specs = [f"{k}=={v}" for k, v in sorted(install.items())]
        if wheels_from == "upload":
            yield from _upload_wheels(target, folder, python, specs, found, cancel)
        else:
            yield from _run(target, [VENV_PYTHON, "-m", "pip", "install", "--disable-pip-version-check",
                                     "--progress-bar", "off", *specs], "Installing the engine's dependencies", cancel,
                            folder)
    if reinstall_wheel:
        actions.append(f"installed {wheel.path.name}")
        remote_wheel = f"{folder}/wheels/{wheel.path.name}"
        yield from _run(target, ["mkdir", "-p", "-m", "700", "./wheels"], "Making the wheel folder", cancel, folder)
        yield from put_pinned(target, wheel.path, f"wheels/{wheel.path.name}", folder, cancel)
        # Installed only if the host holds the very bytes built here (pip compares the sha256).
        yield from put_requirements(target, [file_requirement(DIST_NAME, remote_wheel, wheel.sha256)],
                                    "wheels/studio-requirements.txt", cancel, folder)
        yield from _run(target, [VENV_PYTHON, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
                                 "--force-reinstall", "--progress-bar", "off", "--require-hashes", "-r",
                                 "./wheels/studio-requirements.txt"], "Installing Studio's wheel", cancel, folder)
    if actions:
        marker = json.dumps({"wheel_sha256": wheel.sha256, "source": wheel.source, "version": wheel.version, "pins": pins,
                             "python": found.get("host_python") if recreate else
                             (found.get("report") or {}).get("python")}, sort_keys=True)
        # 0600 (umask 077), written from inside the checked folder.
        script = f"{pinned_script(folder)}; printf '%s\\n' {shlex.quote(marker)} > ./{MARKER} && chmod 600 ./{MARKER}"
        status, out, err = target.run_script(script, timeout=30)
        found_unsafe = unsafe_line(out.decode("utf-8", "replace").splitlines())
        if status == UNSAFE and found_unsafe:
            raise unsafe_error(target.where, env_root(target), found_unsafe)
        if status != 0:
            raise UserError(f"Cannot write {MARKER} on {target.where}: {err.decode('utf-8', 'replace').strip()}",
                            f"{target.where}:{folder}", "Check the free disk space there.")
    return actions


def _upload_wheels(target, folder: str, python: str, specs: list[str], found: dict,
                   cancel: CancelToken | None) -> Generator[Progress, None, None]:
    """Download the dependency wheels here for the host's python/platform, upload and install them.

    For a host that cannot reach any package index: ``pip download`` runs here (this computer's
    index and pip cache) for the host's Python version and machine, into a fresh folder, so exactly
    the wheels this install needs go up; the host installs them with ``--no-index``.
    """
    import tempfile
    from pathlib import Path

    status, out, _ = target.run_script(f"{pinned_script(folder)}; {VENV_PYTHON} -c 'import platform; "
                                       "print(platform.machine())'")
    machine = out.decode().strip() or "x86_64"
    # The venv's python when it answered, else the host's python3 the venv was just made with.
    host_python = (found.get("report") or {}).get("python") or found.get("host_python") or ""
    pyver = "".join(host_python.split(".")[:2])
    if not pyver:
        raise UserError(f"Cannot tell the Python version of the engine venv on {target.where}",
                        f"{target.where}:{folder}/venv", "Run the command again; if it persists, remove that folder.")
    platforms = [a for tag in ("manylinux_2_28", "manylinux_2_17", "manylinux2014") for a in ("--platform",
                                                                                              f"{tag}_{machine}")]
    with tempfile.TemporaryDirectory(prefix="studio-engine-wheels-") as scratch:
        yield Progress(None, f"downloading wheels for Python {host_python} on {machine} here")
        yield from _pip_download_here(["--only-binary=:all:", "--python-version", pyver, "--implementation", "cp",
                                       *platforms, "-d", scratch, *specs], cancel)
        remote = "wheels/deps"
        yield from _run(target, ["rm", "-rf", f"./{remote}"], "Clearing the wheel folder", cancel, folder)
        yield from _run(target, ["mkdir", "-p", "-m", "700", f"./{remote}"], "Making the wheel folder", cancel, folder)
        files = sorted(Path(scratch).glob("*.whl"))
        for index, file in enumerate(files):
            yield Progress(index / max(len(files), 1), f"uploading {file.name} to {target.where}")
            yield from put_pinned(target, file, f"{remote}/{file.name}", folder, cancel)
        # Each wheel pinned to the sha256 of what was downloaded here: pip refuses any other bytes.
        yield from put_requirements(target, [wheel_requirement(f) for f in files], f"{remote}/requirements.txt",
                                    cancel, folder)
    yield Progress(None, f"installing {len(files)} uploaded wheels on {target.where}")
    yield from _run(target, [VENV_PYTHON, "-m", "pip", "install", "--disable-pip-version-check", "--no-index",
                             "--find-links", f"./{remote}", "--progress-bar", "off", "--require-hashes", "-r",
                             f"./{remote}/requirements.txt"], "Installing the uploaded wheels", cancel, folder)


def _pip_download_here(args: list[str], cancel: CancelToken | None) -> Generator[Progress, None, None]:
    """``pip download ARGS`` on this computer, cancellable; a failure is a UserError with pip's words."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen([sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
                                    "--progress-bar", "off", *args], stdout=output, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        try:
            while process.poll() is None:
                if cancel is not None and cancel.cancelled:
                    process.kill()
                    process.wait()
                    cancel.raise_if_cancelled()
                yield Progress(None, "downloading the engine's wheels here")
                time.sleep(0.1)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        output.seek(0)
        text = output.read().decode("utf-8", "replace")
    if process.returncode != 0:
        raise UserError(f"Downloading the engine's wheels on this computer failed:\n{text.strip()[-800:]}",
                        f"{sys.executable} -m pip download",
                        "--engine-wheels upload needs a package index on this computer (pip config list shows "
                        "which); or give the host an index and drop the option.")
