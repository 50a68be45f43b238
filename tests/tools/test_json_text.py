"""The fast indented JSON writer (serial.dumps): byte for byte what ``json.dumps(to_json(x), indent=N)``
writes — on awkward values and on the real cluster reports — while the standard library's pure-Python
indented encoder is switched off (the old way of writing must not be what produces the text)."""

from __future__ import annotations

import enum
import json
import math
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from studio.core.serial import dumps, to_json
from tests.tools import synthetic_cluster

REAL = ("msinsight_db_2rank_level2", "msinsight_text_2rank_level2", "msinsight_st_4rank_mindspeed_qwen3")


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


@dataclass
class Row:
    __json_rename__ = {"value": "value_us"}
    __json_round__ = {"share": 3}
    __json_omit_empty__ = ("note",)
    __json_extra__ = ("double",)

    value: float
    share: float = 0.0
    note: str | None = None
    where: Path = Path("/a/b")
    colour: Colour = Colour.RED
    tags: set[str] = field(default_factory=set)

    @property
    def double(self) -> float:
        return self.value * 2


def _rows(n: int) -> list[dict]:
    """Rows of one shape whose columns mix types: None or float, nested lists and dicts, empty ones,
    numpy values, non-finite floats, text with escapes — and keys with '%' and non-ASCII."""
    rng = np.random.default_rng(7)
    rows = []
    for i in range(n):
        rows.append({"start_ns": 1_736_412_474_730_190_383 + i * 977, "x %s µs": float(rng.normal()) * 10 ** (i % 30 - 15),
                     "maybe": None if i % 3 else float(i) / 7, "both": i if i % 2 else i / 3,
                     "flag": bool(i % 2), "text": f"gap \"{i}\"\n\\ ✓ {'µ' * (i % 3)}, \"", "empty": {} if i % 4 else
                     {"kernel": [i, {"deep": []}], "n": i}, "list": [] if i % 5 else [i, None, "a"],
                     "np": np.float32(i / 8) if i % 2 else np.int64(i), "nf": math.inf if i == 5 else -math.nan
                     if i == 6 else 1.5, "enum": Colour.RED, "path": Path(f"/r/{i}")})
    return rows


def _awkward() -> list:
    rows = _rows(200)
    reordered = [dict(reversed(list(r.items()))) if i == 50 else r for i, r in enumerate(_rows(100))]
    return [rows, reordered, [dict(r, extra=1) if i == 40 else r for i, r in enumerate(_rows(80))],
            [Row(1.0 / (i + 1), share=i / 7, note="n" if i % 2 else None, tags={"t"}) for i in range(60)],
            {1: "int key", True: "bool key", 2.5: ["float key"], Level.HIGH: Level.HIGH, Name("n"): Name("v")},
            [(1, 2)] * 40, [[]] * 40, [{}] * 40, [[1.0, math.nan]] * 40, np.arange(70).reshape(35, 2),
            {"a": [], "b": {}, "c": (), "d": np.float64(math.inf), "e": -0.0, "f": 1e16, "g": 1e-7},
            [{"k": math.nan}] * 33 + [{"k": 1}], [{"k": np.float64(2.5)}] * 40, []]


def _refuse_python_encoder(patch) -> None:
    """The standard library's indented encoder refuses to run (its compact C encoder still may)."""
    patch.setattr(json.encoder, "_make_iterencode", lambda *a, **k: pytest.fail("pure-Python encoder used"))


@pytest.mark.parametrize("indent", [0, 1, 2, 4])
def test_awkward_values_written_as_json_dumps_writes_them(indent, monkeypatch):
    values = _awkward()
    expected = [json.dumps(to_json(v), indent=indent) for v in values]
    _refuse_python_encoder(monkeypatch)
    for value, text in zip(values, expected):
        assert dumps(value, indent=indent) == text
    assert json.loads(dumps(values[0], indent=indent))[0]["start_ns"] == 1_736_412_474_730_190_383


@pytest.fixture(scope="module")
def cluster_folders(real_profiles, tmp_path_factory) -> dict[str, Path]:
    """The real 2- and 4-rank exports, a 4-rank set of the real text export's steps repeated (as the
    benchmark makes them) and the 3-rank synthetic text export."""
    root = tmp_path_factory.mktemp("json_text")
    out = {name: shutil.copytree(real_profiles / "cluster_pytorch" / name / "level2", root / name / "level2")
           for name in REAL}
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_cluster_scale import synthesize

    synthesize(root / "repeated", 20_000, ranks=4)
    out["repeated"] = root / "repeated"
    out["synthetic"] = synthetic_cluster.build(root / "synthetic", launch_lag_rank=0, export="text")
    return out


def _reports(folder: Path) -> dict:
    from studio.tools.profiler.cluster import open_cluster
    from studio.tools.profiler.cluster.comm_report import open_comm
    from studio.tools.profiler.cluster.free_gaps import open_free

    return {"cluster": open_cluster(folder), "comm": open_comm(folder), "free": open_free(folder)}


def test_cluster_reports_byte_identical_on_real_and_synthetic_sets(cluster_folders, monkeypatch):
    gaps = 0
    for name, folder in cluster_folders.items():
        reports = _reports(folder)
        expected = {kind: json.dumps(to_json(r), indent=2) for kind, r in reports.items()}
        with monkeypatch.context() as patch:
            _refuse_python_encoder(patch)
            for kind, report in reports.items():
                assert dumps(report) == expected[kind], f"{name}: {kind}"
        gaps += len(reports["free"].gaps)
    assert gaps > 1000  # the column-wise path was taken on real rows


def test_cli_free_json_byte_identical(cluster_folders, capsys, monkeypatch):
    from studio.cli import main
    from studio.tools.profiler.cluster.free_gaps import open_free

    folder = cluster_folders["repeated"]
    expected = json.dumps(to_json(open_free(folder)), indent=2) + "\n"
    _refuse_python_encoder(monkeypatch)
    assert main(["profile", "cluster", str(folder), "--free", "--json"]) == 0
    assert capsys.readouterr().out == expected


def test_no_collection_while_writing_rows_or_reading_cached_gaps(tmp_path):
    """Neither writing 20,000 rows nor decoding a rank's 20,000 cached gaps runs the cycle collector
    while at it (it would walk the whole new tree again and again); both give back what went in."""
    import gc

    from studio.tools.profiler.cluster import free_cache

    rows = [{"start_ns": i * 1000, "label": "python idle", "duration_us": i / 3, "device_tasks": {}}
            for i in range(20_000)]
    source = tmp_path / "trace_view.json"
    source.write_text("[]")
    free_cache.store(source, free_cache.Entry(source="trace_view.json", gaps=rows))
    collections = []
    gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
    try:
        gc.collect()
        collections.clear()
        text = dumps({"gaps": rows})
        entry = free_cache.load(source)
    finally:
        gc.callbacks.pop()
    # at most the one young-generation collection each block leaves due when it ends (before: dozens)
    assert len(collections) <= 2 and set(collections) <= {0}, collections
    assert text == json.dumps({"gaps": rows}, indent=2) and entry.gaps == rows
