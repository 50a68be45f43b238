"""Jobs whose work holds the interpreter lock run in a worker process, behind the same job contract.

A thread that decodes 16 MB of JSON in C (msgspec), or parses a big protobuf, holds Python's lock
for hundreds of milliseconds, and the GUI thread of the same interpreter waits that long. So such
work runs in another process::

    folder = yield from run_in_worker("studio.tools.profiler.loader:parse_to_cache", str(path),
                                      cancel=cancel)

The target is a job (a generator function taking ``cancel=``) named by ``module:function``; it runs
in a child process, its :class:`~studio.core.jobs.Progress` comes back over a pipe and is yielded here,
its return value (keep it small: a path, a few numbers; the long lists of a dict come in pieces, see
:mod:`studio.core.worker_answer`) is returned, and its exceptions are raised
here with the same type and message. Cancel kills the child and every process it started (it leads
its own process group). Children are forked from a fork server started on first use (so the
window's start-up pays nothing) that has already imported ``PRELOAD`` (so a job starts in tens of
milliseconds, not the half second a fresh interpreter takes to import numpy).
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import multiprocessing.spawn as mp_spawn
import threading
import os
import signal
import sys
import time
import traceback
from collections.abc import Generator, Iterator
from typing import Any

from studio.core.errors import Cancelled, StudioError
from studio.core.jobs import CancelToken, Progress
from studio.core.worker_answer import Assembler, pieces

# studio.core.worker_priority first: the fork server lowers its priority before the heavy imports.
PRELOAD = ["studio.core.worker_priority", "numpy", "msgspec", "studio.tools.profiler.chrome_reader",
           "studio.tools.profiler.loader"]
PROGRESS_INTERVAL_S = 0.05
NICENESS = 5  # the window comes first when the cores are busy (CFS weight 1024 against 335)
_context: Any = None
_active: set[int] = set()
_start_lock = threading.Lock()


class WorkerDied(StudioError):
    """The worker process ended without an answer (killed, out of memory, crashed in C code)."""


class WorkerUnavailable(StudioError):
    """No worker process can be started here; callers may do the work in-process instead."""


class RemoteTraceback(Exception):
    """The traceback of an unexpected error in a worker, kept as the cause of the re-raised error."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def context() -> Any:
    """The multiprocessing context workers come from: a fork server where there is one, else spawn.

    Raises :class:`WorkerUnavailable` in a frozen (PyInstaller) build: there ``sys.executable`` is
    the Studio binary, not an interpreter, so both the fork server and spawn would start it with
    ``-c``/``--multiprocessing-fork`` arguments that only work after ``freeze_support()`` and with
    the bundle's hooks, a path nobody has tested. Callers then do the work in-process (in their job
    thread, as before workers existed) and log that they did.
    """
    global _context
    if getattr(sys, "frozen", False):
        raise WorkerUnavailable("Worker processes are not used in a packaged (frozen) build; "
                                "the work runs in this process.")
    if _context is None:
        if "forkserver" in multiprocessing.get_all_start_methods():
            _context = multiprocessing.get_context("forkserver")
            _context.set_forkserver_preload(PRELOAD)
        else:  # Windows, frozen apps: a fresh interpreter per job
            _context = multiprocessing.get_context("spawn")
    return _context


