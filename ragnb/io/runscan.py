"""Plain TREC files read into what the measures need, without a frame: the rank of every
judgement.

trec_eval orders each query's documents by score, descending, ties by document id descending,
and its measures read only where the judged documents stand and how many documents each query
returns. So the rank of a judged document is the number of documents of its query scored above
it, plus those tied with it whose id is greater (``strcmp``), and nothing else of the run is
needed. :func:`scan_run` reads the run file in blocks, and one compiled pass over each block's
bytes splits the lines (eight bytes at a time), looks each query and each document of a judged
query up in hash tables of the qrels, parses the scores, and at the end of each query counts
the documents above its judged ones. No id of the run becomes a Python or arrow string, none
is sorted, and the file is never held whole in memory; a large file is cut at query starts into
a part per usable core, each read by a thread. :func:`scan_qrels` reads plain qrels into the
index the measures read (:class:`ragnb.frames.index.QrelsIndex`) in the same way, only the
distinct query ids becoming Python strings.

They read the common files only: every line split by single spaces into six fields (a run:
``qid Q0 docid rank score tag``, the rank not read, as trec_eval 10.0 does not) or four (qrels:
``qid iter docid grade``, grades ``-?[0-9]{1,18}``), printable ASCII, each run query's lines
consecutive, no (query, document) pair twice, scores in C's decimal syntax. On any other line,
or a query's lines apart, they return None, and the caller reads the files with the general
readers, which read them whole and name what is wrong (a bad line, a pair given twice). Scores
are parsed exactly: a decimal of at most 19 significant digits, the integer they form at most
2**53 and its power of ten at most 22 either way, is one correctly rounded multiplication or
division (Clinger's fast path, "How to read floating point numbers accurately", PLDI 1990); any
other is handed to pyarrow's correctly rounded parser, so every score is the double that C's
``strtod`` (trec_eval's ``atof``) gives.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numba as nb
import numpy as np

from ragnb.core.machine import usable_cores
from ragnb.frames.index import Groups, QrelsIndex, grouped_qrels_index

_T = TypeVar("_T")

__all__ = ["ScannedQrels", "ScannedRun", "scan_qrels", "scan_run"]

#: Bytes read from the file at a time (a query whose lines are longer grows the buffer).
BLOCK_BYTES = 1 << 24
#: The smallest part of a file read by a thread of its own (32 MB).
PART_BYTES = 1 << 25
#: Distinct run queries without judgements :func:`scan_run` keeps track of (more: None).
MAX_OTHER_QUERIES = 1 << 20
#: Bytes of their ids it keeps (more: None).
MAX_OTHER_QUERY_BYTES = 1 << 25

_OK, _STOP, _GROW = 0, 1, 2
#: Judged documents of a query up to which each one's rank is counted over the query's scores
#: (more: over a sorted copy).
_FEW_HITS = 32
_EMPTY = -1
_HASH_SEED = np.uint64(14695981039346656037)
#: 10**0 .. 10**22, each exactly a double.
_POW10 = np.array([10.0**k for k in range(23)])


@dataclass(frozen=True, eq=False)
class ScannedQrels:
    """Qrels read by :func:`scan_qrels`.

    Attributes
    ----------
    index : QrelsIndex
        The qrels grouped by query, as :func:`ragnb.frames.index.index_qrels` gives them.
    data, offsets : ndarray of uint8, ndarray of int64 (n_rows + 1,)
        The document ids' bytes, row after row (file order).
    hashes : ndarray of uint64, shape (n_rows,)
        Each row's document id hashed as :func:`scan_run` hashes the run's.
    """

    index: QrelsIndex
    data: np.ndarray
    offsets: np.ndarray
    hashes: np.ndarray


@dataclass(frozen=True, eq=False)
class ScannedRun:
    """What the measures read of a run joined with its qrels by :func:`scan_run`.

    Attributes
    ----------
    n_retrieved : ndarray of int64, shape (n_qrels_queries,)
        Documents the run returns for each query of the qrels (``qrels.queries.ids``); 0 when
        the query is not in the run.
    rank : ndarray of int64, shape (n_judgements,)
        0-based rank of each judgement in its query's evaluation order (score descending, ties
        by document id descending), -1 when not retrieved; in the layout of
        ``qrels.queries.rows``.
    n_run_queries : int
        Distinct queries of the run.
    n_run_queries_without_qrels : int
        Queries of the run that have no judgement.
    tag : str
        The sixth field of the run's last line (trec_eval's ``runid``).
    """

    n_retrieved: np.ndarray
    rank: np.ndarray
    n_run_queries: int
    n_run_queries_without_qrels: int
    tag: str


def _jit(f):  # type: ignore[no-untyped-def]
    return nb.njit(cache=True, nogil=True)(f)


def _inline(f):  # type: ignore[no-untyped-def]
    """A helper inlined in numba's IR into its callers (a call passing arrays costs reference
    counts: more than these helpers' work)."""
    return nb.njit(cache=True, nogil=True, inline="always")(f)


@_inline
def _same(a, sa, ea, b, sb, eb):  # type: ignore[no-untyped-def]
    """``a[sa:ea] == b[sb:eb]``."""
    if ea - sa != eb - sb:
        return False
    for i in range(ea - sa):
        if a[sa + i] != b[sb + i]:
            return False
    return True


@_inline
def _greater(a, sa, ea, sb, eb):  # type: ignore[no-untyped-def]
    """``a[sa:ea] > a[sb:eb]`` as byte strings (``strcmp``)."""
    n = min(ea - sa, eb - sb)
    for i in range(n):
        x = a[sa + i]
        y = a[sb + i]
        if x != y:
            return x > y
    return ea - sa > eb - sb


