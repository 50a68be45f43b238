"""The idle-gap cache is bounded as the profiler's database caches are: past its size, the least
recently used entries go — reading one marks it used — and an entry in use never goes (the run's
own ranks, one used in the last IN_USE_S seconds by another run); a crashed write's part file goes
once it is that old. Which entries survive is worked out here from the files' sizes and times."""

from __future__ import annotations

import os
import time
from pathlib import Path

from studio.core.serial import to_json
from studio.tools.profiler.cluster import free_cache
from studio.tools.profiler.cluster.free_gaps import open_free
from tests.tools import synthetic_cluster

TEXT2 = "cluster_pytorch/msinsight_text_2rank_level2/level2"


def _entries(tmp_path: Path, count: int) -> list[tuple[Path, Path]]:
    """``count`` stand-in timelines, each with a cache entry of a different size: (source, entry)."""
    out = []
    for i in range(count):
        source = tmp_path / f"rank{i}.json"
        source.write_text(f"[{i}]")
        gaps = [{"rank_gap": j, "label": "python idle", "duration_us": j * 1.5} for j in range(40 * (i + 1))]
        free_cache.store(source, free_cache.Entry(source.name, gaps))
        out.append((source, free_cache.cache_root() / f"{free_cache.key(source)}.msgpack"))
    return out


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_least_recently_used_go_first_and_entries_in_use_stay(tmp_path):
    entries = _entries(tmp_path, 6)
    ages = [5000, 4000, 3000, 2000, 1000, 10]  # the last was used 10 s ago: maybe by a run under way
    for (_, entry), age in zip(entries, ages):
        _age(entry, age)
    part = free_cache.cache_root() / "deadbeef.12345.part"  # a write that crashed long ago
    part.write_bytes(b"x" * 5000)
    _age(part, 5000)
    sizes = {entry: entry.stat().st_size for _, entry in entries}
    keep = entries[0][0]  # the oldest is the evicting run's own rank
    limit = sum(sizes.values()) - sizes[entries[1][1]] - sizes[entries[2][1]] // 2
    # by hand: the oldest unprotected entries go until the folder fits: #1, then #2 (half of it is not enough)
    total, expected_gone = sum(sizes.values()), []
    for _, entry in entries[1:5]:
        if total <= limit:
            break
        expected_gone.append(entry)
        total -= sizes[entry]
    assert expected_gone == [entries[1][1], entries[2][1]]
    free_cache.evict(keep=[keep], limit=limit)
    gone = [entry for _, entry in entries if not entry.exists()]
    assert gone == expected_gone and not part.exists()
    assert sum(entry.stat().st_size for _, entry in entries if entry.exists()) <= limit
    # nothing fits in 0 bytes, yet the run's own entry and the one in use stay
    free_cache.evict(keep=[keep], limit=0)
    assert [entry.exists() for _, entry in entries] == [True, False, False, False, False, True]


def test_reading_an_entry_marks_it_used(tmp_path):
    (old, old_entry), (new, new_entry) = _entries(tmp_path, 2)
    _age(old_entry, 5000)
    _age(new_entry, 4000)
    assert free_cache.load(old).gaps  # read: now the most recently used
    assert old_entry.stat().st_mtime > time.time() - 60
    _age(old_entry, 3000)  # still more recent than the other, and out of the in-use window
    free_cache.evict(limit=old_entry.stat().st_size)
    assert old_entry.exists() and not new_entry.exists()


def test_a_run_evicts_older_clusters_never_its_own_ranks(real_profiles, tmp_path, monkeypatch):
    first = open_free(real_profiles / TEXT2, workers=1)
    theirs = sorted(free_cache.cache_root().glob("*.msgpack"))
    assert len(theirs) == 2
    monkeypatch.setattr(free_cache, "MAX_BYTES", 0)  # nothing fits
    monkeypatch.setattr(free_cache, "IN_USE_S", 0)  # and no other run is under way
    synthetic = synthetic_cluster.build(tmp_path / "synthetic", export="text")
    report = to_json(open_free(synthetic, workers=1))
    ours = sorted(free_cache.cache_root().glob("*.msgpack"))
    assert len(ours) == 3 and not set(ours) & set(theirs)  # the other cluster's went, this one's stayed
    for entry in ours:
        entry.unlink()
    assert to_json(open_free(synthetic, workers=1)) == report  # and they held what labelling again gives
    assert to_json(open_free(real_profiles / TEXT2, workers=1)) == to_json(first)
