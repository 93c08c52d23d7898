"""A plain TREC run joined with indexed qrels as its bytes are read: the rank of every judgement.

trec_eval orders each query's documents by score, descending, ties by document id descending,
and its measures read only where the judged documents stand and how many documents each query
returns. So the rank of a judged document is one plus the documents of its query scored above
it, plus those tied with it whose id is greater (``strcmp``), and nothing else of the run is
needed: :func:`scan_run` reads the file in blocks, and one compiled pass over each block's bytes
splits the lines, looks each query and each document of a judged query up in hash tables of the
qrels, parses the scores, and at the end of each query counts the documents above its judged
ones. No id of the run becomes a Python or arrow string, none is sorted, and the file is never
held whole in memory.

It reads the common file only: every line six fields split by single spaces (``qid Q0 docid rank
score tag``, the rank not read, as trec_eval 10.0 does not), printable ASCII ids, each query's
lines consecutive, no (query, document) pair twice, scores in C's decimal syntax. On any other
line, or a query's lines apart, :func:`scan_run` returns None before it has changed anything,
and the caller reads the file with the general readers, which read it all and name what is
wrong (a bad line, a pair given twice). Scores are parsed exactly: a decimal of at most 19
significant digits whose value is an integer up to 2**53 times or over a power of ten up to
1e22 is one correctly rounded operation (Clinger's fast path, "How to read floating point
numbers accurately", PLDI 1990); any other is handed to pyarrow's correctly rounded parser
(``fast_float``), so every score is the double C's ``strtod`` (trec_eval's ``atof``) gives.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numba as nb
import numpy as np

from ragnb.core.machine import usable_cores
from ragnb.frames.index import QrelsIndex

__all__ = ["ScannedRun", "scan_run"]

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
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)
#: Each byte's kind in a line: 0 printable ASCII, 1 space, 2 newline, 3 any other.
_KIND = np.full(256, 3, dtype=np.uint8)
_KIND[33:127] = 0
_KIND[32] = 1
_KIND[10] = 2
#: 10**0 .. 10**22, each exactly a double.
_POW10 = np.array([10.0**k for k in range(23)])


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
def _fnv(buf, s, e):  # type: ignore[no-untyped-def]
    """FNV-1a, 64 bits, of ``buf[s:e]``."""
    h = _FNV_OFFSET
    for i in range(s, e):
        h = (h ^ np.uint64(buf[i])) * _FNV_PRIME
    return h


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
def build_tables(qdata, qoffs, ddata, dstarts, dends):  # type: ignore[no-untyped-def]
    """The qrels' query ids in an open-addressing table (int64 of a power-of-two size at least
    twice their number, -1: empty; each slot a query's group) and the hash of each judgement's
    document id (uint64): ``(qtable, dhash)``."""
    nq = qoffs.shape[0] - 1
    size = 1
    while size < 2 * nq + 2:
        size *= 2
    qtable = np.full(size, -1, dtype=np.int64)
    mask = np.uint64(size - 1)
    for g in range(nq):
        slot = _fnv(qdata, qoffs[g], qoffs[g + 1]) & mask
        while qtable[slot] != -1:
            slot = (slot + np.uint64(1)) & mask
        qtable[slot] = g
    dhash = np.empty(dstarts.shape[0], dtype=np.uint64)
    for p in range(dstarts.shape[0]):
        dhash[p] = _fnv(ddata, dstarts[p], dends[p])
    return qtable, dhash


@_inline
def _score(buf, s, e):  # type: ignore[no-untyped-def]
    """The decimal ``buf[s:e]``: ``(value, status)``; status 0 exact, 1 valid but to be parsed
    by a full parser (NaN returned), 2 not C's decimal syntax (``[+-]digits[.digits][e[+-]digits]``
    with a digit before the exponent)."""
    i = s
    negative = False
    if i < e and (buf[i] == 43 or buf[i] == 45):  # + -
        negative = buf[i] == 45
        i += 1
    mantissa = np.uint64(0)
    digits = 0  # significant digits held in mantissa
    exp10 = 0
    seen = 0
    while i < e and 48 <= buf[i] <= 57:
        d = buf[i] - 48
        if digits < 19:
            if digits > 0 or d != 0:
                mantissa = mantissa * np.uint64(10) + np.uint64(d)
                digits += 1
        else:
            digits += 1
            exp10 += 1
        seen += 1
        i += 1
    if i < e and buf[i] == 46:  # .
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            d = buf[i] - 48
            if digits < 19:
                if digits > 0 or d != 0:
                    mantissa = mantissa * np.uint64(10) + np.uint64(d)
                    digits += 1
                exp10 -= 1
            else:
                digits += 1
            seen += 1
            i += 1
    if seen == 0:
        return np.nan, 2
    if i < e and (buf[i] == 101 or buf[i] == 69):  # e E
        i += 1
        sign = 1
        if i < e and (buf[i] == 43 or buf[i] == 45):
            sign = -1 if buf[i] == 45 else 1
            i += 1
        if i == e:
            return np.nan, 2
        x = 0
        while i < e and 48 <= buf[i] <= 57:
            if x < 100000:
                x = x * 10 + (buf[i] - 48)
            i += 1
        exp10 += sign * x
    if i != e:
        return np.nan, 2
    if digits > 19 or mantissa > np.uint64(1 << 53):
        return np.nan, 1
    value = float(mantissa)
    if mantissa == 0:
        value = 0.0
    elif 0 <= exp10 <= 22:
        value = value * _POW10[exp10]
    elif -22 <= exp10 < 0:
        value = value / _POW10[-exp10]
    else:
        return np.nan, 1
    return (-value if negative else value), 0


@_inline
def _field(buf, i, hi):  # type: ignore[no-untyped-def]
    """The end of the field starting at ``i`` (printable ASCII up to a space, a newline or
    ``hi``), or -1 when it is empty or holds another byte."""
    s = i
    while i < hi:
        k = _KIND[buf[i]]
        if k != 0:
            if k == 3:
                return -1
            break
        i += 1
    return -1 if i == s else i


@_jit
def _rank_many(buf, b_score, b_ds, b_de, size, hits, hit_at, n_hits, rank):  # type: ignore[no-untyped-def]
    """:func:`scan`'s ranks of a query with many judged documents: the scores above each one
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


