"""The caches' shared least-recently-used rule: oldest first, only until the folder fits."""

from __future__ import annotations

import os

from studio.core.lru import oldest_over_limit, touch


def test_oldest_go_first_and_only_until_the_total_fits():
    candidates = [(30.0, 40, "c"), (10.0, 50, "a"), (20.0, 30, "b")]
    # 200 bytes in all (60 of them kept, not candidates), limit 100: a (50) then b (30) go -> 120, c -> 80
    assert list(oldest_over_limit(candidates, 200, 100)) == ["a", "b", "c"]
    assert list(oldest_over_limit(candidates, 200, 150)) == ["a"]
    assert list(oldest_over_limit(candidates, 100, 100)) == []


def test_touch_marks_a_file_used(tmp_path):
    path = tmp_path / "entry"
    path.write_bytes(b"x")
    os.utime(path, (1, 1))
    touch(path)
    assert path.stat().st_mtime > 1
    touch(tmp_path / "missing")  # gone: nothing to mark, no error
