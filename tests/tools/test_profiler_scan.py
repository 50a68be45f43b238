"""The compiled trace scanner reads every trace exactly as the typed decoder does.

Each trace is read twice: by the typed msgspec decoder (the path where numba is missing) and by the
scanner, in one and in several threads with small pieces, so range borders, table growth and
piece hand-overs happen many times; everything a view shows must be equal. Cut and malformed files
must give the decoder's result (the events before the cut and its warning) or its message.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.profiler import chrome_scan
from studio.tools.profiler.chrome_reader import read_chrome_trace

sys.path.insert(0, str(Path(__file__).parent))
from test_profiler_parallel import canonical, crossing_trace  # noqa: E402

pytestmark = pytest.mark.skipif(chrome_scan.compiled() is None, reason="numba is not installed")


def decoder(path: Path):
    return run_job(read_chrome_trace(path, ranges=1, scan=False))


def scanner(path: Path, threads: int, piece: int, monkeypatch=None):
    """Read with the scanner, failing the test if the scanner left the whole file to the decoder."""
    calls = []
    real = chrome_scan.scan_chrome_trace

    def spy(*args, **kwargs):
        used = yield from real(*args, **kwargs)
        calls.append(used)
        return used

    chrome_scan_reader = sys.modules["studio.tools.profiler.chrome_reader"]
    original = chrome_scan_reader.scan_chrome_trace
    chrome_scan_reader.scan_chrome_trace = spy
    try:
        trace = run_job(read_chrome_trace(path, ranges=threads, chunk_bytes=piece, scan=True))
    finally:
        chrome_scan_reader.scan_chrome_trace = original
    assert calls == [True], "the scanner did not read this file"
    return trace


def assert_same(path: Path, min_size: int = 0) -> None:
    expected = canonical(decoder(path))
    assert len(expected["slices"]) >= min_size
    for threads, piece in ((1, 1 << 20), (3, 4096), (4, 700)):
        assert canonical(scanner(path, threads, piece)) == expected, (threads, piece)


def fixture_traces() -> list[Path]:
    from shared_fixtures import ASCEND_FIXTURES

    found = []
    for path in sorted(ASCEND_FIXTURES.rglob("*.json")):
        head = path.read_bytes()[:65536]
        if b'"ph"' in head:
            found.append(path)
    return found


def test_every_shared_fixture_trace(ascend_fixtures):
    traces = fixture_traces()
    assert len(traces) >= 10, "the shared fixtures should hold the msprof and PyTorch timelines"
    for path in traces:
        assert_same(path)


@pytest.mark.parametrize("wrap", [False, True], ids=["bare-array", "object-form"])
def test_all_phases_crossing_range_borders(tmp_path, wrap):
    assert_same(crossing_trace(tmp_path / "cross.json", n=4000, wrap=wrap), min_size=1000)


# The odd spellings that are one field set to a fixed value, by the event's kind (i % 23).
_PLAIN_ODD = {
    1: {"name": 'quote"and\\slash'}, 2: {"name": "Ünïcode_op"}, 3: {"pid": "host process"},
    8: {"args": {"deep": [[{"a": [1, {"b": None}]}], True, False, -0.0, 1e-7, "x\u00e9\n"]}},
    9: {"tid": 2 ** 70}, 10: {"ts": 9007199254740993},  # 2^53 + 1: beyond the exact path
    11: {"ph": "i"}, 12: {"name": ""}, 13: {"args": "a string, not an object"}, 15: {"tid": -5},
}


def odd_events(rng: random.Random) -> list[dict | str]:
    """X events in every spelling the scanner must read, or leave to the decoder, exactly."""
    out: list = [{"ph": "M", "name": "process_name", "pid": 3, "args": {"name": "Dev"}}]
    clock = 1000.0
    for i in range(1500):
        clock += rng.randint(1, 40) / 8
        kind = i % 23
        e: dict = {"ph": "X", "name": f"op{i % 13}", "pid": 3, "tid": i % 3, "ts": clock,
                   "dur": rng.randint(1, 900) / 16, "cat": "c", "args": {"i": i}}
        if kind in _PLAIN_ODD:
            e.update(_PLAIN_ODD[kind])
        elif kind == 4:
            e["ts"] = f"{1736408883694795 + i}.{rng.randint(0, 999999):06d}"  # msprof's string µs
            e["dur"] = f"{rng.randint(0, 99)}.{rng.randint(0, 9999)}"
        elif kind == 5:
            e["ts"] = clock * 1e3
            e["raw_ts"] = True
        elif kind == 6:
            del e["dur"]
        elif kind == 7:
            del e["cat"], e["args"]
        elif kind == 14:
            e["ts"] = int(clock)
        out.append(e)
    return out


def write_odd(path: Path, events: list, rng: random.Random) -> Path:
    """Events joined with varied whitespace, some written by hand to reach layouts json.dumps does not."""
    parts = []
    for i, e in enumerate(events):
        text = json.dumps(e, separators=(",", ":") if i % 2 else (", ", ": "), ensure_ascii=i % 3 == 0)
        if i % 17 == 0:
            text = text.replace('"ts"', '"ts"', 1)[:-1] + ', "ts": 1.5E3}'  # a repeated key: the last wins
        if i % 19 == 0:
            text = text[:-1] + ', "n\\u0061me": "escaped key"}'
        if i % 29 == 0:
            text = text.replace('"dur":', '"dur"  \n :\t', 1)
        parts.append(text)
    sep = [",", ",\n", " ,\t", ",\r\n  "]
    body = "".join(p + (sep[rng.randrange(4)] if i + 1 < len(parts) else "") for i, p in enumerate(parts))
    path.write_text("\ufeff [" + body + "]\n\n", encoding="utf-8")
    return path


def test_odd_spellings_equal_the_decoder(tmp_path):
    rng = random.Random(5)
    path = write_odd(tmp_path / "odd.json", odd_events(rng), rng)
    json.loads(path.read_text(encoding="utf-8-sig"))  # the file is valid JSON
    assert_same(path, min_size=1000)


def test_numbers_read_as_the_decoder_reads_them(tmp_path):
    """Timestamps in many decimal spellings, checked against Python's own float parsing too."""
    rng = random.Random(9)
    texts = []
    for _ in range(3000):
        whole = rng.choice(["0", "7", "123456", "1736408883694", "98765432109"])
        frac = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 12)))
        text = whole + ("." + frac if frac else "") + rng.choice(["", "", "e2", "E-3", "e+1"])
        texts.append(("-" if rng.random() < 0.1 else "") + text)
    body = ",".join(f'{{"ph":"X","name":"n{i}","pid":1,"tid":{i},"ts":{t},"dur":{t}}}' for i, t in enumerate(texts))
    path = tmp_path / "numbers.json"
    path.write_text("[" + body + "]")
    trace = scanner(path, 1, 1 << 20)
    assert canonical(trace) == canonical(decoder(path))
    by_name = {trace.names[int(trace.name[i])]: int(trace.start[i]) + trace.origin_ns for i in range(trace.size)}
    for i, text in enumerate(texts):
        assert by_name[f"n{i}"] == round(float(text) * 1000.0), text