def run_in_worker(target: str, *args: Any, cancel: CancelToken | None = None, **kwargs: Any
                  ) -> Generator[Progress, None, Any]:
    """Run the job ``target`` (``"module:function"``) in a worker process; see the module docstring.

    Raises :class:`WorkerUnavailable` before anything starts when no worker can be had here."""
    ctx = context()
    receiver, sender = ctx.Pipe(duplex=False)
    # The fork server keeps the environment and folder it started with: send the caller's.
    context_now = {"cwd": os.getcwd(), "env": {k: v for k, v in os.environ.items() if k.startswith("STUDIO_")}}
    process = ctx.Process(target=_child_main, args=(sender, target, args, kwargs, context_now), daemon=True,
                          name=f"studio-worker {target.rsplit(':', 1)[-1]}")
    try:
        with _main_module_not_sent():
            process.start()
    except (OSError, RuntimeError, ValueError) as exc:  # no fork server here (frozen app, sandbox...)
        receiver.close()
        sender.close()
        raise WorkerUnavailable(f"Cannot start a worker process: {exc}") from exc
    sender.close()  # the child holds the only writer: EOF here means it is gone
    _active.add(process.pid)
    answer = Assembler()
    try:
        while True:
            if cancel is not None:
                cancel.raise_if_cancelled()
            if not receiver.poll(0.05):
                continue
            try:
                message = receiver.recv()
            except EOFError:
                process.join(1.0)
                raise WorkerDied(f"The worker process ended unexpectedly (exit code {process.exitcode}); "
                                 "if the input is very large the system may have run out of memory.") from None
            except Exception as exc:  # noqa: BLE001 - an answer that does not unpickle here
                raise WorkerDied(f"The worker's answer could not be read: {exc}") from exc
            kind = message[0]
            if kind == "progress":
                yield Progress(message[1], message[2])
            elif kind == "part":
                answer.add(message[1], message[2])
            elif kind == "done":
                return answer.finish(message[1])
            elif kind == "error":
                error, text = message[1], message[2]
                if not isinstance(error, StudioError) and text:
                    raise error from RemoteTraceback(text)
                raise error
    finally:
        receiver.close()
        _kill(process)
        _active.discard(process.pid)


@contextlib.contextmanager
def _main_module_not_sent() -> Iterator[None]:
    """Start a worker without telling it the parent's ``__main__``.

    multiprocessing normally makes each child import the parent's main script as ``__mp_main__``,
    so that functions defined there can be unpickled. A worker's target is a ``module:function``
    string and never lives in ``__main__``; without this, a user's script that imports Studio and
    starts a job would run its whole top level again in every worker.
    """
    with _start_lock:
        original = mp_spawn.get_preparation_data

        def without_main(name: str) -> dict:
            data = original(name)
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
            return data

        mp_spawn.get_preparation_data = without_main
        try:
            yield
        finally:
            mp_spawn.get_preparation_data = original


def active_pids() -> set[int]:
    """Process ids of the workers running now (for tests and shutdown)."""
    return set(_active)


def _kill(process: Any) -> None:
    """Kill the worker and its process group (the range decoders it forked) if still running."""
    if process.exitcode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (AttributeError, OSError):  # not a group leader yet, or no process groups (Windows)
            process.kill()
    process.join(2.0)


def _child_main(conn: Any, target: str, args: tuple, kwargs: dict, caller: dict | None = None) -> None:
    """Runs in the worker: lead a process group, drive the job, send progress and the outcome."""
    if caller:
        for key in [k for k in os.environ if k.startswith("STUDIO_") and k not in caller["env"]]:
            del os.environ[key]
        os.environ.update(caller["env"])
        try:
            os.chdir(caller["cwd"])
        except OSError:
            pass
    if hasattr(os, "setpgrp"):
        try:
            os.setpgrp()
            # The window comes first when the cores are all busy decoding (the niceness is inherited
            # by the processes this worker forks; a fork server's children have it already).
            os.nice(max(0, NICENESS - os.nice(0)))
        except OSError:
            pass
    try:
        module_name, function_name = target.split(":")
        job = getattr(importlib.import_module(module_name), function_name)(*args, cancel=CancelToken(), **kwargs)
        last = 0.0
        while True:
            try:
                step = next(job)
            except StopIteration as done:
                for message in pieces(done.value):  # long lists in pieces: see worker_answer
                    conn.send(message)
                break
            now = time.monotonic()
            if isinstance(step, Progress) and now - last >= PROGRESS_INTERVAL_S:
                conn.send(("progress", step.fraction, step.message))
                last = now
    except (BrokenPipeError, ConnectionResetError):  # the caller is gone: nothing to report to
        os._exit(1)
    except BaseException as exc:  # noqa: BLE001 - every outcome goes back to the caller
        text = "" if isinstance(exc, (StudioError, Cancelled)) else traceback.format_exc()
        try:
            conn.send(("error", exc, text))
        except Exception:  # noqa: BLE001 - the error itself would not pickle
            conn.send(("error", StudioError(f"{type(exc).__name__}: {exc}"), text))
    finally:
        conn.close()
        sys.stdout.flush()