@_jit
def _query_table(qdata, qoffs):  # type: ignore[no-untyped-def]
    """The qrels' query ids in an open-addressing table (int64 of a power-of-two size at least
    twice their number, -1: empty; each slot a query's group)."""
    nq = qoffs.shape[0] - 1
    size = 1
    while size < 2 * nq + 2:
        size *= 2
    qtable = np.full(size, -1, dtype=np.int64)
    mask = np.uint64(size - 1)
    for g in range(nq):
        slot = _byte_hash(qdata, qoffs[g], qoffs[g + 1]) & mask
        while qtable[slot] != -1:
            slot = (slot + np.uint64(1)) & mask
        qtable[slot] = g
    return qtable


@_jit
def _doc_hashes(ddata, dstarts, dends):  # type: ignore[no-untyped-def]
    """:func:`_byte_hash` of each document id ``ddata[dstarts[p]:dends[p]]``."""
    out = np.empty(dstarts.shape[0], dtype=np.uint64)
    for p in range(dstarts.shape[0]):
        out[p] = _byte_hash(ddata, dstarts[p], dends[p])
    return out


#: Eight bytes of 0x21, 0x80, 0x01 and 0x7F: the masks of :func:`_special`'s byte tests.
_BYTES_21 = np.uint64(0x2121212121212121)
_BYTES_80 = np.uint64(0x8080808080808080)
_BYTES_01 = np.uint64(0x0101010101010101)
_BYTES_7F = np.uint64(0x7F7F7F7F7F7F7F7F)
#: A de Bruijn sequence and its table: the index of a word's lowest set bit.
_DE_BRUIJN = np.uint64(0x03F79D71B4CB0A89)
_LOWEST_BIT = np.zeros(64, dtype=np.int64)
for _bit in range(64):
    _LOWEST_BIT[((1 << _bit) * 0x03F79D71B4CB0A89 & (2**64 - 1)) >> 58] = _bit
_HASH_PRIME = np.uint64(0x9E3779B97F4A7C15)


@_inline
def _special(words, i, hi):  # type: ignore[no-untyped-def]
    """The first byte at or after ``i`` that is not printable ASCII (a space, a newline, a
    control character, 0x7F or above), ``hi`` when none is before it: eight bytes at a time
    (``words`` is the block as little-endian uint64). The tests flag a byte below 0x21, from
    0x80, and equal to 0x7F; each may also flag bytes above a flagged one (a borrow), never
    below, so the lowest flag is exact."""
    k = i >> 3
    shift = np.uint64((i & 7) * 8)
    while True:
        w = words[k]
        y = w ^ _BYTES_7F
        f = (
            ((w - _BYTES_21) & ~w & _BYTES_80)
            | (w & _BYTES_80)
            | ((y - _BYTES_01) & ~y & _BYTES_80)
        )
        f = (f >> shift) << shift
        if f != 0:
            bit = _LOWEST_BIT[((f & (~f + np.uint64(1))) * _DE_BRUIJN) >> np.uint64(58)]
            return min(k * 8 + (bit >> 3), hi)
        k += 1
        shift = np.uint64(0)
        if k * 8 >= hi:
            return hi


@_inline
def _load8(words, p):  # type: ignore[no-untyped-def]
    """The eight bytes from ``p`` on as a little-endian uint64 (``words`` has a word after the
    one holding ``p``)."""
    k = p >> 3
    s = np.uint64((p & 7) * 8)
    if s == 0:
        return words[k]
    return (words[k] >> s) | (words[k + 1] << (np.uint64(64) - s))


@_inline
def _mix(h, chunk):  # type: ignore[no-untyped-def]
    h = (h ^ chunk) * _HASH_PRIME
    return h ^ (h >> np.uint64(32))


@_inline
def _word_hash(words, s, e):  # type: ignore[no-untyped-def]
    """The hash of bytes ``s:e`` read eight at a time (:func:`_byte_hash` of the same bytes)."""
    h = _HASH_SEED
    p = s
    while p + 8 <= e:
        h = _mix(h, _load8(words, p))
        p += 8
    if p < e:
        h = _mix(h, _load8(words, p) & ((np.uint64(1) << np.uint64(8 * (e - p))) - np.uint64(1)))
    return h * _HASH_PRIME


@_inline
def _byte_hash(buf, s, e):  # type: ignore[no-untyped-def]
    """:func:`_word_hash` of ``buf[s:e]`` read byte by byte (any array of uint8)."""
    h = _HASH_SEED
    p = s
    while p < e:
        chunk = np.uint64(0)
        n = min(8, e - p)
        for j in range(n):
            chunk |= np.uint64(buf[p + j]) << np.uint64(8 * j)
        h = _mix(h, chunk)
        p += 8
    return h * _HASH_PRIME


@_inline
def _equal_words(words, a, b, n):  # type: ignore[no-untyped-def]
    """The ``n`` bytes from ``a`` on equal those from ``b`` on (eight at a time)."""
    p = 0
    while p + 8 <= n:
        if _load8(words, a + p) != _load8(words, b + p):
            return False
        p += 8
    if p < n:
        mask = (np.uint64(1) << np.uint64(8 * (n - p))) - np.uint64(1)
        return (_load8(words, a + p) & mask) == (_load8(words, b + p) & mask)
    return True


