"""Cancelling a job from its own progress: the way a user presses Cancel while it runs."""

from __future__ import annotations

from collections.abc import Callable

from studio.core.jobs import CancelToken, Progress


def cancel_at_step(token: CancelToken, step: int) -> tuple[Callable[[Progress], None], list[Progress]]:
    """A progress callback that cancels ``token`` when the job reports its ``step``-th step (from 1),
    and the list of the steps it was told of."""
    steps: list[Progress] = []

    def on_progress(progress: Progress) -> None:
        steps.append(progress)
        if len(steps) == step:
            token.cancel()

    return on_progress, steps
