"""Compiled scanner for Chrome trace JSON: complete (``X``) events straight into columns.

One pass over the bytes of the mapped file, no Python object per event. For each top-level event
it validates the JSON grammar (strings, escapes, numbers, nesting) and, when the event is a plain
complete event, writes ts and dur (ns), a local track id for (pid, tid), local ids for name and
cat (interned through a hash table of first occurrences in the file) and the file span of its
``args``. Every other event — other phases, names or categories with escapes or non-ASCII bytes,
pids given as strings, numbers beyond the exact fast path — is recorded as a span for the typed
``msgspec`` decoder (:mod:`.chrome_decode`), which decodes it exactly as before. The caller
(:mod:`.chrome_scan`) owns the policy; this module is the loop.

Numbers are read as the typed decoder reads them: a JSON number with at most 2^53 in its digits and
a power of ten within ±22 is one exact integer times (or over) an exact power of ten, which is one
correctly rounded IEEE operation (Clinger's fast path), so the float equals the decoder's; others
are delegated. Microseconds become ns as ``rint(value * 1000.0)`` (round half to even), as numpy
does. String timestamps (msprof) are converted exactly, as ``chrome_events.one_ts_ns`` does.

Per byte: the helpers read the mapped bytes through their address (no reference counting per call,
see ``_at``); string bodies are skipped 8 bytes at a time up to the first byte that is not plain
ASCII, the fields' keys are matched as one word, names are hashed and compared a word at a time.

The machine code is cached (``cache=True``) beside this file when its folder is writable, else in
Studio's cache folder, as the accuracy kernels are.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from studio.core.compiled import keep_numba_cache_with_studio

keep_numba_cache_with_studio(__file__)

import numba  # noqa: E402 - after NUMBA_CACHE_DIR: numba reads it on import
from llvmlite import ir  # noqa: E402
from numba.core import types  # noqa: E402
from numba.cpython.unsafe.numbers import trailing_zeros as _trailing_zeros  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

if sys.byteorder != "little":
    # The word tests find a byte's place by counting trailing zeros: little-endian words only. The
    # loader then leaves traces to the typed decoder and says why.
    raise ImportError("the compiled trace scanner reads little-endian words; this machine is big-endian")

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)

# Slots of the state array (int64), kept across calls for one range of the file.
POS, NFAST, NDELEG, NSTR, NTRK, STATUS, LAST_KIND, LAST_START, ARENA = range(9)
# Why a call returned.
DONE = 0  # reached the range's end at an event boundary (pos is just after the comma)
PAUSE = 1  # outputs or tables full: grow or hand over new outputs and call again
ARRAY_END = 2  # the closing ``]`` of the event array is at pos
STOP = 3  # the event at pos is not valid JSON (or is cut off): the typed decoder takes over there
# What LAST_KIND says about the last event written.
NONE, FAST, DELEGATED = 0, 1, 2
NAME_KIND, CAT_KIND = 0, 1
MAX_DEPTH = 512  # deeper nesting goes to the typed decoder (which reports it)

_POW10 = np.array([10.0 ** k for k in range(23)], dtype=np.float64)  # all exact in float64
_TWO53 = 1 << 53
_TS_WHOLE_MAX = (2 ** 63 - 1 - 999) // 1000  # microseconds whose ns still fit int64

_QUOTE, _BACKSLASH, _COLON, _COMMA = 34, 92, 58, 44
_LBRACE, _RBRACE, _LBRACKET, _RBRACKET = 123, 125, 91, 93
_MINUS, _PLUS, _DOT, _ZERO, _NINE = 45, 43, 46, 48, 57
_U = np.uint64
# Words of one byte repeated eight times, for the tests on 8 bytes at once (see :func:`_special8`).
_ONES, _HIGHS = _U(0x0101010101010101), _U(0x8080808080808080)
_SPACES, _QUOTES, _BACKSLASHES = _U(0x2020202020202020), _U(0x2222222222222222), _U(0x5C5C5C5C5C5C5C5C)


def _word(text: bytes) -> np.uint64:
    """``text`` (at most 8 bytes) as the word :func:`_load8` reads where it is written."""
    return _U(int.from_bytes(text.ljust(8, b"\0"), "little"))


# The fields' keys with their colon, as words, in the order they are tried (the most common
# first), with their field (as :func:`_key_id` numbers them) and length; masks keep 0-8 bytes.
_KEYS = [(b'"name":', 1), (b'"ts":', 5), (b'"dur":', 6), (b'"pid":', 3), (b'"tid":', 4), (b'"ph":', 0),
         (b'"cat":', 2), (b'"args":', 7)]
_KEY_WORDS = np.array([_word(text) for text, _field in _KEYS], np.uint64)
_KEY_FIELDS = np.array([field for _text, field in _KEYS], np.int64)
_KEY_SIZES = np.array([len(text) for text, _field in _KEYS], np.int64)
_MASKS = np.array([(1 << (8 * size)) - 1 for size in range(8)] + [(1 << 64) - 1], np.uint64)


# The scan reads the mapped bytes (and its nesting stack) through their address, not through the
# array: a numba function that takes an array takes and drops a reference count on it at each call
# (atomic operations, on one count that both scanning threads share) unless LLVM proves them
# needless, which it did not for the helpers that call others (``_value``, ``_member_key``: ~14
# per event of a msprof trace). An address is a plain integer; ``scan`` holds the arrays.
@intrinsic
def _at(typingctx, base, i):
    """The byte at address ``base + i``."""
    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(builder.add(args[0], args[1]), ir.IntType(8).as_pointer())
        return builder.load(ptr)
    return types.uint8(types.int64, types.int64), codegen


@intrinsic
def _put(typingctx, base, i, value):
    """Store byte ``value`` at address ``base + i``."""
    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(builder.add(args[0], args[1]), ir.IntType(8).as_pointer())
        builder.store(args[2], ptr)
        return context.get_dummy_value()
    return types.none(types.int64, types.int64, types.uint8), codegen


@intrinsic
def _store8(typingctx, base, i, value):
    """Store word ``value`` at address ``base + i`` (any alignment)."""
    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(builder.add(args[0], args[1]), ir.IntType(64).as_pointer())
        builder.store(args[2], ptr, align=1)
        return context.get_dummy_value()
    return types.none(types.int64, types.int64, types.uint64), codegen


@intrinsic
def _load8(typingctx, base, i):
    """The 8 bytes at address ``base + i`` as one word, in the machine's byte order (little-endian
    on every machine Studio runs on; :func:`_special8` does not depend on the order, and the
    hash only needs to be the same within one run)."""
    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(builder.add(args[0], args[1]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)
    return types.uint64(types.int64, types.int64), codegen


@_jit
def _ws(d, p, n):
    while p < n:
        c = _at(d, p)
        if c != 32 and c != 10 and c != 13 and c != 9:
            return p
        p += 1
    return p


@_jit
def _is_hex(c):
    return (48 <= c <= 57) or (65 <= c <= 70) or (97 <= c <= 102)


@_jit
def _special8(w):
    """The bytes of word ``w`` that need a look inside a string (quote, backslash, control byte
    below 0x20, non-ASCII), as their high bits; 0 when all 8 are plain. Each term is the "some
    byte is below k" test ``(x - k·ones) & ~x & highs``: a borrow starts only at a byte that is
    itself below k, so the lowest bit set is exactly the first such byte (higher ones may be
    spurious, and are never used)."""
    q = w ^ _QUOTES
    b = w ^ _BACKSLASHES
    return (((w - _SPACES) & ~w) | ((q - _ONES) & ~q) | ((b - _ONES) & ~b) | w) & _HIGHS


@_jit
def _escape(d, p, n):
    """At a backslash inside a string: the position after its escape sequence, or -1 if invalid."""
    if p + 1 >= n:
        return -1
    e = _at(d, p + 1)
    if e == 117:  # \uXXXX
        if p + 5 >= n:
            return -1
        for k in range(2, 6):
            if not _is_hex(_at(d, p + k)):
                return -1
        return p + 6
    if e == _QUOTE or e == _BACKSLASH or e == 47 or e == 98 or e == 102 or e == 110 or e == 114 or e == 116:
        return p + 2
    return -1


@_jit
def _string(d, p, n):
    """``_at(d, p)`` is a quote: (end after the closing quote or -1, has escapes, has non-ASCII)."""
    p += 1
    escaped = False
    wide = False
    while True:
        # A word at a time up to the first byte that is not plain ASCII (usually the closing
        # quote), found without a branch per byte; the last 7 bytes of the data one by one.
        # Measured against a byte loop: as fast on short keys, 10-25 % off the scan of real traces.
        if p + 8 <= n:
            t = _special8(_load8(d, p))
            if t == _U(0):
                p += 8
                continue
            p += np.int64(_trailing_zeros(t) >> _U(3))
        elif p >= n:
            return -1, escaped, wide
        c = _at(d, p)
        if c == _QUOTE:
            return p + 1, escaped, wide
        if c == _BACKSLASH:
            escaped = True
            p = _escape(d, p, n)
            if p < 0:
                return -1, escaped, wide
            continue
        if c < 32:
            return -1, escaped, wide
        if c >= 128:
            wide = True
        p += 1


@_jit
def _number(d, p, n):
    """A JSON number at ``p``: (end or -1, exact-fast flag, is an int64 integer, digits as an
    integer, power of ten, negative). Only validated here; :func:`_float` makes the value."""
    negative = False
    if p < n and _at(d, p) == _MINUS:
        negative = True
        p += 1
    if p >= n or _at(d, p) < _ZERO or _at(d, p) > _NINE:
        return -1, False, False, 0, 0, False
    mant = 0
    fast = True
    digits = 0
    if _at(d, p) == _ZERO:
        p += 1
    else:
        while p < n and _ZERO <= _at(d, p) <= _NINE:
            if digits < 18:
                mant = mant * 10 + (_at(d, p) - _ZERO)
            else:
                fast = False
            digits += 1
            p += 1
    integer = digits <= 18
    frac = 0
    if p < n and _at(d, p) == _DOT:
        integer = False
        p += 1
        if p >= n or _at(d, p) < _ZERO or _at(d, p) > _NINE:
            return -1, False, False, 0, 0, False
        while p < n and _ZERO <= _at(d, p) <= _NINE:
            if mant < _TWO53 // 10:
                mant = mant * 10 + (_at(d, p) - _ZERO)
                frac += 1
            elif _at(d, p) != _ZERO:
                fast = False  # a digit past the exact range (zeros there change nothing)
            p += 1
    exp = 0
    if p < n and (_at(d, p) == 101 or _at(d, p) == 69):
        integer = False
        p += 1
        eneg = False
        if p < n and (_at(d, p) == _PLUS or _at(d, p) == _MINUS):
            eneg = _at(d, p) == _MINUS
            p += 1
        if p >= n or _at(d, p) < _ZERO or _at(d, p) > _NINE:
            return -1, False, False, 0, 0, False
        while p < n and _ZERO <= _at(d, p) <= _NINE:
            if exp < 10000:
                exp = exp * 10 + (_at(d, p) - _ZERO)
            p += 1
        if eneg:
            exp = -exp
    power = exp - frac
    if mant > _TWO53 or power > 22 or power < -22:
        fast = False
    return p, fast, integer, mant, power, negative


@_jit
def _float(mant, power, negative):
    """``mant`` × 10^``power`` correctly rounded (``mant`` ≤ 2^53, |``power``| ≤ 22: one IEEE operation)."""
    value = float(mant)
    if power >= 0:
        value = value * _POW10[power]
    else:
        value = value / _POW10[-power]
    return -value if negative else value


@_jit
def _rint_ns(us):
    """``rint(us * 1000.0)``: round half to even, as numpy's rint."""
    x = us * 1000.0
    r = math.floor(x)
    f = x - r
    if f > 0.5 or (f == 0.5 and abs(r) < 9e15 and np.int64(r) & 1):
        r += 1.0
    return r


