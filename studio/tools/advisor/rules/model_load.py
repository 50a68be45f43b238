"""Model load and initialisation dominating the run.

Counts host slices that load or initialise (``aclmdlLoadFromFile``/``Mem``, ``aclInit``,
ONNX Runtime's ``model_loading_*`` and ``session_initialization``, Studio's ``create session``)
against the whole profiled span; fires at 50 % or more. Matters for short-lived processes (a
CLI called per image) — load once and serve many inferences instead.
"""

from __future__ import annotations

import numpy as np

from studio.tools.advisor.model import Finding

LOAD_NAMES = ("aclmdlLoadFromFile", "aclmdlLoadFromMem", "aclmdlLoadFromFileWithMem", "aclmdlLoadFromMemWithMem",
              "aclInit", "aclrtSetDevice", "model_loading_uri", "model_loading_array", "session_initialization",
              "create session")
MIN_SHARE = 0.5


def check(ctx) -> list[Finding]:
    trace = ctx.trace
    if trace is None or not trace.size or not trace.span_ns:
        return []
    ids = [i for i, name in enumerate(trace.names) if name in LOAD_NAMES or name.startswith("aclmdlLoad")]
    if not ids:
        return []
    mask = np.isin(np.asarray(trace.name), np.asarray(ids, dtype=np.int32))
    # nested load slices (model_loading inside create session) count once: take top-level ones
    idx = np.flatnonzero(mask)
    idx = idx[np.argsort(np.asarray(trace.start)[idx])]
    total, end = 0, -1
    for i in idx:
        s, e = int(trace.start[i]), int(trace.end[i])
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    share = total / trace.span_ns
    if share < MIN_SHARE:
        return []
    names = sorted({trace.slice_name(i) for i in idx})
    return [Finding(
        "model-load", f"Loading and initialisation take {share:.0%} of the profiled time", "medium", "host",
        [f"{total / 1e6:.3f} ms of {trace.span_ns / 1e6:.3f} ms in {', '.join(names)} ({ctx.profile_label})",
         "severity medium: a one-off cost, not part of each step"],
        "Load the model once and keep the process (or session) alive for many inferences; for ATC models, "
        "check the OM size and weight compression; profile a longer run to see the steady state.",
        None, total / 1e6, [], time_ranges=[(int(trace.start[idx[0]]), end)])]
