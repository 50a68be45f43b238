"""Optional compiled kernels: a module of numba functions, loaded on first use when numba is there.

numba is the ``fast`` extra, not a requirement: every kernel module has a numpy twin that computes
the same figures, slower. :class:`CompiledKernels` imports the kernel module the first time it is
asked for (numba's import and its cached machine code cost ~0.5-1 s, so never with the module that
uses it) and remembers the outcome for the process. It is ``None`` — and :attr:`why_not` says why, in
words a user can act on — when numba is not installed, when it cannot compile here, or when the
switch-off environment variable is set (a comparison against the numpy path, or a machine where
numba misbehaves).
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

INSTALL_FIX = "install the fast extra (pip install -c constraints.txt -e '.[fast]')"


def keep_numba_cache_with_studio(module_file: str) -> None:
    """Call before ``import numba`` in a kernel module: where the module's folder is read-only (a
    system site-packages, a bundle), numba's own fallback is ~/.cache/numba, not ours to fill; its
    machine code then goes to Studio's cache folder, deletable with it."""
    from studio.core.paths import cache_dir

    here = os.path.dirname(os.path.abspath(module_file))
    if "NUMBA_CACHE_DIR" not in os.environ and not os.access(here, os.W_OK):
        os.environ["NUMBA_CACHE_DIR"] = str(cache_dir() / "numba")


def _switched_off(env: str) -> bool:
    return os.environ.get(env, "") not in ("", "0")


class CompiledKernels:
    """The kernel module ``module`` (e.g. ``studio.tools.accuracy.fused``) or None; call to get it.

    ``off_env`` names the environment variable that forces the numpy path (read on every call, so a
    test or a user can flip it in a running process); ``what`` says what runs without the kernels
    ("accuracy metrics"), for the log line and :attr:`why_not`.
    """

    def __init__(self, module: str, off_env: str, what: str):
        self.module = module
        self.off_env = off_env
        self.what = what
        self._loaded: list[ModuleType | None] = []  # [module or None] once looked up
        self._failure = ""

    def __call__(self) -> ModuleType | None:
        if _switched_off(self.off_env):
            return None
        if not self._loaded:
            try:
                kernels = importlib.import_module(self.module)
            except Exception as exc:  # noqa: BLE001 - no numba, or one that cannot compile here: numpy does it
                self._failure = _reason(exc)
                logging.getLogger(self.module).info("%s without compiled kernels: %s", self.what, self._failure)
                kernels = None
            self._loaded.append(kernels)
        return self._loaded[0]

    @property
    def why_not(self) -> str | None:
        """Why the kernels are not used (None when they are): switched off, numba missing, or the
        error that loading them gave."""
        if _switched_off(self.off_env):
            return f"{self.what} use numpy: {self.off_env}={os.environ[self.off_env]} is set (unset it for the kernels)"
        if self() is not None:
            return None
        return f"{self.what} use numpy: {self._failure}"

    def forget(self) -> None:
        """Look the module up again on the next call (after numba was installed or removed)."""
        self._loaded.clear()
        self._failure = ""


def _reason(exc: Exception) -> str:
    if isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in ("numba", "llvmlite"):
        return f"{exc.name} is not installed; {INSTALL_FIX}"
    return f"the compiled kernels cannot load here ({type(exc).__name__}: {exc})"