@_jit
def _string_ts(d, a, b):
    """A timestamp string's bytes ``_at(d, a:b)`` (no quotes) as exact ns; (ok, ns). Only
    ``-?digits(.digits*)?`` with a whole part that fits is taken; the rest is delegated."""
    p = a
    negative = False
    if p < b and _at(d, p) == _MINUS:
        negative = True
        p += 1
    whole = 0
    digits = 0
    while p < b and _ZERO <= _at(d, p) <= _NINE:
        if digits >= 18:
            return False, 0
        whole = whole * 10 + (_at(d, p) - _ZERO)
        digits += 1
        p += 1
    if digits == 0 or whole > _TS_WHOLE_MAX:
        return False, 0
    frac = 0
    if p < b and _at(d, p) == _DOT:
        p += 1
        k = 0
        while p < b and _ZERO <= _at(d, p) <= _NINE:
            if k < 3:
                frac = frac * 10 + (_at(d, p) - _ZERO)
            k += 1
            p += 1
        while k < 3:
            frac *= 10
            k += 1
    if p != b:
        return False, 0
    ns = whole * 1000 + frac
    return True, (-ns if negative else ns)


@_jit
def _member_key(d, p, n):
    """At an object member's key (``p`` past any blank): the position after its colon, or -1."""
    if p >= n or _at(d, p) != _QUOTE:
        return -1
    p, _e, _w = _string(d, p, n)
    if p < 0:
        return -1
    p = _ws(d, p, n)
    if p >= n or _at(d, p) != _COLON:
        return -1
    return p + 1


