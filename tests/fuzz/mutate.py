"""Seeded mutations of a file's bytes: truncations, bit flips, zeroed and repeated ranges, and for
text formats the mutations that broke readers before (invalid UTF-8, deep nesting, absurd numbers).

``variants(data, n, seed, text=...)`` returns ``n`` (label, bytes) pairs; the same seed always
gives the same variants, so a failure reproduces from its label alone.
"""

from __future__ import annotations

import random
import re


def _truncate(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    cut = rng.choice([0, 1, 2, 7, 8, 16, len(data) // 2, len(data) - 1, rng.randrange(max(1, len(data)))])
    cut = max(0, min(cut, len(data) - 1))
    return f"truncate@{cut}", data[:cut]


def _flip(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    buf = bytearray(data)
    count = rng.choice([1, 1, 4, 16, 64])
    for _ in range(count):
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    return f"flip{count}", bytes(buf)


def _zero(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    start = rng.randrange(len(data))
    length = rng.choice([4, 64, 512, len(data)])
    buf = bytearray(data)
    end = min(len(buf), start + length)
    buf[start:end] = bytes(end - start)
    return f"zero@{start}+{end - start}", bytes(buf)


def _repeat(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    start = rng.randrange(len(data))
    chunk = data[start:start + rng.choice([8, 256, 4096])]
    return f"repeat@{start}", data[:start] + chunk * rng.choice([2, 50]) + data[start:]


def _garbage(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    start = rng.randrange(len(data))
    junk = bytes(rng.randrange(256) for _ in range(rng.choice([1, 16, 200])))
    return f"insert@{start}", data[:start] + junk + data[start:]


def _bad_utf8(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    start = rng.randrange(len(data))
    return f"utf8@{start}", data[:start] + b"\xff\xfe\xc3\x28" + data[start:]


def _deep_nesting(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    depth = rng.choice([1000, 100_000])
    if data.lstrip()[:1] == b"{":
        return f"nest{depth}", b'{"a":' * depth + b"1" + b"}" * depth
    return f"nest{depth}", b"[" * depth + b"]" * depth


def _numbers(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    text = data.decode("utf-8", "replace")
    numbers = list(re.finditer(r"-?\d+(\.\d+)?", text))
    if not numbers:
        return _flip(rng, data)
    picks = rng.sample(numbers, min(len(numbers), rng.choice([1, 5, 50])))
    wild = ["-1", "0", "1e308", "-1e308", "nan", "inf", "99999999999999999999999", "", "1.5.5", "0x10", "1e999",
            str(2 ** 62)]
    out, last = [], 0
    for m in sorted(picks, key=lambda m: m.start()):
        out.append(text[last:m.start()])
        out.append(rng.choice(wild))
        last = m.end()
    out.append(text[last:])
    return f"numbers{len(picks)}", "".join(out).encode()


def _drop_lines(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    lines = data.split(b"\n")
    keep = [ln for ln in lines if rng.random() > 0.3]
    return f"droplines{len(lines) - len(keep)}", b"\n".join(keep)


BINARY = [_truncate, _truncate, _flip, _flip, _zero, _repeat, _garbage]
TEXT = [_truncate, _flip, _zero, _garbage, _bad_utf8, _numbers, _numbers, _drop_lines]
JSON = TEXT + [_deep_nesting]


def variants(data: bytes, n: int, seed: int, kind: str = "binary") -> list[tuple[str, bytes]]:
    """``n`` deterministic mutants of ``data``: kind is "binary", "text" or "json"."""
    rng = random.Random(seed)
    ops = {"binary": BINARY, "text": TEXT, "json": JSON}[kind]
    out = []
    for i in range(n):
        label, mutant = ops[i % len(ops)](rng, data)
        out.append((f"{i}:{label}", mutant))
    return out
