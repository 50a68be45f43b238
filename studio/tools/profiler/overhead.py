"""What the profiler adds to a run, measured in alternating rounds rather than from one pair of phases.

One profiled phase against one timing phase, minutes apart on a shared machine, said "the op
times come from runs 5.7x slower" for one run and -78 % for another: the machine's load changed
between the phases, not the profiler. So ``studio profile run`` splits its measured iterations
into :func:`blocks`, and around each block a second session of the model, without the profiler,
runs as many times (the order alternating: on-off, off-on, ...). Each round gives the ratio of its
two medians, which a slow stretch of the machine moves little; the overhead is their geometric
mean with a Student t-interval (:func:`studio.core.ab.compare_rounds`), widened by
:data:`studio.core.ab.SESSION_FLOOR` since the two sides are two sessions. An interval that holds
0 % is said as "within the noise"; too few iterations for three rounds, and no overhead is stated.
"""

from __future__ import annotations

from studio.core import ab

MAX_ROUNDS = 5
MIN_ROUNDS = 3
MIN_BLOCK = 2  # runs per side per round: a median of one run is that run
WARNING = 0.25  # from this overhead on (its interval's lower bound), op times are said to be inflated


def blocks(iterations: int) -> list[range]:
    """The measured iterations split into rounds (as even as can be), or [] when they make fewer
    than :data:`MIN_ROUNDS` rounds of :data:`MIN_BLOCK`."""
    rounds = min(MAX_ROUNDS, iterations // MIN_BLOCK)
    if rounds < MIN_ROUNDS:
        return []
    edges = [round(i * iterations / rounds) for i in range(rounds + 1)]
    return [range(a, b) for a, b in zip(edges, edges[1:])]


def measure(off_rounds: list[list[float]], on_rounds: list[list[float]]) -> ab.Change:
    """The overhead's change (on / off) from the rounds' times (ms)."""
    return ab.compare_rounds(off_rounds, on_rounds, floor=ab.SESSION_FLOOR,
                             method="alternating rounds, profiled session / a session without the profiler")


def describe(change: ab.Change | None, iterations: int) -> str:
    """The overhead line of the report: the figure with its interval, "within the noise" when the
    interval holds 0 %, a warning when even its lower bound is :data:`WARNING` or more."""
    if change is None:
        return (f"profiler overhead: not measured ({iterations} iterations; "
                f"{MIN_ROUNDS * MIN_BLOCK} or more alternate profiler-on and profiler-off runs in rounds)")
    lo, hi = change.low - 1.0, change.high - 1.0
    text = (f"profiler overhead: {change.ratio - 1.0:+.0%} per run (95 % CI {lo:+.0%} to {hi:+.0%}; "
            f"{change.rounds} alternating rounds, ratio of medians per round, profiler on / off)")
    if not change.significant:
        return text + ": within the noise"
    if lo >= WARNING:
        text += (f"; warning: the op times in this profile come from runs {change.ratio:.1f}x "
                 f"({change.low:.1f}x to {change.high:.1f}x) slower than the bare model: read their shares, "
                 "not their absolute times")
    return text
