"""ONNX Runtime profile JSON (``SessionOptions.enable_profiling``).

ORT writes a bare Chrome-trace array of ``X`` events: ``cat`` ``Session`` (model loading, session
initialisation, ``model_run``) and ``Node`` (``<node>_kernel_time`` plus ``_fence_before`` /
``_fence_after``), ``ts``/``dur`` in integer microseconds relative to the session start, and
``args.op_name`` / ``args.provider`` on node events. Reading it is reading a Chrome trace, then
naming things the way a user thinks of them: kernel slices by their node name, tracks by ORT.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from pathlib import Path

from studio.core.formats import PROFILER, FileFormat, json_text
from studio.core.jobs import CancelToken, Progress
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.chrome_reader import read_chrome_trace
from studio.tools.profiler.model import Trace

KERNEL_SUFFIX = "_kernel_time"


def read_ort_profile(path: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, Trace]:
    """Read an ORT profile into a trace whose kernel slices carry their node names."""
    builder = TraceBuilder()
    yield from read_chrome_trace(path, cancel, builder, build=False)
    name_ort_processes(builder)
    trace = builder.build(source=str(path))
    strip_kernel_suffix(trace)
    trace.facts.setdefault("producer", "ONNX Runtime profiler")
    return trace


def name_ort_processes(builder: TraceBuilder) -> None:
    """ORT writes no process/thread names: call them what they are."""
    for kind, pid, tid in list(builder._track_keys):  # noqa: SLF001 - the builder's own keys
        if kind == "thread":
            builder.process_names.setdefault(pid, f"ONNX Runtime (pid {pid})")
            builder.thread_names.setdefault((pid, tid), "session" if tid == pid else f"Thread {tid}")


def strip_kernel_suffix(trace: Trace) -> None:
    """``conv1_kernel_time`` -> ``conv1`` (the node name the graph shows)."""
    trace.names = [n[:-len(KERNEL_SUFFIX)] if n.endswith(KERNEL_SUFFIX) else n for n in trace.names]


_ORT_SUFFIXES = re.compile(r"(_nchwc|_token_\d+)+$")


def graph_node_name(name: str) -> str:
    """The model's node name behind an ORT kernel name: ORT's layout pass renames fused nodes
    (``encoder1/conv1/relu`` runs as ``encoder1/conv1/relu_nchwc``)."""
    return _ORT_SUFFIXES.sub("", name)


def match_ort_profile(path: Path, head: bytes) -> bool:
    """An ONNX Runtime profile: a JSON array of events of category Session or Node."""
    text = json_text(head)
    return bool(text and text.startswith("[") and '"cat"' in text and re.search(r'"cat"\s*:\s*"(Session|Node)"', text))


ORT_PROFILE = FileFormat("ort_profile", "ONNX Runtime profile", PROFILER, match_ort_profile, read_ort_profile)