@_inline
def _score(buf, s, e):  # type: ignore[no-untyped-def]
    """The decimal from ``buf[s]`` on, up to the first byte that cannot go on it (at most
    ``e``): ``(value, status, end)``; status 0 exact, 1 valid but to be parsed by a full parser
    (NaN returned), 2 not C's decimal syntax (``[+-]digits[.digits][e[+-]digits]`` with a
    digit before the exponent)."""
    i = s
    negative = False
    if i < e and (buf[i] == 43 or buf[i] == 45):  # + -
        negative = buf[i] == 45
        i += 1
    mantissa = np.uint64(0)
    digits = 0  # significant digits held in mantissa
    exp10 = 0
    seen = 0
    point = False
    while i < e:
        c = buf[i]
        if 48 <= c <= 57:
            d = c - 48
            if digits < 19:
                if digits > 0 or d != 0:
                    mantissa = mantissa * np.uint64(10) + np.uint64(d)
                    digits += 1
                if point:
                    exp10 -= 1
            else:  # past the digits held: the integer part's scale the value
                digits += 1
                if not point:
                    exp10 += 1
            seen += 1
        elif c == 46 and not point:  # .
            point = True
        else:
            break
        i += 1
    if seen == 0:
        return np.nan, 2, i
    if i < e and (buf[i] == 101 or buf[i] == 69):  # e E
        i += 1
        sign = 1
        if i < e and (buf[i] == 43 or buf[i] == 45):
            sign = -1 if buf[i] == 45 else 1
            i += 1
        x = 0
        n_exp = 0
        while i < e and 48 <= buf[i] <= 57:
            if x < 100000:
                x = x * 10 + (buf[i] - 48)
            n_exp += 1
            i += 1
        if n_exp == 0:
            return np.nan, 2, i
        exp10 += sign * x
    if digits > 19 or mantissa > np.uint64(1 << 53):
        return np.nan, 1, i
    value = float(mantissa)
    if mantissa == 0:
        value = 0.0
    elif 0 <= exp10 <= 22:
        value = value * _POW10[exp10]
    elif -22 <= exp10 < 0:
        value = value / _POW10[-exp10]
    else:
        return np.nan, 1, i
    return (-value if negative else value), 0, i


@_inline
def _group_of(buf, qs, qe, qtable, qdata, qoffs):  # type: ignore[no-untyped-def]
    """The qrels group of the query id ``buf[qs:qe]`` (-1: not in the qrels)."""
    mask = np.uint64(qtable.shape[0] - 1)
    slot = _byte_hash(buf, qs, qe) & mask
    while qtable[slot] != -1:
        c = qtable[slot]
        if _same(buf, qs, qe, qdata, qoffs[c], qoffs[c + 1]):
            return c
        slot = (slot + np.uint64(1)) & mask
    return -1


@_inline
def _judged_table(lo, hi, dhash, j_pos, j_stamp, stamp):  # type: ignore[no-untyped-def]
    """The judgements ``lo:hi`` (one query's) in the open-addressing table ``j_pos`` (a slot
    whose ``j_stamp`` is ``stamp`` is taken): the mask of the table's part used."""
    width = 1
    while width < 2 * (hi - lo):
        width *= 2
    mask = np.uint64(width - 1)
    for p in range(lo, hi):
        slot = dhash[p] & mask
        while j_stamp[slot] == stamp:
            slot = (slot + np.uint64(1)) & mask
        j_stamp[slot] = stamp
        j_pos[slot] = p
    return mask


@_inline
def _judged(buf, ds, de, h, mask, j_pos, j_stamp, stamp, ddata, dstarts, dends, dhash):  # type: ignore[no-untyped-def]
    """The judgement of the document ``buf[ds:de]`` (hash ``h``) in :func:`_judged_table`'s
    table, -1 when it has none."""
    slot = h & mask
    while j_stamp[slot] == stamp:
        p = j_pos[slot]
        if dhash[p] == h and _same(buf, ds, de, ddata, dstarts[p], dends[p]):
            return p
        slot = (slot + np.uint64(1)) & mask
    return -1


@_inline
def _twice(buf, b_hash, b_ds, b_de, size, seen, base):  # type: ignore[no-untyped-def]
    """Whether a query's documents hold one twice. A slot of ``seen`` holding ``base + k``
    (line k of this query) is taken, a smaller value (an earlier query's) free."""
    mask = np.uint64(seen.shape[0] - 1)
    for k in range(size):
        slot = b_hash[k] & mask
        while seen[slot] >= base:
            o = seen[slot] - base
            if b_hash[o] == b_hash[k] and _same(buf, b_ds[o], b_de[o], buf, b_ds[k], b_de[k]):
                return True
            slot = (slot + np.uint64(1)) & mask
        seen[slot] = base + k
    return False


@_inline
def _first_time(buf, qs, qe, otable, odata, ooffs, counts):  # type: ignore[no-untyped-def]
    """Keep the id ``buf[qs:qe]`` of a run query without judgements: False when it was seen
    before (its lines apart) or the table is full. ``otable``: 0 free, else 1 + the query's
    number; ``counts[1]``, ``counts[2]``: the queries and bytes kept."""
    mask = np.uint64(otable.shape[0] - 1)
    slot = _byte_hash(buf, qs, qe) & mask
    while otable[slot] != 0:
        c = otable[slot] - 1
        if _same(buf, qs, qe, odata, ooffs[c], ooffs[c + 1]):
            return False
        slot = (slot + np.uint64(1)) & mask
    c = counts[1]
    used = counts[2]
    e = qe - qs
    if c + 1 >= ooffs.shape[0] or used + e > odata.shape[0]:
        return False
    odata[used : used + e] = buf[qs:qe]
    ooffs[c] = used
    ooffs[c + 1] = used + e
    otable[slot] = c + 1
    counts[1] = c + 1
    counts[2] = used + e
    return True