@_jit
def scan(  # type: ignore[no-untyped-def]
    buf,
    ranges,
    last_open,
    hard_values,
    state,
    qtable,
    qdata,
    qoffs,
    gstarts,
    dhash,
    ddata,
    dstarts,
    dends,
    otable,
    odata,
    ooffs,
    counts,
    n_retrieved,
    rank,
    hard_starts,
    hard_ends,
    deferred,
    b_score,
    b_ds,
    b_de,
    b_hash,
    hits,
    hit_at,
    seen,
    j_pos,
    j_stamp,
):
    """Join the whole queries of ``buf[ranges[r, 0]:ranges[r, 1]]`` (whole lines), from the
    range ``state[0]`` and byte ``state[1]`` on: see :func:`scan_run`.

    With ``last_open``, the last query of the last range may go on past it: it is left for the
    next block and ``state[6]`` is where it starts (else the range's end). With ``hard_values``
    empty (the first pass), a query holding a score for the full parser is not joined but
    listed in ``deferred`` (its bytes), and its scores' bytes in ``hard_starts`` /
    ``hard_ends``; otherwise (the second pass, on the deferred queries) those values are taken
    in order. Returns 0 when done; 1 for a line or a query this reader does not read (the
    outputs are then to be dropped); 2 when a query has more lines than the query buffers
    (``b_*``, ``hits``, ``hit_at``: ``state`` then holds where to go on from, with buffers twice
    as long).

    ``state`` (int64, 7): range, byte, scores for the full parser listed, queries deferred,
    full-parser values taken, queries begun (the stamp of ``j_stamp``), end. ``counts`` (int64,
    5): run queries, run queries without qrels, bytes of their ids kept, the start and end of
    the last line's tag. ``seen`` (-1: empty) has twice the query buffers' length, ``j_pos``
    and ``j_stamp`` at least twice the judgements of any query, both powers of two.
    """
    first_pass = hard_values.shape[0] == 0
    qmask = np.uint64(qtable.shape[0] - 1)
    omask = np.uint64(otable.shape[0] - 1)
    smask = np.uint64(seen.shape[0] - 1)
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
            qe = _field(buf, i, stop)
            if qe < 0 or qe >= stop or buf[qe] != 32 or buf[qs] == 35:  # '#': a comment
                return _STOP
            g = -1
            slot = _fnv(buf, qs, qe) & qmask
            while qtable[slot] != -1:
                c = qtable[slot]
                if _same(buf, qs, qe, qdata, qoffs[c], qoffs[c + 1]):
                    g = c
                    break
                slot = (slot + np.uint64(1)) & qmask
            n_seen += 1  # the judged documents of the query, in a table of their own
            jmask = np.uint64(0)
            if g >= 0:
                lo = gstarts[g]
                hi = gstarts[g + 1]
                width = 1
                while width < 2 * (hi - lo):
                    width *= 2
                jmask = np.uint64(width - 1)
                for p in range(lo, hi):
                    slot = dhash[p] & jmask
                    while j_stamp[slot] == n_seen:
                        slot = (slot + np.uint64(1)) & jmask
                    j_stamp[slot] = n_seen
                    j_pos[slot] = p
            size = 0
            n_hits = 0
            hard_first = n_hard
            taken_first = taken
            e = qe - qs
            while i < stop:
                if not (i + e < stop and buf[i + e] == 32 and _same(buf, i, i + e, buf, qs, qe)):
                    break  # another query
                # Q0, docid, rank, score, tag, each ended by one space, the tag by the line's end
                q0e = _field(buf, i + e + 1, stop)
                if q0e < 0 or q0e >= stop or buf[q0e] != 32:
                    return _STOP
                ds = q0e + 1
                de = _field(buf, ds, stop)
                if de < 0 or de >= stop or buf[de] != 32:
                    return _STOP
                rke = _field(buf, de + 1, stop)
                if rke < 0 or rke >= stop or buf[rke] != 32:
                    return _STOP
                ss = rke + 1
                se = _field(buf, ss, stop)
                if se < 0 or se >= stop or buf[se] != 32:
                    return _STOP
                ts = se + 1
                te = _field(buf, ts, stop)
                if te < 0 or (te < stop and buf[te] != 10):  # a seventh field
                    return _STOP
                if size == cap:  # more lines than the buffers: again, with longer ones
                    state[0] = r
                    state[1] = q_start
                    state[2] = hard_first
                    state[3] = n_deferred
                    state[4] = taken_first
                    state[5] = n_seen
                    return _GROW
                value, status = _score(buf, ss, se)
                if status == 2:
                    return _STOP
                if status == 1:
                    if first_pass:
                        hard_starts[n_hard] = ss
                        hard_ends[n_hard] = se
                        n_hard += 1
                    else:
                        value = hard_values[taken]
                        taken += 1
                h = _fnv(buf, ds, de)
                b_score[size] = value
                b_ds[size] = ds
                b_de[size] = de
                b_hash[size] = h
                if g >= 0:
                    slot = h & jmask
                    while j_stamp[slot] == n_seen:
                        p = j_pos[slot]
                        if dhash[p] == h and _same(buf, ds, de, ddata, dstarts[p], dends[p]):
                            hits[n_hits] = p
                            hit_at[n_hits] = size
                            n_hits += 1
                            break
                        slot = (slot + np.uint64(1)) & jmask
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
            # no document twice in the query: a slot of ``seen`` holds base + k for line k of
            # this query, and any smaller value (an earlier query's) is free
            base = n_seen * cap
            for k in range(size):
                slot = b_hash[k] & smask
                while seen[slot] >= base:
                    o = seen[slot] - base
                    if b_hash[o] == b_hash[k] and _same(
                        buf, b_ds[o], b_de[o], buf, b_ds[k], b_de[k]
                    ):
                        return _STOP
                    slot = (slot + np.uint64(1)) & smask
                seen[slot] = base + k
            # the query once in the run
            if g >= 0:
                if n_retrieved[g] != 0:
                    return _STOP
                n_retrieved[g] = size
            else:
                h = _fnv(buf, qs, qe)
                slot = h & omask
                while otable[slot] != -1:
                    c = otable[slot]
                    if _same(buf, qs, qe, odata, ooffs[c], ooffs[c + 1]):
                        return _STOP
                    slot = (slot + np.uint64(1)) & omask
                c = counts[1]
                used = counts[2]
                if c + 1 >= ooffs.shape[0] or used + e > odata.shape[0]:
                    return _STOP
                odata[used : used + e] = buf[qs:qe]
                ooffs[c] = used
                ooffs[c + 1] = used + e
                otable[slot] = c
                counts[1] = c + 1
                counts[2] = used + e
            counts[0] += 1
            # each judged document's rank: the documents above it, and those tied with it
            # whose id is greater
            if n_hits > _FEW_HITS:
                if not _rank_many(buf, b_score, b_ds, b_de, size, hits, hit_at, n_hits, rank):
                    return _STOP
                continue
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
    state[2] = n_hard
    state[3] = n_deferred
    state[4] = taken
    state[5] = n_seen
    return _OK


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