@_jit
def _value(d, p, n, stack):
    """Skip one JSON value at ``p`` (after whitespace), validating it; the end, or -1."""
    depth = 0
    while True:
        p = _ws(d, p, n)
        if p >= n:
            return -1
        c = _at(d, p)
        if c == _LBRACE or c == _LBRACKET:
            q = _ws(d, p + 1, n)
            if q >= n:
                return -1
            if (c == _LBRACE and _at(d, q) == _RBRACE) or (c == _LBRACKET and _at(d, q) == _RBRACKET):
                p = q + 1
            else:
                if depth >= MAX_DEPTH:
                    return -1
                _put(stack, depth, c)
                depth += 1
                p = q
                if c == _LBRACE:
                    p = _member_key(d, p, n)
                    if p < 0:
                        return -1
                continue
        elif c == _QUOTE:
            p, _e, _w = _string(d, p, n)
        elif c == _MINUS or (_ZERO <= c <= _NINE):
            p, _f, _i, _m, _e, _s = _number(d, p, n)
        elif c == 116 and p + 4 <= n and _at(d, p + 1) == 114 and _at(d, p + 2) == 117 and _at(d, p + 3) == 101:
            p += 4
        elif (c == 102 and p + 5 <= n and _at(d, p + 1) == 97 and _at(d, p + 2) == 108
              and _at(d, p + 3) == 115 and _at(d, p + 4) == 101):
            p += 5
        elif c == 110 and p + 4 <= n and _at(d, p + 1) == 117 and _at(d, p + 2) == 108 and _at(d, p + 3) == 108:
            p += 4
        else:
            return -1
        if p < 0:
            return -1
        # A value is complete: close containers, or go on to the next member.
        while True:
            if depth == 0:
                return p
            p = _ws(d, p, n)
            if p >= n:
                return -1
            c = _at(d, p)
            top = _at(stack, depth - 1)
            if c == _COMMA:
                p = _ws(d, p + 1, n)
                if top == _LBRACE:
                    p = _member_key(d, p, n)
                    if p < 0:
                        return -1
                break
            if (c == _RBRACE and top == _LBRACE) or (c == _RBRACKET and top == _LBRACKET):
                depth -= 1
                p += 1
                continue
            return -1