@_inline
def _rank_few(buf, b_score, b_ds, b_de, size, hits, hit_at, n_hits, rank):  # type: ignore[no-untyped-def]
    """Each judged document's rank: the documents of its query above it, and those tied with
    it whose id is greater, counted over the query's scores."""
    for t in range(n_hits):
        k = hit_at[t]
        s = b_score[k]
        above = 0
        for o in range(size):
            v = b_score[o]
            if v > s:
                above += 1
            elif v == s and o != k and _greater(buf, b_ds[o], b_de[o], b_ds[k], b_de[k]):
                above += 1
        rank[hits[t]] = above


@_inline
def _keep(state, r, at, n_hard, n_deferred, taken, n_seen):  # type: ignore[no-untyped-def]
    """:func:`_scan`'s ``state``: where to go on from and its counts."""
    state[0] = r
    state[1] = at
    state[2] = n_hard
    state[3] = n_deferred
    state[4] = taken
    state[5] = n_seen


@_jit
def _rank_many(buf, b_score, b_ds, b_de, size, hits, hit_at, n_hits, rank):  # type: ignore[no-untyped-def]
    """:func:`_scan`'s ranks of a query with many judged documents: the scores above each one
    counted in a sorted copy, its ties compared one by one (False: too many ties to compare,
    nothing written)."""
    ordered = np.sort(b_score[:size])
    work = 0
    for t in range(n_hits):
        s = b_score[hit_at[t]]
        lo = np.searchsorted(ordered, s, side="left")
        hi = np.searchsorted(ordered, s, side="right")
        if hi - lo > 1:
            work += size
    if work > 4 * size + (1 << 22):
        return False
    for t in range(n_hits):
        k = hit_at[t]
        s = b_score[k]
        hi = np.searchsorted(ordered, s, side="right")
        above = size - hi
        if hi - np.searchsorted(ordered, s, side="left") > 1:
            for o in range(size):
                if b_score[o] == s and o != k and _greater(buf, b_ds[o], b_de[o], b_ds[k], b_de[k]):
                    above += 1
        rank[hits[t]] = above
    return True


# _scan's arguments. With ``last_open``, the last query of the last range may go on past it:
# it is left for the next block and ``state[6]`` is where it starts (else the range's end).
# With ``hard_values`` empty (the first pass), a query holding a score for the full parser is
# not joined but listed in ``deferred`` (its bytes), and its scores' bytes in ``hard_starts`` /
# ``hard_ends``; otherwise (the second pass, on the deferred queries) those values are taken in
# order. ``tables``: the qrels' (``qtable, qdata, qoffs, gstarts, dhash, ddata, dstarts,
# dends``, :func:`scan_run`); ``other``: the run queries without judgements
# (:func:`_first_time`); ``listed``: ``hard_starts, hard_ends, deferred``; ``scratch``: a
# query's buffers (``b_score, b_ds, b_de, b_hash, hits, hit_at, seen``; ``seen``, -1 empty,
# twice as long as the others); ``j_tables``: ``j_pos, j_stamp``, at least twice the
# judgements of any query, a power of two. ``state`` (int64, 7): range, byte, scores for the
# full parser listed, queries deferred, full-parser values taken, queries begun (the stamp of
# ``j_stamp``), end. ``counts`` (int64, 5): run queries, run queries without qrels, bytes of
# their ids kept, the start and end of the last line's tag.
@_jit
def _scan(  # type: ignore[no-untyped-def]
    buf, words, ranges, last_open, hard_values, state, tables, other, counts, n_retrieved, rank,
    listed, scratch, j_tables,
):  # fmt: skip
    """Join the whole queries of ``buf[ranges[r, 0]:ranges[r, 1]]`` (whole lines), from the
    range ``state[0]`` and byte ``state[1]`` on: see :func:`scan_run` and the comment above.
    Returns 0 when done; 1 for a line or a query this reader does not read (the outputs are
    then to be dropped); 2 when a query has more lines than the query buffers (``state`` then
    holds where to go on from, with buffers twice as long)."""
    qtable, qdata, qoffs, gstarts, dhash, ddata, dstarts, dends = tables
    otable, odata, ooffs = other
    hard_starts, hard_ends, deferred = listed
    b_score, b_ds, b_de, b_hash, hits, hit_at, seen = scratch
    j_pos, j_stamp = j_tables
    first_pass = hard_values.shape[0] == 0
    cap = b_score.shape[0]
    n_hard = state[2]
    n_deferred = state[3]
    taken = state[4]
    n_seen = state[5]
    state[6] = ranges[ranges.shape[0] - 1, 1]
    for r in range(state[0], ranges.shape[0]):
        i = state[1] if r == state[0] else ranges[r, 0]
        stop = ranges[r, 1]
        while i < stop:
            # a query: its lines up to the first with another query id
            q_start = i
            qs = i
            qe = _special(words, i, stop)
            if qe == i or qe >= stop or buf[qe] != 32 or buf[qs] == 35:  # '#': a comment
                return _STOP
            g = _group_of(buf, qs, qe, qtable, qdata, qoffs)
            n_seen += 1  # the judged documents of the query, in a table of their own
            jmask = np.uint64(0)
            if g >= 0:
                jmask = _judged_table(gstarts[g], gstarts[g + 1], dhash, j_pos, j_stamp, n_seen)
            size = 0
            n_hits = 0
            hard_first = n_hard
            taken_first = taken
            e = qe - qs
            while i < stop:
                if not (i + e < stop and buf[i + e] == 32 and _equal_words(words, i, qs, e)):
                    break  # another query
                q0s = i + e + 1
                q0e = _special(words, q0s, stop)
                if q0e == q0s or q0e >= stop or buf[q0e] != 32:
                    return _STOP
                ds = q0e + 1
                de = _special(words, ds, stop)
                if de == ds or de >= stop or buf[de] != 32:
                    return _STOP
                rks = de + 1
                rke = _special(words, rks, stop)
                if rke == rks or rke >= stop or buf[rke] != 32:
                    return _STOP
                ss = rke + 1
                value, status, se = _score(buf, ss, stop)
                if status == 2 or se >= stop or buf[se] != 32:
                    return _STOP
                ts = se + 1
                te = _special(words, ts, stop)
                if te == ts or (te < stop and buf[te] != 10):  # a seventh field
                    return _STOP
                if size == cap:  # more lines than the buffers: again, with longer ones
                    _keep(state, r, q_start, hard_first, n_deferred, taken_first, n_seen)
                    return _GROW
                if status == 1:
                    if first_pass:
                        hard_starts[n_hard] = ss
                        hard_ends[n_hard] = se
                        n_hard += 1
                    else:
                        value = hard_values[taken]
                        taken += 1
                h = _word_hash(words, ds, de)
                b_score[size] = value
                b_ds[size] = ds
                b_de[size] = de
                b_hash[size] = h
                if g >= 0:
                    p = _judged(
                        buf, ds, de, h, jmask, j_pos, j_stamp, n_seen, ddata, dstarts, dends, dhash
                    )
                    if p >= 0:
                        hits[n_hits] = p
                        hit_at[n_hits] = size
                        n_hits += 1
                size += 1
                if first_pass:
                    counts[3] = ts
                    counts[4] = te
                i = te + 1
            if i >= stop and last_open and r == ranges.shape[0] - 1:
                state[6] = q_start  # the query may go on in the next block
                n_hard = hard_first
                break
            if n_hard > hard_first:
                deferred[n_deferred, 0] = q_start
                deferred[n_deferred, 1] = min(i, stop)
                n_deferred += 1
                continue
            if _twice(buf, b_hash, b_ds, b_de, size, seen, n_seen * cap):
                return _STOP
            # the query once in the run
            if g >= 0:
                if n_retrieved[g] != 0:
                    return _STOP
                n_retrieved[g] = size
            elif not _first_time(buf, qs, qe, otable, odata, ooffs, counts):
                return _STOP
            counts[0] += 1
            if n_hits > _FEW_HITS:
                if not _rank_many(buf, b_score, b_ds, b_de, size, hits, hit_at, n_hits, rank):
                    return _STOP
            else:
                _rank_few(buf, b_score, b_ds, b_de, size, hits, hit_at, n_hits, rank)
    _keep(state, state[0], state[1], n_hard, n_deferred, taken, n_seen)
    return _OK


