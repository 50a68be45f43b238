"""Jobs run in a worker process keep the job contract: progress, result, same errors, cancel kills."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, Progress, run_job
from studio.tools.profiler.loader import open_profile, open_profile_offloaded
from studio.core.workers import WorkerDied, active_pids, run_in_worker


def big_trace(path: Path, n: int = 60_000) -> Path:
    from profiler_tracegen import generate

    return generate(path, n)


def test_offloaded_open_equals_in_process_open_and_maps_the_cache(tmp_path):
    import numpy as np

    path = big_trace(tmp_path / "t.json")
    assert path.stat().st_size > 4 << 20  # above OFFLOAD_BYTES: really goes to a worker
    steps: list[Progress] = []
    trace = run_job(open_profile_offloaded(path), on_progress=steps.append)
    reference = run_job(open_profile(path, use_cache=False))
    assert isinstance(trace.start, np.memmap), "the GUI side only maps what the worker wrote"
    from studio.tools.profiler import cache

    assert str(trace.start.filename).startswith(str(cache.cache_root())), "written to this STUDIO_HOME's cache"
    assert any(s.fraction and 0 < s.fraction < 1 for s in steps), "the worker's progress comes through"
    for column in ("start", "dur", "track", "depth", "name", "args_len"):
        assert np.array_equal(getattr(trace, column), getattr(reference, column)), column
    assert trace.names == reference.names and trace.facts == reference.facts
    assert trace.slice_args(5) == reference.slice_args(5)
    assert not active_pids()


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, b"[" + b'{"ph":"X",' * 2000])
def test_worker_errors_are_the_in_process_errors(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(UserError) as here:
        run_job(open_profile(path, use_cache=False))
    with pytest.raises(UserError) as there:
        run_job(run_in_worker("studio.tools.profiler.loader:parse_to_cache", str(path)))
    assert str(there.value) == str(here.value)
    assert there.value.where == here.value.where and there.value.fix == here.value.fix


def test_cancel_kills_the_worker_and_its_range_decoders(tmp_path):
    import psutil

    path = big_trace(tmp_path / "t.json", 400_000)  # ~85 MB: decoded by one process per core
    token = CancelToken()
    # the multi-process decoder (its range decoders are what a cancel must kill; the compiled scanner
    # runs threads inside the worker instead)
    job = run_in_worker("studio.tools.profiler.loader:parse_to_cache", str(path), cancel=token,
                        read_options={"scan": False})
    while "cores" not in next(job).message:  # until the range decoders run
        pass
    (pid,) = active_pids()
    family = [pid] + [p.pid for p in psutil.Process(pid).children(recursive=True)]
    token.cancel()
    with pytest.raises(Cancelled):
        next(job)
    job.close()
    gone, alive = psutil.wait_procs([psutil.Process(p) for p in family if psutil.pid_exists(p)], timeout=5)
    assert not alive, f"still running after cancel: {alive}"
    assert not active_pids()
    # The killed worker's scratch folder is swept by the next parallel read.
    from studio.tools.profiler import cache, chrome_parallel

    assert list(cache.cache_root().glob(".tmp-ranges-*")), "the killed worker left its scratch folder"
    chrome_parallel._sweep(cache.cache_root())
    assert not list(cache.cache_root().glob(".tmp-ranges-*"))


def test_a_worker_killed_from_outside_is_reported(tmp_path):
    """As when the system runs out of memory and kills the worker: a clear error, no hang."""
    import signal

    job = run_in_worker("studio.tools.profiler.loader:parse_to_cache", str(big_trace(tmp_path / "t.json")))
    next(job)
    (pid,) = active_pids()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(WorkerDied, match="exit code -9"):
        run_job(job)
    assert not active_pids()


def test_without_worker_processes_the_trace_opens_in_process(tmp_path, monkeypatch):
    """A frozen or sandboxed app that cannot start processes still opens big traces."""
    import multiprocessing

    import studio.core.workers as workers

    class NoProcesses:
        Pipe = staticmethod(multiprocessing.Pipe)

        class Process:
            def __init__(self, *args, **kwargs):
                pass

            def start(self):
                raise OSError("process creation is not allowed here")

    monkeypatch.setattr(workers, "context", lambda: NoProcesses)
    path = big_trace(tmp_path / "t.json")
    trace = run_job(open_profile_offloaded(path))
    assert trace.size == run_job(open_profile(path, use_cache=False)).size


def test_a_frozen_build_refuses_workers_and_opens_big_files_in_process(tmp_path, monkeypatch):
    """PyInstaller bundles: no fork server is tried (its semantics there are untested); the trace
    still opens, in-process, with the same content."""
    import sys

    import studio.core.workers as workers
    from studio.core.workers import WorkerUnavailable, run_in_worker

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(workers, "_context", None)
    with pytest.raises(WorkerUnavailable, match="frozen"):
        run_job(run_in_worker("studio.tools.profiler.loader:parse_to_cache", str(tmp_path / "x.json")))
    assert workers._context is None, "no multiprocessing context may be created in a frozen build"
    path = big_trace(tmp_path / "t.json")
    before = active_pids()
    trace = run_job(open_profile_offloaded(path))
    assert active_pids() == before
    expect = run_job(open_profile(path, use_cache=False))
    assert trace.size == expect.size and (trace.start == expect.start).all()


def test_workers_run_at_a_lower_priority_than_the_window(tmp_path):
    """The fork server (and so every worker it forks) runs at NICENESS; this process does not."""
    from studio.core import workers

    mine = os.getpriority(os.PRIO_PROCESS, 0)
    run_job(open_profile_offloaded(big_trace(tmp_path / "t.json")))  # starts the fork server if needed
    servers = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        if ppid == os.getpid() and b"forkserver" in cmdline:
            servers.append(int(entry.name))
    assert servers, "the fork server is a child of this process"
    assert all(os.getpriority(os.PRIO_PROCESS, pid) == max(mine, workers.NICENESS) for pid in servers)
    assert os.getpriority(os.PRIO_PROCESS, 0) == mine, "the window's own priority is untouched"


def test_a_script_without_a_main_guard_runs_its_top_level_once(tmp_path):
    """A user's script that imports Studio and starts worker jobs, with no ``if __name__ ==
    "__main__":`` guard, is not run again inside each worker."""
    import subprocess

    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2}]}')
    log = tmp_path / "top_level.log"
    script = tmp_path / "user_script.py"
    script.write_text(
        "from studio.core.jobs import run_job\n"
        "from studio.core.workers import run_in_worker\n"
        f"open({str(log)!r}, 'a').write('ran\\n')\n"
        "for _ in range(2):\n"
        f"    run_job(run_in_worker('studio.tools.profiler.loader:parse_to_cache', {str(trace)!r}))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(HERE.parents[1])})
    assert done.returncode == 0, done.stderr
    assert log.read_text().count("ran") == 1