@_jit
def _key_id(d, a, b):
    """Which field a key (bytes ``_at(d, a:b)``, no quotes, no escapes) names: 0..7, or -1."""
    m = b - a
    c0 = _at(d, a) if m > 0 else 0
    if m == 2:
        if c0 == 112 and _at(d, a + 1) == 104:
            return 0  # ph
        if c0 == 116 and _at(d, a + 1) == 115:
            return 5  # ts
    elif m == 3:
        if c0 == 99 and _at(d, a + 1) == 97 and _at(d, a + 2) == 116:
            return 2  # cat
        if c0 == 112 and _at(d, a + 1) == 105 and _at(d, a + 2) == 100:
            return 3  # pid
        if c0 == 116 and _at(d, a + 1) == 105 and _at(d, a + 2) == 100:
            return 4  # tid
        if c0 == 100 and _at(d, a + 1) == 117 and _at(d, a + 2) == 114:
            return 6  # dur
    elif m == 4:
        if c0 == 110 and _at(d, a + 1) == 97 and _at(d, a + 2) == 109 and _at(d, a + 3) == 101:
            return 1  # name
        if c0 == 97 and _at(d, a + 1) == 114 and _at(d, a + 2) == 103 and _at(d, a + 3) == 115:
            return 7  # args
    return -1


