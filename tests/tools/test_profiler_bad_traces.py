"""Bad traces end in a UserError that says what and where — never a traceback, never a fake timeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.profiler.chrome_reader import read_chrome_trace
from studio.tools.profiler.loader import open_profile

REPO = Path(__file__).resolve().parents[2]


def events(n: int) -> list[str]:
    return [json.dumps({"ph": "X", "name": f"op{i % 9}", "pid": 1, "tid": i % 2, "ts": i * 2.0, "dur": 1.5})
            for i in range(n)]


@pytest.mark.parametrize("ranges", [1, 3])
def test_invalid_utf8_says_where(tmp_path, ranges):
    body = events(3000)
    body[2000] = body[2000].replace('"op', '"\xff\xfeop')
    path = tmp_path / "latin1.json"
    path.write_bytes(("[" + ",\n".join(body) + "]").encode("latin-1"))
    bad = path.read_bytes().index(b"\xff")
    with pytest.raises(UserError, match=f"not valid UTF-8.*byte offset {bad:,}") as error:
        run_job(read_chrome_trace(path, ranges=ranges, chunk_bytes=4096))
    assert "iconv" in error.value.fix and error.value.where == str(path)


@pytest.mark.parametrize("where", ["args", "top"])
def test_deep_nesting_is_a_user_error(tmp_path, where):
    deep = "[" * 200_000 + "]" * 200_000
    text = f'[{{"ph":"X","ts":1,"dur":1,"args":{deep}}}]' if where == "args" else f'[{{"ph":"X","ts":1}},{deep}]'
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(UserError, match="nested too deeply"):
        run_job(read_chrome_trace(path))


@pytest.mark.parametrize("content", ['[{"ph":"X"}]', '[{"ph":"X","name":"x","ts":"garbage"}]',
                                     '{"traceEvents":[{"x":1},{"y":2}]}', '[{"ph":"Q","ts":1}]'])
def test_events_with_nothing_to_draw_are_not_a_trace(tmp_path, content):
    path = tmp_path / "g.json"
    path.write_text(content)
    with pytest.raises(UserError, match="No trace events found"):
        run_job(open_profile(path, use_cache=False))


def test_events_without_ts_are_skipped_and_counted(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('[{"ph":"X","name":"a","ts":1,"dur":2,"pid":1,"tid":1},{"ph":"X","name":"b"},'
                    '{"ph":"B","name":"c","pid":1,"tid":1}]')
    trace = run_job(open_profile(path, use_cache=False))
    assert trace.size == 1 and trace.names[int(trace.name[0])] == "a"
    assert trace.facts["events without a timestamp"].startswith("2 events")


def test_cli_exit_code_and_no_traceback(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(b'[{"ph":"X","name":"\xff","ts":1,"dur":1}]')
    result = subprocess.run([sys.executable, "-m", "studio", "profile", "stats", "--no-cache", str(path)],
                            capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "not valid UTF-8" in result.stderr