@_jit
def _qrels_lines(buf, words, lo, hi, first, q_se, d_se, grade):  # type: ignore[no-untyped-def]
    """Split the lines of plain qrels ``qid iter docid grade`` in ``buf[lo:hi]`` (whole lines;
    single spaces, printable ASCII, grades ``-?[0-9]{1,18}``) into line ``first`` on of each
    output: its query's and document's bytes (start, end) and its grade. Returns the lines
    read, -1 at a line it does not read (a comment, an empty line, another layout)."""
    i = lo
    k = first
    while i < hi:
        qe = _special(words, i, hi)
        if qe == i or qe >= hi or buf[qe] != 32 or buf[i] == 35:  # '#': a comment
            return -1
        ie = _special(words, qe + 1, hi)
        if ie == qe + 1 or ie >= hi or buf[ie] != 32:
            return -1
        de = _special(words, ie + 1, hi)
        if de == ie + 1 or de >= hi or buf[de] != 32:
            return -1
        gs = de + 1
        ge = _special(words, gs, hi)
        if ge == gs or (ge < hi and buf[ge] != 10):  # a fifth field
            return -1
        j = gs + 1 if buf[gs] == 45 else gs  # '-'
        if j == ge or ge - j > 18:
            return -1
        value = 0
        while j < ge:
            c = buf[j]
            if c < 48 or c > 57:
                return -1
            value = value * 10 + (c - 48)
            j += 1
        q_se[k, 0] = i
        q_se[k, 1] = qe
        d_se[k, 0] = ie + 1
        d_se[k, 1] = de
        grade[k] = -value if buf[gs] == 45 else value
        k += 1
        i = ge + 1
    return k - first


@_jit
def _qrels_queries(buf, q_se):  # type: ignore[no-untyped-def]
    """The query of each line, numbered as first seen, and the distinct query ids joined by
    newlines with their line of first sight: ``(query, joined, first)``."""
    n = q_se.shape[0]
    size = 1
    while size < 2 * n + 2:
        size *= 2
    table = np.full(size, -1, dtype=np.int64)
    mask = np.uint64(size - 1)
    query = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    m = 0
    length = 0
    last = -1
    for k in range(n):
        s = q_se[k, 0]
        e = q_se[k, 1]
        if last >= 0 and _same(buf, s, e, buf, q_se[last, 0], q_se[last, 1]):
            query[k] = query[last]  # the usual case: the previous line's query
            last = k
            continue
        slot = _byte_hash(buf, s, e) & mask
        found = -1
        while table[slot] != -1:
            c = table[slot]
            if _same(buf, s, e, buf, q_se[first[c], 0], q_se[first[c], 1]):
                found = c
                break
            slot = (slot + np.uint64(1)) & mask
        if found < 0:
            found = m
            table[slot] = m
            first[m] = k
            m += 1
            length += e - s + 1
        query[k] = found
        last = k
    joined = np.empty(max(length - 1, 0), dtype=np.uint8)
    at = 0
    for c in range(m):
        s = q_se[first[c], 0]
        e = q_se[first[c], 1]
        if c:
            joined[at] = 10
            at += 1
        joined[at : at + e - s] = buf[s:e]
        at += e - s
    return query, joined, first[:m].copy()


