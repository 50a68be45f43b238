"""`profile compare` across ranks, on real torch_npu exports (shared/fixtures/ascend/real): names
that differ only by an object address are one row, and two folders of ranks are compared rank by
rank, matched by rank id."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from studio.core.jobs import run_job
from studio.tools.profiler.compare import compare
from studio.tools.profiler.loader import open_profile



@pytest.fixture
def level2(real_profiles) -> Path:
    return real_profiles / "cluster_pytorch" / "msinsight_text_2rank_level2" / "level2"


def addressed_names(rank: Path) -> dict[str, set[str]]:
    """Slice names holding an object address in a rank's trace_view.json, by the name with the
    addresses taken out (a regex of this test's own)."""
    events = json.loads((rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    names: dict[str, set[str]] = {}
    for e in events:
        name = str(e.get("name", ""))
        if e.get("ph") == "X" and re.search(r"0x[0-9a-f]{8,}", name):
            names.setdefault(re.sub(r"0x[0-9a-f]+", "ADDR", name), set()).add(name)
    return names


def test_a_call_at_another_address_in_another_rank_is_one_row(level2):
    base_names, new_names = addressed_names(level2 / "rank0_ascend_pt"), addressed_names(level2 / "rank1_ascend_pt")
    common = set(base_names) & set(new_names)
    assert len(common) > 50  # run_backward, tensor, _record_function_enter_new, ... at other addresses
    assert all(not (base_names[k] & new_names[k]) for k in common if "run_backward" in k)  # the addresses differ
    result = compare(run_job(open_profile(level2 / "rank0_ascend_pt", use_cache=False)),
                     run_job(open_profile(level2 / "rank1_ascend_pt", use_cache=False)))
    by_name = {r.name: r for r in result.ops}
    one_sided = [r.name for r in result.ops if r.only_in]
    print(f"{len(result.ops)} op rows, {len(one_sided)} on one side only")
    assert not [n for n in one_sided if "0x" in n]
    backward = [r for r in result.ops if "run_backward" in r.name]
    assert len(backward) == 1 and backward[0].status == "both"
    assert backward[0].name in base_names[re.sub(r"0x[0-9a-f]+", "ADDR", backward[0].name)]  # shown as written
    assert backward[0].new_name in new_names[re.sub(r"0x[0-9a-f]+", "ADDR", backward[0].name)]
    assert backward[0].base_count == backward[0].new_count == 1
    for key in common:  # every addressed op on both sides is a row on both sides
        shown = [n for n in base_names[key] if n in by_name]
        assert shown and all(by_name[n].status == "both" for n in shown), key
