"""The one loader of optional compiled kernels: numba if installed, the numpy path otherwise, and why."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from numba_helpers import run_without_numba
from studio.core.compiled import CompiledKernels

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
OFF = "STUDIO_TEST_KERNELS_OFF"


def test_without_numba_every_kernel_user_falls_back_and_says_to_install_the_extra():
    """The three users of compiled kernels (accuracy metrics, msprobe metrics, the trace scanner) load
    through the one loader: with numba missing each is None and names the package and the extra."""
    code = ("from studio.tools.accuracy import metrics, msprobe_metrics; "
            "from studio.tools.profiler import chrome_scan; "
            "users = (metrics.compiled, msprobe_metrics.compiled, chrome_scan.compiled); "
            "print(*[u() is None for u in users], sep=' '); "
            "print(*['numba-is-not-installed' if 'numba is not installed' in u.why_not and '[fast]' in u.why_not "
            "else repr(u.why_not) for u in users], sep=' ')")
    assert run_without_numba(code) == ["True"] * 3 + ["numba-is-not-installed"] * 3


def _kernel_module(folder, monkeypatch, body: str) -> str:
    """A throw-away kernel module ``studio_test_kernels_<n>`` in ``folder``, importable by name."""
    name = f"studio_test_kernels_{abs(hash(body)) % 10**8}"
    (folder / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_a_kernel_module_that_cannot_load_is_none_once_with_its_error(tmp_path, monkeypatch):
    """An error other than a missing numba (a kernel that does not compile here) is reported as it
    was raised, and the import is tried once per process, not on every call."""
    counter = tmp_path / "tries"
    name = _kernel_module(tmp_path, monkeypatch, f"import pathlib\np = pathlib.Path({str(counter)!r})\n"
                          "p.write_text(p.read_text() + 'x' if p.exists() else 'x')\n"
                          "raise RuntimeError('no LLVM target for this CPU')\n")
    kernels = CompiledKernels(name, OFF, "test sums")
    assert kernels() is None and kernels() is None
    assert counter.read_text() == "x"
    assert kernels.why_not == ("test sums use numpy: the compiled kernels cannot load here "
                               "(RuntimeError: no LLVM target for this CPU)")


def test_the_switch_off_variable_wins_and_is_read_on_every_call(tmp_path, monkeypatch):
    name = _kernel_module(tmp_path, monkeypatch, "import numpy as np\ndef total(a):\n    return float(np.add.reduce(a))\n")
    kernels = CompiledKernels(name, OFF, "test sums")
    monkeypatch.setenv(OFF, "1")
    assert kernels() is None
    assert kernels.why_not == f"test sums use numpy: {OFF}=1 is set (unset it for the kernels)"
    monkeypatch.setenv(OFF, "0")  # "0" means not set, as for every switch of this kind
    module = kernels()
    assert module is not None and kernels.why_not is None
    values = np.random.default_rng(3).normal(size=1000)
    assert module.total(values) == pytest.approx(float(np.sum(values, dtype=np.float64)), rel=1e-12)


def test_forget_looks_the_module_up_again(tmp_path, monkeypatch):
    """After numba is installed in a running process, forget() lets the next call load the kernels."""
    name = _kernel_module(tmp_path, monkeypatch, "VALUE = 1\n")
    kernels = CompiledKernels(name, OFF, "test sums")
    monkeypatch.setitem(sys.modules, name, None)  # as if its import failed
    assert kernels() is None
    monkeypatch.delitem(sys.modules, name)
    assert kernels() is None  # remembered
    kernels.forget()
    assert kernels().VALUE == 1


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed (the fast extra)")
def test_with_numba_the_accuracy_kernels_load_and_match_float64():
    from studio.tools.accuracy import metrics

    fused = metrics.compiled()
    assert fused is not None and metrics.compiled.why_not is None
    rng = np.random.default_rng(0)
    golden = rng.normal(size=4096).astype(np.float32)
    target = golden + rng.normal(scale=1e-3, size=4096).astype(np.float32)
    m = metrics.compare_arrays(golden, target)
    g, t = golden.astype(np.float64), target.astype(np.float64)
    assert m.max_abs_err == pytest.approx(np.max(np.abs(t - g)), rel=1e-9)
    assert m.cosine == pytest.approx(g @ t / np.linalg.norm(g) / np.linalg.norm(t), rel=1e-9)