@_jit
def _known_key(d, q, n):
    """At a key's opening quote: (field, position after the colon) when the key is one of the
    fields spelled plainly and its colon follows at once (``"name":``), tested on one word against
    the spellings; else (-1, -1), and the key is read byte by byte (:func:`_key_id`). Both ways
    give the same field and position for such a key."""
    if q + 8 > n:
        return -1, -1
    w = _load8(d, q)
    for i in range(_KEY_WORDS.shape[0]):  # unrolled by LLVM: the table is a constant
        size = _KEY_SIZES[i]
        if w & _MASKS[size] == _KEY_WORDS[i]:
            return _KEY_FIELDS[i], q + size
    return -1, -1


@_jit
def _mix(h, w):
    h = (h ^ w) * _U(0x9E3779B97F4A7C15)
    return (h << _U(31)) | (h >> _U(33))  # a rotation: the high bits a product fills come down


@_jit
def _hash(d, a, b, n, kind):
    """A hash of the bytes at ``d + a`` .. ``d + b`` and ``kind``, a word at a time. A string of 8
    bytes or more ends with the word of its last 8 bytes, overlapping the one before; a shorter
    one is one word, masked (read byte by byte in the last 7 bytes of the data ``d`` .. ``d + n``)."""
    m = b - a
    h = _U(0x243F6A8885A308D3) ^ (_U(m) << _U(8)) ^ _U(kind)
    if m >= 8:
        p = a
        while p + 8 < b:
            h = _mix(h, _load8(d, p))
            p += 8
        h = _mix(h, _load8(d, b - 8))
    elif a + 8 <= n:
        h = _mix(h, _load8(d, a) & ((_U(1) << _U(8 * m)) - _U(1)))
    else:
        w = _U(0)
        for j in range(m):
            w |= _U(_at(d, a + j)) << _U(8 * j)
        h = _mix(h, w)
    # Murmur3's finaliser: every input bit reaches the low bits the table index is taken from.
    h = (h ^ (h >> _U(33))) * _U(0xFF51AFD7ED558CCD)
    h = (h ^ (h >> _U(33))) * _U(0xC4CEB9FE1A85EC53)
    return h ^ (h >> _U(33))


@_jit
def _equal(x, y, m):
    """Whether the ``m`` bytes at addresses ``x`` and ``y`` are the same (words, as ``_hash``)."""
    if m >= 8:
        j = 0
        while j + 8 < m:
            if _load8(x, j) != _load8(y, j):
                return False
            j += 8
        return _load8(x, m - 8) == _load8(y, m - 8)
    for j in range(m):
        if _at(x, j) != _at(y, j):
            return False
    return True


@_jit
def _track_slot(pid, tid, size):
    """Where track (``pid``, ``tid``) starts its search in a table of ``size`` (a power of two)."""
    h = (np.uint64(pid) * np.uint64(0x9E3779B97F4A7C15)) ^ (np.uint64(tid) * np.uint64(0xC2B2AE3D27D4EB4F))
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(size - 1))


@_jit
def rehash_strings(str_hash, count, slots):
    """Put the first ``count`` strings into the (larger, emptied) table ``slots``."""
    mask = slots.shape[0] - 1
    for k in range(count):
        i = np.int64(str_hash[k] & np.uint64(mask))
        while slots[i] >= 0:
            i = (i + 1) & mask
        slots[i] = k


@_jit
def rehash_tracks(trk_pid, trk_tid, count, tslots):
    """Put the first ``count`` tracks into the (larger, emptied) table ``tslots``."""
    for k in range(count):
        i = _track_slot(trk_pid[k], trk_tid[k], tslots.shape[0])
        while tslots[i] >= 0:
            i = (i + 1) & (tslots.shape[0] - 1)
        tslots[i] = k


