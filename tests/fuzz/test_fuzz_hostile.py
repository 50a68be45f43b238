"""Hostile inputs for every reader (see ``hostile.py``): a FIFO, /dev/zero, an 8 GiB sparse file,
lone surrogates, values of the wrong type, deep nesting and huge lists must each end in a result or
a clear message — never a traceback, a signal or a hang.

Every reader of ``test_fuzz.READERS`` gets every hostile kind that fits its format, each through its
CLI as a user runs it (``python -m studio``, two at a time; all of them on CI, with STUDIO_FUZZ=1 or
``-m fuzz``, a few per reader otherwise). A hang is a case still running after
:data:`test_fuzz.TIMEOUT_S`; the test also fails when a case uses more than :data:`SLOW_CPU_S` of
CPU (CPU, not wall time: a loaded machine must not fail it), so a reader that went quadratic again
is caught long before it hangs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostile import hostile, place
from test_fuzz import (  # noqa: F401 (work is the shared seed fixture)
    MARKER,
    READERS,
    REPO,
    TIMEOUT_S,
    _argv,
    _full,
    _materialize,
    _seeds,
    crash,
    tail,
    target_file,
    work,
)

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]

SLOW_CPU_S = 20

# the hostile kind of each reader's seed (what its values are written in)
KIND = {"onnx": "binary", "om": "binary", "trace": "json", "msprof_csv": "csv", "msprof_db": "binary",
        "npu_dump": "binary", "npy_folder": "binary", "dump_manifest": "json", "aipp_cfg": "lines",
        "acl_json": "json", "cluster_csv": "csv", "cluster_json": "json", "memory_csv": "csv",
        "hosts_toml": "toml", "deployments_toml": "toml", "studio_toml": "toml", "ssh_config": "lines",
        "profile_summary": "json", "accuracy_csv": "csv", "pipeline": "json", "msprobe_dump": "json"}


def _run_measured(args: list, home: Path) -> tuple[int | None, str, float]:
    """(exit code or None on a hang, output tail, CPU seconds the case used)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), STUDIO_HOME=str(home))
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "studio", *map(str, args)], stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        deadline, status, usage = time.monotonic() + TIMEOUT_S, None, None
        while status is None:
            pid, code, usage = os.wait4(proc.pid, os.WNOHANG)  # wait4: this child's own CPU time
            if pid:
                status = os.waitstatus_to_exitcode(code)
                proc.returncode = status
            elif time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return None, f"hang: no answer within {TIMEOUT_S} s", TIMEOUT_S
            else:
                time.sleep(0.05)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return status, tail(text, 6000), usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("reader", [r[0] for r in READERS])
def test_hostile(reader, work, tmp_path, request):  # noqa: F811 (work is the shared seed fixture)
    argv = _argv(reader, work)
    seeds = _seeds(reader, work)
    full = _full(request.config)  # a developer's run: the first seed's FIFO, sparse file and one value mutation
    jobs = []
    for seed in seeds if full else seeds[:1]:
        data = seed.read_bytes()
        variants = hostile(data, KIND[reader], zlib.crc32(f"{reader}:{seed.name}".encode()))
        if not full:
            variants = [v for v in variants if v[0] in ("fifo", "sparse")] + variants[3:4]
        for label, payload in variants:
            where = tmp_path / f"v{len(jobs)}"
            variant = _materialize(reader, seed, data, where, work)
            place(target_file(reader, seed, variant), payload)
            jobs.append((f"{seed.name} {label}", argv(variant, where), where / "home"))
    Path(MARKER).unlink(missing_ok=True)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda job: (job[0], job[1], *_run_measured(job[1], job[2])), jobs))
    bad = []
    for label, args, code, text, took in results:
        problem = crash(code, text) or (f"used {took:.0f} s of CPU" if took > SLOW_CPU_S else None)
        if problem is None:
            continue
        bad.append(f"[{label}] {problem}\n    studio {' '.join(map(str, args))}")
    print(f"\n{reader}: {len(results)} hostile variants, {len(bad)} failures, slowest "
          f"{max(r[4] for r in results):.1f} s of CPU")
    for line in bad:
        print("  " + line)
    assert not bad, f"{len(bad)} of {len(results)} hostile {reader} variants failed:\n" + "\n".join(bad)
