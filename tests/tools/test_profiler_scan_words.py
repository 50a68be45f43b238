"""The trace scanner's word-at-a-time paths accept and reject exactly what JSON does.

Strings are skipped 8 bytes at a time up to the first byte that is not plain ASCII, and the fields'
keys are matched as one word; both must give the byte-by-byte answer wherever the byte that
matters falls in a word, at the very end of the data, or cut off. The references are independent
of the scanner: the JSON string grammar as a regular expression, msgspec's decode of the same
bytes, and numpy's rounding of the decoded numbers.
"""

from __future__ import annotations

import re
import threading
from decimal import ROUND_DOWN, Decimal

import msgspec
import numpy as np
import pytest

from studio.tools.profiler import chrome_scan
from studio.tools.profiler.chrome_decode import Event

pytestmark = pytest.mark.skipif(chrome_scan.compiled() is None, reason="numba is not installed")

# RFC 8259's string: unescaped bytes are anything but the quote, the backslash and controls.
_JSON_STRING = re.compile(rb'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
# Bytes, or escapes, that a string body can hold at any position: each one's handling differs.
_SPECIALS = [b'"', b"\\\\", b'\\"', b"\\n", b"\\/", b"\\u00e9", b"\\u00g9", b"\\x", b"\\", b"\x01", b"\x1f",
             b"\x7f", "é".encode(), "€".encode(), b" ", b"!", b"#", b"[", b"]", b"\\u12"]


def kernel_string(buf: bytes, at: int) -> tuple[int, bool, bool]:
    k = chrome_scan.compiled()
    data = np.frombuffer(buf, np.uint8)  # held while the kernel reads its address
    end, escaped, wide = k._string(np.int64(data.ctypes.data), at, len(buf))
    return int(end), bool(escaped), bool(wide)


def reference_string(buf: bytes, at: int) -> tuple[int, bool, bool]:
    """(end or -1, has escapes, has non-ASCII) of the JSON string at ``at``, by the grammar."""
    match = _JSON_STRING.match(buf, at)
    if match is None:
        return -1, False, False
    body = match.group()[1:-1]
    return match.end(), b"\\" in body, any(b >= 128 for b in body)


def test_a_string_ends_where_the_json_grammar_ends_it():
    """Each special byte at each position of strings of 0-23 bytes, at each of the 8 alignments,
    followed by more data, ending the data, and cut off at each byte."""
    checked = 0
    for pad in range(8):
        for length in range(24):
            for j in range(length + 1):
                for special in _SPECIALS:
                    body = b"a" * j + special + b"b" * (length - j)
                    token = b'"' + body + b'"'
                    for buf in (b" " * pad + token + b',"next"', b" " * pad + token):
                        expected = reference_string(buf, pad)
                        got = kernel_string(buf, pad)
                        if expected[0] < 0:
                            assert got[0] == -1, (buf, got)
                        else:
                            assert got == expected, (buf, got, expected)
                            # msgspec, the decoder the scanner stands in for, agrees on the token
                            msgspec.json.decode(buf[pad:expected[0]])
                        checked += 1
                    if j == length and special == b'"':
                        for cut in range(pad + 1, pad + len(token)):  # no closing quote in the data
                            buf = b" " * pad + token[:cut - pad]
                            if reference_string(buf, pad)[0] < 0:
                                assert kernel_string(buf, pad)[0] == -1, buf
    assert checked > 50_000


def test_long_strings_with_a_special_byte_in_every_word():
    """Strings of several words: a special byte in the first, a middle or the last word."""
    for special in _SPECIALS:
        for length in (8, 15, 16, 17, 31, 32, 33, 64, 100):
            for j in sorted({0, 7, 8, 9, length // 2, length - 8, length - 1, length}):
                if 0 <= j <= length:
                    buf = b'"' + b"x" * j + special + b"y" * (length - j) + b'"}'
                    expected = reference_string(buf, 0)
                    got = kernel_string(buf, 0)
                    assert (got == expected) if expected[0] >= 0 else got[0] == -1, (buf, got, expected)


# Events whose fields are read on the fast path (compact keys, then keys with blanks around the
# colon, which are read byte by byte), with strings of many lengths in and around their args.
_EVENTS = [
    b'{"name":"MatMul_12345","pid":1,"tid":2,"ts":12.5,"dur":3.25,"ph":"X","cat":"AI_CORE",'
    b'"args":{"Model Id":4294967295,"Task Type":"AI_CORE long value here","x":[1,2.5e3,true,false,null],'
    b'"y":{"z":"\xc3\xa9\\n"}}}',
    b'{ "ph" : "X", "name": "a b", "ts": 1736408883694.795, "dur": 0.5 ,"pid": 3, "tid": 4,'
    b' "cat":"c",  "args": {"k":"1234\\u00e95678","long key of twenty":""} }',
    b'{"ph":"X","cat":"python_function","name":"<built-in method x>","pid":7,"tid":7,"ts":"1736408883694795.123",'
    b'"dur":0.001,"args":{"Python id":2473}}',
]
_MUTATIONS = [b'"', b"\\", b"\x01", b" ", b"}", b"{", b",", b":", b"0", b"a", b"-", b".", b"e", b"]"]


def scan_one(buf: bytes):
    """The kernel's reading of ``[event]``: (status, where it stopped, the fast rows' fields)."""
    k = chrome_scan.compiled()
    d = np.frombuffer(buf, np.uint8)
    result = chrome_scan._scan_range(k, d, chrome_scan._Range(1, len(buf)), 1 << 16, threading.Event(),
                                     gather=False)
    rows = []
    for piece in result.pieces:
        offs, lens, _kinds, arena, _count = piece.strings
        pids, tids, _tracks = piece.tracks

        def text(i):
            at, size = int(offs[i]), int(lens[i])
            return (bytes(arena[at:at + size]) if at >= 0 else buf[-1 - at:-1 - at + size]).decode()

        start, dur, track, name, cat, args_off, args_len = (c[:piece.rows] for c in piece.columns)
        for r in range(piece.rows):
            rows.append({"ts": int(start[r]), "dur": int(dur[r]), "pid": int(pids[track[r]]),
                         "tid": int(tids[track[r]]), "name": text(name[r]), "cat": text(cat[r]),
                         "args": buf[int(args_off[r]):int(args_off[r]) + int(args_len[r])]})
    return result.status, result.pos, rows


def expected_row(buf: bytes) -> dict:
    """The typed decoder's reading of the one event in ``buf``, its times as numpy rounds them."""
    def ns(v):
        if isinstance(v, str):  # msprof's exact decimal microseconds, to the ns below (toward 0)
            return int(Decimal(v).scaleb(3).to_integral_value(rounding=ROUND_DOWN))
        return int(np.rint(np.float64(v) * 1000.0))

    event = msgspec.json.decode(buf, type=list[Event])[0]
    return {"ts": ns(event.ts), "dur": ns(event.dur), "pid": event.pid, "tid": event.tid,
            "name": event.name, "cat": event.cat, "args": bytes(event.args)}


def check_event(buf: bytes, k) -> bool:
    """The kernel stops at ``buf`` exactly when the typed decoder finds it malformed (or leaves it
    to the decoder, for a number out of float range); a row it reads equals the decoder's."""
    try:
        msgspec.json.decode(buf)
        error = ""
    except msgspec.DecodeError as exc:
        error = str(exc)
    status, pos, rows = scan_one(buf)
    # What follows the array's end is checked by the reader (only blanks after a bare array).
    valid = status == k.ARRAY_END and not buf[pos + 1:].strip()
    if "out of range" in error:  # e.g. 1e400: valid grammar; the typed decoder says where, or skips it in args
        assert not rows or msgspec.json.decode(buf, type=list[Event]), buf
    else:
        assert valid == (not error), (buf, status, error)
    if not valid:
        return False  # the reader hands the last event read back to the decoder, with the rest
    if rows:
        assert len(rows) == 1, buf
        assert rows[0] == expected_row(buf), buf
    return bool(rows)


@pytest.mark.parametrize("event", _EVENTS, ids=["compact", "blanks", "string-ts"])
def test_every_byte_of_an_event_changed_or_cut(event):
    """Each byte of the event replaced by each of 14 bytes, removed, or the event cut there:
    bad JSON is found wherever it falls, and what is read on the fast path equals the decode."""
    k = chrome_scan.compiled()
    assert check_event(b"[" + event + b"]", k), "the event itself should be read on the fast path"
    fast = 0
    for i, byte in enumerate(event):
        if byte >= 128:
            continue  # a changed byte inside a UTF-8 sequence is the decoder's to report, not the scanner's
        variants = [event[:i] + m + event[i + 1:] for m in _MUTATIONS if m[0] != byte]
        variants.append(event[:i] + event[i + 1:])
        for variant in variants:
            fast += check_event(b"[" + variant + b"]", k)
        status, _pos, _rows = scan_one(b"[" + event[:i])
        assert status == k.STOP, event[:i]
    assert fast > len(event)  # changes inside names, numbers and args keep the fast path


def test_strings_are_equal_exactly_when_their_bytes_are():
    """The word-at-a-time comparison of interned strings, a differing byte at each position."""
    k = chrome_scan.compiled()
    for m in range(41):
        base = bytes(range(65, 65 + m))
        for j in range(m + 1):
            other = base if j == m else base[:j] + b"#" + base[j + 1:]
            x, y = np.frombuffer(base + b"\0" * 8, np.uint8), np.frombuffer(other + b"\0" * 8, np.uint8)
            assert bool(k._equal(np.int64(x.ctypes.data), np.int64(y.ctypes.data), m)) == (base == other), (m, j)


def test_hashes_spread_names_over_the_table():
    """12k op names that differ in their last bytes (as a trace's ``Op_123`` do) land on about as
    many slots of a 32k table as random numbers would (1 - e^-(12k/32k) of it), so lookups stay
    one probe long; the same text in another kind, or another length, hashes apart."""
    k = chrome_scan.compiled()
    ops = ["Conv2D", "MatMul", "Add", "aclnnFlashAttentionScore_FlashAttentionScore", "hcom_allReduce__586_0_1",
           "LayerNorm", "Cast", "A", "Gather", "Mul", "Relu", "Softmax"]
    names = sorted({f"{op}_{i}" for op in ops for i in range(1000)} | {f"{i}" for i in range(100)})
    text = ("".join(names)).encode()
    data = np.frombuffer(text + b"\0" * 8, np.uint8)
    at, slots, hashes = 0, set(), set()
    for name in names:
        h = int(k._hash(np.int64(data.ctypes.data), at, at + len(name), len(text), k.NAME_KIND))
        hashes.add(h)
        slots.add(h & ((1 << 15) - 1))
        assert h != int(k._hash(np.int64(data.ctypes.data), at, at + len(name), len(text), k.CAT_KIND))
        at += len(name)
    assert len(hashes) == len(names)
    expected = (1 << 15) * (1 - np.exp(-len(names) / (1 << 15)))
    assert len(slots) > 0.95 * expected, (len(slots), expected)
