"""The causes of slow collectives when the ranks stay on their hosts (``profile cluster --on ... --comm``).

Which rank was slow in an op, and the clock shift, come from every rank's op spans — kilobytes,
sent back with the parts. What the verdict and its evidence rest on stays on the host that holds
the rank: the kernels launched in a window, and the tasks before the op. The analysis runs here on
:class:`HostRank` stand-ins; each question a stand-in cannot answer yet is noted (it raises
:class:`.Pending` for that op), every host answers all of its questions in one run
(``profile cluster DIR --parts --comm --ask QUESTIONS``), and the analysis runs again. Task lists
come back newest first, ``FIRST_TASKS`` at a time; a walk back that reaches the end of a list
asks for four times as many, until it ends where it would on the whole list — so the result is
the one the ranks' own folders give.
"""

from __future__ import annotations

import json

from studio.tools.profiler.cluster.bottleneck_sources import Pending, rank_sources
from studio.tools.profiler.cluster.discover import ClusterInput

FIRST_TASKS = 1_000


class HostRank:
    """A rank read on its host: its op spans, and the answers its host has given so far."""

    def __init__(self, rank: int, kind: str, spans: list) -> None:
        self.rank, self.kind = rank, kind
        self._spans = [tuple(s) for s in spans]
        self.answers: dict[str, object] = {}
        self.questions: dict[str, dict] = {}   # asked, not yet answered
        self._limits: dict[tuple, int] = {}

    def ops(self) -> list[tuple]:
        return list(self._spans)

    def _answer(self, question: dict):
        key = json.dumps(question, sort_keys=True)
        if key not in self.answers:
            self.questions[key] = question
            raise Pending(f"rank {self.rank}: {key}")
        return self.answers[key]

    def _task_question(self, level: str, before: int) -> dict:
        limit = self._limits.setdefault((level, before), FIRST_TASKS)
        return {"rank": self.rank, "ask": level, "before": before, "limit": limit}

    def expect(self, levels, before: int) -> None:
        """Note the task lists the analysis may ask for, so that one run of the host answers them all."""
        for level in levels:
            self._note(self._task_question(level, before))

    def _note(self, question: dict) -> None:
        key = json.dumps(question, sort_keys=True)
        if key not in self.answers:
            self.questions[key] = question

    def _span_question(self, name: str) -> dict | None:
        return None if self.kind == "db" else {"rank": self.rank, "ask": "span", "name": name}

    def expect_span(self, name: str) -> None:
        """Note the exact span the analysis will ask for (a text export's: see :meth:`exact_span`)."""
        question = self._span_question(name)
        if question is not None:
            self._note(question)

    def exact_span(self, name: str) -> tuple[int, int] | None:
        """A text export's op as its host's trace has it (its spans came from communication.json)."""
        question = self._span_question(name)
        span = None if question is None else self._answer(question)
        return None if span is None else tuple(span)

    def launches(self, start: int, end: int) -> list[tuple]:
        return [tuple(r) for r in self._answer({"rank": self.rank, "ask": "launches", "start": start, "end": end})]

    def device_tasks(self, before: int) -> list[tuple]:
        return self._tasks("Device", before)

    def host_tasks(self, level: str, before: int) -> list[tuple]:
        return self._tasks(level, before)

    def _tasks(self, level: str, before: int) -> list[tuple]:
        rows, _complete = self._answer(self._task_question(level, before))
        return [tuple(r) for r in rows]

    def enough(self, level: str, before: int, looked: int) -> None:
        """Ask for more of a list the walk back reached the end of, unless it is the whole list."""
        question = self._task_question(level, before)
        rows, complete = self._answer(question)
        if not complete and looked >= len(rows):
            self._limits[(level, before)] = question["limit"] * 4
            self._answer(self._task_question(level, before))  # raises Pending: the longer list is asked for


def answer(found: ClusterInput, questions: list[dict]) -> list:
    """The answers to ``questions`` (:class:`HostRank`'s) about the ranks in ``found``, in order."""
    sources = rank_sources(found.ranks)
    out = []
    for q in questions:
        source = sources[q["rank"]]
        if q["ask"] == "launches":
            out.append([list(r) for r in source.launches(q["start"], q["end"])])
            continue
        if q["ask"] == "span":
            span = getattr(source, "exact_span", lambda _name: None)(q["name"])
            out.append(None if span is None else list(span))
            continue
        rows = source.device_tasks(q["before"]) if q["ask"] == "Device" else source.host_tasks(q["ask"], q["before"])
        rows.sort(key=lambda t: -t[0])  # newest first: the walk back from the op reads them in this order
        out.append([[list(r) for r in rows[:q["limit"]]], len(rows) <= q["limit"]])
    return out
