"""The Qt-free job contract: progress, results, cancel and clean-up."""

from __future__ import annotations

import pytest

from studio.core.errors import Cancelled
from studio.core.jobs import CancelToken, Progress, run_job


def counting_job(n: int, cleaned: list[str], cancel: CancelToken | None = None):
    try:
        for i in range(n):
            if cancel is not None:
                cancel.raise_if_cancelled()
            yield Progress(i / n, f"step {i}")
        return n * 10
    finally:
        cleaned.append("cleaned")


def test_run_job_returns_result_and_reports_progress():
    cleaned: list[str] = []
    seen: list[Progress] = []
    assert run_job(counting_job(5, cleaned), on_progress=seen.append) == 50
    assert [p.message for p in seen] == [f"step {i}" for i in range(5)]
    assert seen[-1].fraction == pytest.approx(0.8)
    assert cleaned == ["cleaned"]


def test_cancel_between_steps_closes_the_generator():
    cleaned: list[str] = []
    token = CancelToken()

    def cancel_at_two(step: Progress) -> None:
        if step.message == "step 2":
            token.cancel()

    with pytest.raises(Cancelled):
        run_job(counting_job(100, cleaned), cancel=token, on_progress=cancel_at_two)
    assert cleaned == ["cleaned"], "the engine's finally block must run on cancel"


def test_engine_checking_its_token_raises_cancelled():
    cleaned: list[str] = []
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        run_job(counting_job(3, cleaned, token))
    assert cleaned == ["cleaned"]


def test_errors_propagate_and_clean_up():
    cleaned: list[str] = []

    def failing():
        try:
            yield Progress(0.1, "about to fail")
            raise ValueError("boom")
        finally:
            cleaned.append("cleaned")

    with pytest.raises(ValueError, match="boom"):
        run_job(failing())
    assert cleaned == ["cleaned"]


def test_cancel_token_wait_returns_early():
    token = CancelToken()
    assert token.wait(0.01) is False
    token.cancel()
    assert token.wait(5) is True
    assert token.cancelled


def test_on_cancel_callbacks_run_once_and_can_be_removed():
    from studio.core.jobs import CancelToken

    token, calls = CancelToken(), []
    remove = token.on_cancel(lambda: calls.append("kept"))
    token.on_cancel(lambda: 1 / 0)  # a failing callback does not stop the others
    gone = token.on_cancel(lambda: calls.append("removed"))
    gone()
    token.cancel()
    token.cancel()
    assert calls == ["kept"]
    remove()  # removing after the fact is harmless
    token.on_cancel(lambda: calls.append("late"))  # registered after cancel: runs at once
    assert calls == ["kept", "late"]