@_jit
def _qrels_rows(group, n_groups):  # type: ignore[no-untyped-def]
    """The lines grouped by ``group`` (line order within a group): ``(rows, starts)``."""
    n = group.shape[0]
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    for k in range(n):
        starts[group[k] + 1] += 1
    for g in range(n_groups):
        starts[g + 1] += starts[g]
    fill = starts[:-1].copy()
    rows = np.empty(n, dtype=np.int64)
    for k in range(n):
        rows[fill[group[k]]] = k
        fill[group[k]] += 1
    return rows, starts


@_jit
def _qrels_docs(buf, d_se, lo, hi, data, offsets, hashes):  # type: ignore[no-untyped-def]
    """Lines ``lo:hi``: each document's bytes into ``data`` at ``offsets`` and their hash."""
    for k in range(lo, hi):
        o = offsets[k]
        s = d_se[k, 0]
        for j in range(d_se[k, 1] - s):
            data[o + j] = buf[s + j]
        hashes[k] = _byte_hash(data, o, offsets[k + 1])


@_jit
def _qrels_twice(data, offsets, hashes, rows, starts, g_lo, g_hi):  # type: ignore[no-untyped-def]
    """Whether a group of ``g_lo:g_hi`` holds a document twice."""
    width = 64
    seen = np.full(width, -1, dtype=np.int64)
    for g in range(g_lo, g_hi):
        lo = starts[g]
        hi = starts[g + 1]
        while width < 2 * (hi - lo):
            width *= 2
            seen = np.full(width, -1, dtype=np.int64)
        mask = np.uint64(width - 1)
        for j in range(lo, hi):  # a slot holding a row of this group's: taken; else free
            r = rows[j]
            slot = hashes[r] & mask
            while seen[slot] >= lo:
                o = rows[seen[slot]]
                if hashes[o] == hashes[r] and _same(
                    data, offsets[o], offsets[o + 1], data, offsets[r], offsets[r + 1]
                ):
                    return True
                slot = (slot + np.uint64(1)) & mask
            seen[slot] = j
    return False


def _cut_lines(buf: np.ndarray, n: int) -> list[int]:
    """``[0, ..., len(buf)]``: ``buf`` cut after a newline near each ``n``-th of it."""
    cuts = [0]
    for j in range(1, n):
        at = len(buf) * j // n
        newline = np.flatnonzero(buf[at : at + (1 << 20)] == 10)
        if not len(newline) or at + int(newline[0]) + 1 <= cuts[-1]:
            break
        cuts.append(at + int(newline[0]) + 1)
    return [*cuts, len(buf)]