def test_guessed_borders_inside_strings_are_caught(tmp_path):
    """Names and args full of '},' put guessed borders inside strings; the proof rescans."""
    events = [{"ph": "X", "name": "a},{" * (i % 40), "pid": 1, "tid": i % 2, "ts": i * 2.0, "dur": 1.0,
               "args": {"s": "},\n{" * 50}} for i in range(3000)]
    path = tmp_path / "braces.json"
    path.write_text(",\n".join(json.dumps(e) for e in events).join(["[", "]"]))
    assert_same(path, min_size=3000)


@pytest.fixture
def handed_over_while_scanning(monkeypatch):
    """Slow every kernel call down, so the first range's pieces reach the builder while the threads
    still scan (as on a big file); returns how many pieces were added that way."""
    import time

    kernels = chrome_scan.compiled()
    real_scan, real_feed = kernels.scan, chrome_scan._feed
    early = []

    def slow_scan(*args):
        time.sleep(0.003)
        return real_scan(*args)

    def counting_feed(k, builder, data, result, path, keep_last=False):
        before = result.fed
        real_feed(k, builder, data, result, path, keep_last)
        if keep_last:
            early.append(result.fed - before)

    monkeypatch.setattr(kernels, "scan", slow_scan)
    monkeypatch.setattr(chrome_scan, "_feed", counting_feed)
    return early


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.999])
def test_cut_file_gives_the_events_before_the_cut(tmp_path, cut, handed_over_while_scanning):
    whole = crossing_trace(tmp_path / "whole.json", n=3000).read_bytes()
    path = tmp_path / "cut.json"
    path.write_bytes(whole[:int(len(whole) * cut)])
    expected = decoder(path)
    assert "truncated" in expected.facts.get("warning", "")
    got = scanner(path, 1, 2048)
    assert sum(handed_over_while_scanning) > 3, "pieces should reach the builder during the scan"
    assert canonical(got) == canonical(expected)
    assert got.facts["warning"] == expected.facts["warning"]
    got = scanner(path, 3, 4096)
    assert canonical(got) == canonical(expected)
    assert got.facts["warning"] == expected.facts["warning"]


