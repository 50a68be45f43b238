"""This computer's roofs, measured once (best of several rounds) and kept in the user cache.

Measuring takes about ten seconds, and a measurement taken while other work held the cores comes
out low, putting measured ops "above the roof". So the roofs are measured as the best of
:data:`~.microbench.ROUNDS` rounds and cached in ``<user cache>/advisor/this_computer_roofs.json``
with the date and the machine's identity (CPU model, core count, architecture); a cache written on
another machine (a copied home folder, a new CPU) is measured anew, and ``studio advise
--remeasure-roof`` (or the device dialog's *Measure this computer*) measures again on demand.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import Progress
from studio.core.serial import from_json, to_json
from studio.tools.advisor.devices import Device

VERSION = 1
# The last measurement of this process: a process whose cache cannot be written (or whose cache
# folder changes, as every test's STUDIO_HOME does) measures once, as the roofs were measured before.
_SESSION: tuple[Device, list[dict], str] | None = None


def cache_file() -> Path:
    """Where the measured roofs of this computer are kept."""
    from studio.core.paths import cache_dir

    return cache_dir() / "advisor" / "this_computer_roofs.json"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else what the platform says)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "Processor") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine_identity() -> dict:
    """What a cached measurement must match to be reused: CPU model, cores, architecture, system."""
    return {"cpu": cpu_model(), "cores": os.cpu_count() or 0, "arch": platform.machine(),
            "system": platform.system()}


def identity_text(identity: dict) -> str:
    return f"{identity.get('cpu', '?')}, {identity.get('cores', '?')} cores"


def load_cached(path: Path | None = None) -> tuple[Device, dict] | None:
    """(device, the cache's JSON) when the cache holds a measurement of this machine, else None
    (absent, unreadable, of an older format, or measured on another machine)."""
    path = path or cache_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != VERSION or data.get("machine") != machine_identity():
            return None
        return from_json(Device, data["device"]), data
    except Exception:  # noqa: BLE001 - a missing or damaged cache is measured anew, never an error
        return None


def save_cached(device: Device, rounds: list[dict] | None = None, path: Path | None = None) -> Path:
    """Write ``device`` (and the figures of each round) with the date and this machine's identity."""
    path = path or cache_file()
    data = {"version": VERSION, "measured": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_identity(), "device": to_json(device), "rounds": rounds or []}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(path)
    return path


def this_computer_roofs(remeasure: bool = False, rounds: int | None = None, cancel=None
                        ) -> Generator[Progress, None, tuple[Device, str]]:
    """Job: (this computer's roofs, where they came from): the cache when it holds a measurement of
    this machine and ``remeasure`` is false, else measured now (best of ``rounds``) and cached."""
    global _SESSION
    cached = None if remeasure else load_cached()
    if cached is not None:
        device, data = cached
        return device, (f"cached {data.get('measured', '?')[:10]} for {identity_text(data['machine'])} "
                        f"({cache_file()}); studio advise --remeasure-roof measures again")
    if _SESSION is not None and not remeasure:
        device, rows, origin = _SESSION  # measured earlier in this process; the cache folder changed
    else:
        from studio.tools.advisor import microbench

        device, rows = yield from microbench.measure_job(rounds=rounds or microbench.ROUNDS, cancel=cancel)
        origin = f"measured now, best of {len(rows)} rounds"
        _SESSION = device, rows, origin
    try:
        where = f"cached in {save_cached(device, rows)}"
    except OSError as exc:
        where = f"not cached ({exc.strerror or exc}): measured again in the next session"
    return device, f"{origin}, {where}"