def scan_qrels(path: str | os.PathLike[str]) -> ScannedQrels | None:
    """Read plain qrels and group them by query: the index :func:`scan_run` and
    :func:`ragnb.measures.kernel.prepare_ranked` read.

    Parameters
    ----------
    path : str or PathLike
        TREC qrels ``qid iter docid grade`` (not compressed).

    Returns
    -------
    ScannedQrels or None
        None for a file of another layout (see :func:`_qrels_lines`), an empty one, or one
        holding a (query, document) pair twice: the general readers read it and name what is
        wrong.

    Notes
    -----
    The index is the one :func:`ragnb.frames.index.index_qrels` builds from the frame the
    general readers read (``tests/test_runscan.py``), without building the frame: the file's
    bytes are split by compiled passes (a thread for each part of the file and of the queries,
    as many as the machine has usable cores), the queries numbered by a hash table and only
    the distinct query ids become Python strings (to be sorted).
    """
    size = os.path.getsize(path)
    if size == 0:
        return None
    buf, words = _block(size)
    with Path(path).open("rb", buffering=0) as f:
        have = 0
        while have < size and (got := f.readinto(buf[have:].data)):
            have += got
    if have != size:
        return None
    cuts = _cut_lines(buf, usable_cores() if size > PART_BYTES // 4 else 1)
    starts_at = [0]  # each part's first line
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        lines = int(np.count_nonzero(buf[lo:hi] == 10)) + int(buf[hi - 1] != 10)
        starts_at.append(starts_at[-1] + lines)
    n = starts_at[-1]
    q_se = np.empty((n, 2), dtype=np.int64)
    d_se = np.empty((n, 2), dtype=np.int64)
    grade = np.empty(n, dtype=np.int64)
    read = _threads(
        lambda j: int(
            _qrels_lines(buf, words, cuts[j], cuts[j + 1], starts_at[j], q_se, d_se, grade)
        ),
        len(cuts) - 1,
    )
    # a part reads every line, or stops at one (-1)
    if n == 0 or read != [b - a for a, b in zip(starts_at[:-1], starts_at[1:], strict=True)]:
        return None
    query, joined, _ = _qrels_queries(buf, q_se)
    ids = joined.tobytes().decode("ascii").split("\n")
    order = sorted(range(len(ids)), key=ids.__getitem__)
    group_of = np.empty(len(ids), dtype=np.int64)
    group_of[order] = np.arange(len(ids), dtype=np.int64)
    rows, starts = _qrels_rows(group_of[query], len(ids))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(d_se[:, 1] - d_se[:, 0], out=offsets[1:])
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    hashes = np.empty(n, dtype=np.uint64)
    parts = len(cuts) - 1

    def docs(j: int) -> None:
        _qrels_docs(buf, d_se, n * j // parts, n * (j + 1) // parts, data, offsets, hashes)

    def twice(j: int) -> bool:
        g_lo, g_hi = len(ids) * j // parts, len(ids) * (j + 1) // parts
        return bool(_qrels_twice(data, offsets, hashes, rows, starts, g_lo, g_hi))

    _threads(docs, parts)
    if any(_threads(twice, parts)):
        return None
    groups = Groups(np.array([ids[k] for k in order], dtype=object), rows, starts)
    index = grouped_qrels_index(groups, grade, data, offsets)
    return ScannedQrels(index, data, offsets, hashes)


def _threads(work: Callable[[int], _T], n: int) -> list[_T]:
    """``[work(0), ..., work(n - 1)]``, each on a thread of its own (one: this thread)."""
    if n == 1:
        return [work(0)]
    with ThreadPoolExecutor(n, thread_name_prefix="ragnb-scan") as pool:
        return list(pool.map(work, range(n)))


def _hard_values(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """The decimals ``buf[starts[i]:ends[i]]`` parsed by pyarrow (correctly rounded); None
    when one is not finite or not read."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = ends - starts
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    take = np.repeat(starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
    text = pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(buf[take]))
    try:
        values = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        return None
    return values if np.isfinite(values).all() else None


def _block(n: int, start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A block of ``n`` bytes (``start`` copied at its beginning) and the same memory as
    little-endian uint64 words, with two words more after it (read, never used, by
    :func:`_load8` and :func:`_special`)."""
    words = np.empty((n + 7) // 8 + 2, dtype="<u8")
    words[-2:] = 0
    buf = words.view(np.uint8)[:n]
    if start is not None:
        buf[: len(start)] = start
    return buf, words


def _query_buffers(n: int) -> tuple[np.ndarray, ...]:
    """:func:`_scan`'s buffers of one query of up to ``n`` lines (``n`` a power of two)."""
    ints = [np.empty(n, dtype=np.int64) for _ in range(4)]
    return (
        np.empty(n, dtype=np.float64),
        ints[0],
        ints[1],
        np.empty(n, dtype=np.uint64),
        ints[2],
        ints[3],
        np.full(2 * n, -1, dtype=np.int64),
    )


def _after_last_newline(buf: np.ndarray, have: int) -> int:
    """One past the last ``\\n`` of ``buf[:have]`` (0: none)."""
    step = 1 << 16
    hi = have
    while hi > 0:
        lo = max(0, hi - step)
        found = np.flatnonzero(buf[lo:hi] == 10)
        if len(found):
            return lo + int(found[-1]) + 1
        hi = lo
        step *= 4
    return 0


def scan_run(
    path: str | os.PathLike[str],
    qrels: QrelsIndex | ScannedQrels,
    *,
    block_bytes: int = BLOCK_BYTES,
    part_bytes: int = PART_BYTES,
) -> ScannedRun | None:
    """Join a plain TREC run file with indexed qrels as its bytes are read.

    Parameters
    ----------
    path : str or PathLike
        A TREC run ``qid Q0 docid rank score tag`` (not compressed).
    qrels : QrelsIndex or ScannedQrels
        The qrels (:func:`ragnb.frames.index.index_qrels`, :func:`scan_qrels`).
    block_bytes : int, default :data:`BLOCK_BYTES`
        Bytes read at a time (a longer query grows the block).
    part_bytes : int, default :data:`PART_BYTES`
        The smallest part of the file a thread reads.

    Returns
    -------
    ScannedRun or None
        The rank of every judgement and the documents of every judged query; None for a file
        this reader does not read (see the module's docstring), which the general readers then
        read.

    Notes
    -----
    The arrays are those :func:`ragnb.measures.prepare` builds from the file read by the
    general readers (``tests/test_runscan.py``). A file of more than :data:`PART_BYTES` is
    cut, at the start of a query, into as many parts as the machine has usable cores, each read
    by a thread (the compiled pass lets the GIL go). Memory: a block of the file (16 MB) per
    part, the hashes of the qrels' documents (8 bytes a judgement) and the outputs.
    """
    if isinstance(qrels, ScannedQrels):
        q = qrels.index.queries
        ddata, doffsets = qrels.data, qrels.offsets
    else:
        q = qrels.queries
        ddata, doffsets = qrels.docs.data, qrels.docs.offsets
    qids = [str(x).encode("utf-8") for x in q.ids.tolist()]
    qdata = np.frombuffer(b"".join(qids), dtype=np.uint8).copy()
    qoffs = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in qids], out=qoffs[1:])
    rows = q.rows
    dstarts = np.ascontiguousarray(doffsets[rows], dtype=np.int64)
    dends = np.ascontiguousarray(doffsets[rows + 1], dtype=np.int64)
    ddata = ddata if ddata.flags.writeable else ddata.copy()
    qtable = _query_table(qdata, qoffs)
    if isinstance(qrels, ScannedQrels):  # hashed as they were read
        dhash = qrels.hashes[rows]
    else:
        dhash = _doc_hashes(ddata, dstarts, dends)
    gstarts = np.array(q.starts, dtype=np.int64)
    tables = (qtable, qdata, qoffs, gstarts, dhash, ddata, dstarts, dends)
    width = 1 << max(6, int(2 * int(q.sizes.max())).bit_length())
    path = Path(path)
    parts = _parts(path, usable_cores(), part_bytes)

    def scanned(part: tuple[int, int]) -> _Part | None:
        return _scan_part(path, part[0], part[1], tables, len(rows), width, block_bytes)

    maybe = _threads(lambda j: scanned(parts[j]), len(parts))
    found = [part for part in maybe if part is not None]
    if len(found) < len(maybe):
        return None
    n_retrieved = found[0].n_retrieved
    rank = found[0].rank
    others: set[bytes] = set(found[0].others)
    for part in found[1:]:
        # a query in two parts: its lines apart, which the general readers read
        if bool(((n_retrieved > 0) & (part.n_retrieved > 0)).any()) or others & part.others:
            return None
        n_retrieved += part.n_retrieved
        np.maximum(rank, part.rank, out=rank)
        others |= part.others
    n_run = sum(part.n_queries for part in found)
    if n_run == 0:
        return None
    return ScannedRun(
        n_retrieved=n_retrieved,
        rank=rank,
        n_run_queries=n_run,
        n_run_queries_without_qrels=len(others),
        tag=found[-1].tag.decode("ascii"),
    )


@dataclass(frozen=True, eq=False)
class _Part:
    """What :func:`_scan_part` found in its part of the file."""

    n_retrieved: np.ndarray
    rank: np.ndarray
    n_queries: int
    others: set[bytes]
    tag: bytes


def _parts(path: Path, n: int, part_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges of ``path``, up to ``n``, each starting at a line whose query id is not the
    previous line's (the whole file when no such line is found near a cut)."""
    size = path.stat().st_size
    n = max(1, min(n, size // part_bytes))
    cuts = [0]
    with path.open("rb") as f:
        for j in range(1, n):
            f.seek(size * j // n)
            window = f.read(1 << 22)
            lines = window.split(b"\n")[1:-1]  # whole lines after the cut
            at = size * j // n + window.find(b"\n") + 1
            first = lines[0].split(b" ", 1)[0] if lines else None
            for line in lines:
                if line.split(b" ", 1)[0] != first:
                    break
                at += len(line) + 1
            else:
                return [(0, size)]  # one query longer than the window: not cut
            if at <= cuts[-1]:
                return [(0, size)]
            cuts.append(at)
    cuts.append(size)
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def _scan_part(
    path: Path,
    lo: int,
    hi: int,
    tables: tuple[np.ndarray, ...],
    n_rows: int,
    width: int,
    block_bytes: int,
) -> _Part | None:
    """:func:`_scan` over the bytes ``lo:hi`` of ``path`` (whole queries), block after block."""
    n_groups = len(tables[2]) - 1
    other = (
        np.zeros(2 * MAX_OTHER_QUERIES, dtype=np.int64),  # pages given as they are touched
        np.empty(MAX_OTHER_QUERY_BYTES, dtype=np.uint8),
        np.zeros(MAX_OTHER_QUERIES + 1, dtype=np.int64),
    )
    counts = np.zeros(5, dtype=np.int64)
    n_retrieved = np.zeros(n_groups, dtype=np.int64)
    rank = np.full(n_rows, -1, dtype=np.int64)
    j_tables = (np.empty(width, dtype=np.int64), np.zeros(width, dtype=np.int64))
    scratch = _query_buffers(1024)
    state = np.zeros(7, dtype=np.int64)
    no_values = np.empty(0, dtype=np.float64)
    buf, words = _block(min(block_bytes, hi - lo + 1))
    have = 0
    tag = b""

    def call(ranges: np.ndarray, last_open: bool, values: np.ndarray, listed: tuple) -> int:
        nonlocal scratch
        state[:5] = (0, ranges[0, 0], 0, 0, 0)
        while True:
            status = _scan(
                buf, words, ranges, last_open, values, state, tables, other, counts,
                n_retrieved, rank, listed, scratch, j_tables,
            )  # fmt: skip
            if status != _GROW:
                return int(status)
            scratch = _query_buffers(2 * len(scratch[0]))

    with path.open("rb", buffering=0) as f:
        f.seek(lo)
        left = hi - lo
        while True:
            while (
                have < len(buf)
                and left
                and (got := f.readinto(buf[have : have + min(left, len(buf) - have)].data))
            ):
                have += got
                left -= got
            eof = left == 0
            stop = have if eof else _after_last_newline(buf, have)
            if stop == 0 and not eof:  # no line end in the block: a longer line
                buf, words = _block(2 * len(buf), buf[:have])
                continue
            listed = (
                np.empty(stop // 8 + 1, dtype=np.int64),
                np.empty(stop // 8 + 1, dtype=np.int64),
                np.empty((stop // 8 + 1, 2), dtype=np.int64),
            )
            if stop and call(np.array([[0, stop]]), not eof, no_values, listed) != _OK:
                return None
            end, n_hard, n_deferred = int(state[6]), int(state[2]), int(state[3])
            if n_deferred:
                values = _hard_values(buf, listed[0][:n_hard], listed[1][:n_hard])
                if values is None:
                    return None
                if call(listed[2][:n_deferred].copy(), False, values, listed) != _OK:
                    return None
            if counts[4] > counts[3]:
                tag = buf[counts[3] : counts[4]].tobytes()
                counts[3:] = 0
            if eof:
                break
            if end == 0:  # one query longer than the block
                buf, words = _block(2 * len(buf), buf[:have])
                continue
            buf[: have - end] = buf[end:have]
            have -= end
    odata, ooffs = other[1], other[2]
    ids = {odata[ooffs[c] : ooffs[c + 1]].tobytes() for c in range(int(counts[1]))}
    return _Part(n_retrieved, rank, int(counts[0]), ids, tag)