def test_cut_in_the_first_event_says_so(tmp_path):
    path = tmp_path / "first.json"
    path.write_text('[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"du')
    with pytest.raises(UserError) as old:
        decoder(path)
    with pytest.raises(UserError) as new:
        run_job(read_chrome_trace(path, ranges=2, chunk_bytes=4096, scan=True))
    assert str(new.value) == str(old.value) and "truncated" in str(new.value)


@pytest.mark.parametrize("bad", [b'{"ph":"X",,}', b'{"ph":"X","ts":01}', b'{"ph":"X","name":"\x01"}',
                                 b'{"ph":"X","args":{"a":1]}', b"tru"])
def test_malformed_middle_gives_the_decoders_message(tmp_path, bad):
    good = b",\n".join(json.dumps({"ph": "X", "name": f"n{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}).encode()
                       for i in range(2000))
    path = tmp_path / "bad.json"
    path.write_bytes(b"[" + good + b",\n" + bad + b",\n" + good + b"]")
    with pytest.raises(UserError) as old:
        decoder(path)
    with pytest.raises(UserError) as new:
        run_job(read_chrome_trace(path, ranges=2, chunk_bytes=4096, scan=True))
    assert new.value.what.split(":")[0] == old.value.what.split(":")[0]


def test_without_numba_the_decoder_reads_alone(tmp_path, monkeypatch):
    """numba missing: no scanner, the typed decoder's result (and nothing imported that fails)."""
    path = crossing_trace(tmp_path / "cross.json", n=2000)
    expected = canonical(decoder(path))
    monkeypatch.setattr(chrome_scan.compiled, "_loaded", [])
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.delitem(sys.modules, "studio.tools.profiler.trace_kernels", raising=False)
    monkeypatch.delattr(sys.modules["studio.tools.profiler"], "trace_kernels", raising=False)
    assert chrome_scan.compiled() is None
    assert canonical(run_job(read_chrome_trace(path, ranges=2, chunk_bytes=4096, scan=True))) == expected
    monkeypatch.setattr(chrome_scan.compiled, "_loaded", [])
    monkeypatch.setenv(chrome_scan.NO_SCAN_ENV, "1")
    assert chrome_scan.compiled() is None


def test_warm_up_loads_the_kernels():
    assert chrome_scan.warm_up() is True


def test_cancel_stops_the_scanning_threads(tmp_path, handed_over_while_scanning):
    """A cancel during the scan ends the read with Cancelled, and no scanning thread is left running."""
    import threading

    from studio.core.errors import Cancelled
    from studio.core.jobs import CancelToken

    path = crossing_trace(tmp_path / "cross.json", n=4000)
    token = CancelToken()
    reader = read_chrome_trace(path, token, ranges=2, chunk_bytes=2048, scan=True)
    with pytest.raises(Cancelled):
        for step, _progress in enumerate(reader):
            if step == 3:
                token.cancel()
    assert not [t for t in threading.enumerate() if t.name.startswith("trace-scan")]