def _query_buffers(n: int) -> tuple[np.ndarray, ...]:
    """:func:`scan`'s buffers of one query of up to ``n`` lines (``n`` a power of two)."""
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
    qrels: QrelsIndex,
    *,
    block_bytes: int = BLOCK_BYTES,
    part_bytes: int = PART_BYTES,
) -> ScannedRun | None:
    """Join a plain TREC run file with indexed qrels as its bytes are read.

    Parameters
    ----------
    path : str or PathLike
        A TREC run ``qid Q0 docid rank score tag`` (not compressed).
    qrels : QrelsIndex
        The qrels (:func:`ragnb.frames.index.index_qrels`).
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
    q = qrels.queries
    qids = [str(x).encode("utf-8") for x in q.ids.tolist()]
    qdata = np.frombuffer(b"".join(qids), dtype=np.uint8).copy()
    qoffs = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in qids], out=qoffs[1:])
    docs, _ = qrels.sort_docs()
    rows = q.rows
    dstarts = docs.offsets[rows]
    dends = docs.offsets[rows + 1]
    ddata = docs.data if docs.data.flags.writeable else docs.data.copy()
    qtable, dhash = build_tables(qdata, qoffs, ddata, dstarts, dends)
    gstarts = np.array(q.starts, dtype=np.int64)
    tables = (qtable, qdata, qoffs, gstarts, dhash, ddata, dstarts, dends)
    width = 1 << max(6, int(2 * int(q.sizes.max())).bit_length())
    path = Path(path)
    parts = _parts(path, usable_cores(), part_bytes)

    def scanned(part: tuple[int, int]) -> _Part | None:
        return _scan_part(path, part[0], part[1], tables, len(rows), width, block_bytes)

    if len(parts) == 1:
        maybe = [scanned(parts[0])]
    else:
        with ThreadPoolExecutor(len(parts), thread_name_prefix="ragnb-scan") as pool:
            maybe = list(pool.map(scanned, parts))
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
    """:func:`scan` over the bytes ``lo:hi`` of ``path`` (whole queries), block after block."""
    n_groups = len(tables[2]) - 1
    other = (
        np.full(2 * MAX_OTHER_QUERIES, -1, dtype=np.int64),
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
    buf = np.empty(min(block_bytes, hi - lo + 1), dtype=np.uint8)
    have = 0
    tag = b""

    def call(ranges: np.ndarray, last_open: bool, values: np.ndarray, listed: tuple) -> int:
        nonlocal scratch
        state[:5] = (0, ranges[0, 0], 0, 0, 0)
        while True:
            status = scan(
                buf, ranges, last_open, values, state, *tables, *other, counts, n_retrieved,
                rank, *listed, *scratch, *j_tables,
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
                buf = np.concatenate((buf, np.empty(len(buf), dtype=np.uint8)))
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
                buf = np.concatenate((buf, np.empty(len(buf), dtype=np.uint8)))
                continue
            buf[: have - end] = buf[end:have]
            have -= end
    odata, ooffs = other[1], other[2]
    ids = {odata[ooffs[c] : ooffs[c + 1]].tobytes() for c in range(int(counts[1]))}
    return _Part(n_retrieved, rank, int(counts[0]), ids, tag)