@_jit
def scan(data, end, state, start, dur, track, name, cat, args_off, args_len, deleg,
         slots, str_off, str_len, str_kind, str_hash, arena, tslots, trk_pid, trk_tid, stack_array):
    """Scan events from ``state[POS]`` (just after ``[`` or a top-level comma) until the first
    event boundary at or after ``end``, the array's ``]``, a full output or table, or bad JSON.
    Complete events are appended to the columns from ``state[NFAST]``; delegated events' spans
    (start, end) to ``deleg`` from ``state[NDELEG]``. ``state[STATUS]`` says why it returned."""
    n = data.shape[0]
    d = np.int64(data.ctypes.data)  # the helpers read through addresses (see ``_at``)
    stack = np.int64(stack_array.ctypes.data)  # MAX_DEPTH bytes
    arena_at = np.int64(arena.ctypes.data)
    p = state[POS]
    first = state[NFAST] == 0 and state[NDELEG] == 0 and state[LAST_KIND] == NONE
    while True:
        if (state[NFAST] >= start.shape[0] or state[NDELEG] * 2 + 2 > deleg.shape[0]
                or (state[NSTR] + 2) * 2 > slots.shape[0] or (state[NTRK] + 1) * 2 > tslots.shape[0]
                or state[ARENA] * 2 > arena.shape[0]):
            state[POS] = p
            state[STATUS] = PAUSE
            return
        q = _ws(d, p, n)
        if q >= n:
            state[POS] = p
            state[STATUS] = STOP
            return
        if _at(d, q) == _RBRACKET and first:  # an empty array
            state[POS] = q
            state[STATUS] = ARRAY_END
            return
        first = False
        ev = q
        fast = _at(d, q) == _LBRACE
        ph_x = False
        seen = 0
        ts_ns = np.int64(0)
        dur_ns = np.int64(0)
        pid = np.int64(0)
        tid = np.int64(0)
        name_a = name_b = cat_a = cat_b = np.int64(0)
        arg_a = arg_b = np.int64(0)
        if not fast:  # not an object: the typed decoder decides what it is
            q = _value(d, q, n, stack)
        else:
            q = _ws(d, q + 1, n)
            if q < n and _at(d, q) == _RBRACE:
                q += 1
                fast = False  # {} has no phase: delegated (counted as ignored there)
            else:
                while True:
                    if q >= n or _at(d, q) != _QUOTE:
                        q = -1
                        break
                    field, after = _known_key(d, q, n)
                    if after < 0:  # any other key, or a known one spelled otherwise
                        ka = q + 1
                        q, esc, wide = _string(d, q, n)
                        if q < 0:
                            break
                        field = -1 if (esc or wide) else _key_id(d, ka, q - 1)
                        if esc:
                            fast = False  # an escaped key may spell a field's name
                        q = _ws(d, q, n)
                        if q >= n or _at(d, q) != _COLON:
                            q = -1
                            break
                        after = q + 1
                    q = _ws(d, after, n)
                    if q >= n:
                        q = -1
                        break
                    va = q
                    if field >= 0:
                        bit = 1 << field
                        if seen & bit:
                            fast = False  # a repeated field: the decoder's rule for it applies
                        seen |= bit
                    c = _at(d, q)
                    if field == 0 or field == 1 or field == 2:  # ph, name, cat: plain strings only
                        if c == _QUOTE:
                            q, esc, wide = _string(d, q, n)
                            if q < 0:
                                break
                            if esc or wide:
                                fast = False
                            if field == 0:
                                ph_x = q - va == 3 and _at(d, va + 1) == 88
                            elif field == 1:
                                name_a, name_b = va + 1, q - 1
                            else:
                                cat_a, cat_b = va + 1, q - 1
                        else:
                            fast = False
                            q = _value(d, q, n, stack)
                    elif field == 3 or field == 4:  # pid, tid: integers only
                        if c == _MINUS or (_ZERO <= c <= _NINE):
                            q, _f, is_int, mant, _e, neg = _number(d, q, n)
                            if q < 0:
                                break
                            if not is_int:
                                fast = False
                            iv = -mant if neg else mant
                            if field == 3:
                                pid = iv
                            else:
                                tid = iv
                        else:
                            fast = False
                            q = _value(d, q, n, stack)
                    elif field == 5 or field == 6:  # ts, dur: numbers or exact decimal strings
                        ok = False
                        ns = np.int64(0)
                        if c == _MINUS or (_ZERO <= c <= _NINE):
                            q, f, _i, mant, power, neg = _number(d, q, n)
                            if q < 0:
                                break
                            if f:
                                r = _rint_ns(_float(mant, power, neg))
                                if -9.2e18 < r < 9.2e18:
                                    ok = True
                                    ns = np.int64(r)
                        elif c == _QUOTE:
                            q, esc, wide = _string(d, q, n)
                            if q < 0:
                                break
                            if not esc:
                                ok, ns = _string_ts(d, va + 1, q - 1)
                        else:
                            q = _value(d, q, n, stack)
                        if not ok:
                            fast = False
                        if field == 5:
                            ts_ns = ns
                        else:
                            dur_ns = ns
                    elif field == 7:  # args: kept as raw bytes
                        q = _value(d, q, n, stack)
                        arg_a, arg_b = va, q
                    else:
                        q = _value(d, q, n, stack)
                    if q < 0:
                        break
                    q = _ws(d, q, n)
                    if q >= n:
                        q = -1
                        break
                    if _at(d, q) == _COMMA:
                        q = _ws(d, q + 1, n)
                        continue
                    if _at(d, q) == _RBRACE:
                        q += 1
                        break
                    q = -1
                    break
        if q < 0:  # bad JSON or cut off: the typed decoder takes it from this event on
            state[POS] = ev
            state[STATUS] = STOP
            return
        # An X event needs ph, ts and dur read on the fast path (absent ones have rules of their own).
        if fast and ph_x and (seen & 96) == 96:
            k = state[NFAST]
            start[k] = ts_ns
            dur[k] = dur_ns
            # The local ids of the track, the name and the category are looked up here, not in
            # functions: an inlined function that takes the tables took and dropped a reference
            # count on each (atomic operations), a quarter of the scan's time.
            i = _track_slot(pid, tid, tslots.shape[0])
            while True:
                s = tslots[i]
                if s < 0:  # a new track
                    s = state[NTRK]
                    tslots[i] = s
                    trk_pid[s] = pid
                    trk_tid[s] = tid
                    state[NTRK] = s + 1
                    break
                if trk_pid[s] == pid and trk_tid[s] == tid:
                    break
                i = (i + 1) & (tslots.shape[0] - 1)
            track[k] = s
            # Name, then category: one lookup, written once. New strings are copied to ``arena``
            # (compared there, in cache); one that does not fit is compared where it is in the file
            # (its offset stored as ``-1 - offset``).
            for kind in range(2):
                a, b = (name_a, name_b) if kind == NAME_KIND else (cat_a, cat_b)
                m = b - a
                h = _hash(d, a, b, n, kind)
                i = np.int64(h & np.uint64(slots.shape[0] - 1))
                while True:
                    s = slots[i]
                    if s < 0:  # a new string
                        s = state[NSTR]
                        slots[i] = s
                        used = state[ARENA]
                        if used + m <= arena.shape[0]:
                            for j in range(m):
                                arena[used + j] = _at(d, a + j)
                            str_off[s] = used
                            state[ARENA] = used + m
                        else:
                            str_off[s] = -1 - a
                        str_len[s] = m
                        str_kind[s] = kind
                        str_hash[s] = h
                        state[NSTR] = s + 1
                        break
                    if str_hash[s] == h and str_len[s] == m and str_kind[s] == kind:
                        o = str_off[s]
                        if _equal(arena_at + o if o >= 0 else d - 1 - o, d + a, m):
                            break
                    i = (i + 1) & (slots.shape[0] - 1)
                if kind == NAME_KIND:
                    name[k] = s
                else:
                    cat[k] = s
            args_off[k] = arg_a
            args_len[k] = arg_b - arg_a
            state[NFAST] = k + 1
            state[LAST_KIND] = FAST
        else:
            k = state[NDELEG]
            deleg[2 * k] = ev
            deleg[2 * k + 1] = q
            state[NDELEG] = k + 1
            state[LAST_KIND] = DELEGATED
        state[LAST_START] = ev
        q = _ws(d, q, n)
        if q >= n:
            state[POS] = ev
            state[STATUS] = STOP
            return
        if _at(d, q) == _RBRACKET:
            state[POS] = q
            state[STATUS] = ARRAY_END
            return
        if _at(d, q) != _COMMA:
            state[POS] = ev
            state[STATUS] = STOP
            return
        p = q + 1
        if p >= end:
            state[POS] = p
            state[STATUS] = DONE
            return


@_jit
def gather(d, offs, lens, count, out, base, new_offs):
    """Copy the ``count`` spans (``offs``, ``lens``) of ``d`` one after another into ``out``; their
    offsets in the blob (from ``base``) go to ``new_offs``."""
    d_at, out_at = np.int64(d.ctypes.data), np.int64(out.ctypes.data)
    o = 0
    for k in range(count):
        a = offs[k]
        m = lens[k]
        new_offs[k] = base + o
        # 8 bytes at a time through the addresses: a byte loop copied ~1 GB/s, a third of the read.
        src, dst = d_at + a, out_at + o
        j = 0
        while j + 8 <= m:
            _store8(dst, j, _load8(src, j))
            j += 8
        while j < m:
            _put(dst, j, _at(src, j))
            j += 1
        o += m
