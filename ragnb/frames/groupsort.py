"""Compiled per-query kernels: sort ids as byte strings, order runs, join runs with qrels.

Used by :mod:`ragnb.frames.index` (:func:`ragnb.frames.index.kernels`), which imports it on first
use (numba costs about half a second to import and as much again to load the compiled code
cached on disk); inputs of a few thousand rows take a plain-Python copy of this module instead
(:data:`PLAIN_NAME`), with the same results.

Strings are held as one UTF-8 byte buffer ``data`` (uint8) and ``offsets`` (int64, shape
(n + 1,)): string ``i`` is ``data[offsets[i]:offsets[i + 1]]``. Comparing UTF-8 bytes
lexicographically is comparing code points, hence Python's ``str`` order and trec_eval's
``strcmp``. When all strings of a column share their first ``skip`` bytes (``<dbpedia:``...),
``prefix[i]`` holds the next 8 bytes of string ``i`` big-endian, zero-padded, so that most
comparisons are one integer comparison; the rest compare bytes from ``skip`` on.

Rows are grouped by query: ``rows`` lists row numbers, group ``g`` being
``rows[starts[g]:starts[g + 1]]`` in row order. The work is per group and cache-local (a query's
hundred documents), which is what makes it fast: no hash table over millions of strings, no sort of
ten million strings. A Python thread pool runs disjoint ranges of groups (the kernels release the
GIL), see :func:`run_chunks`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ragnb.core.machine import usable_cores

#: The name of this module's plain-Python copy (:func:`ragnb.frames.index.kernels` loads it for
#: small inputs): it never imports numba, whose start costs more than a few thousand rows.
PLAIN_NAME = "ragnb.frames.groupsort_plain"

nb: Any = None
if __name__ != PLAIN_NAME:
    try:
        import numba as nb
    except ModuleNotFoundError:  # without the fast extra the kernels run as plain Python
        nb = None

__all__ = [
    "COMPILED",
    "PLAIN_NAME",
    "common_prefix",
    "prefixes",
    "doc_order",
    "rank_order",
    "join_grades",
    "coded_join",
    "string_join",
    "count_above",
    "tied_positions",
    "run_chunks",
]


#: True when numba compiles the kernels; False when they run as plain Python (same results,
#: about a hundred times slower: fine for thousands of rows, slow for millions).
COMPILED = nb is not None


def _jit(**options: object) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """numba's ``njit`` (cached on disk, releasing the GIL), or nothing without numba."""
    if nb is None:
        return lambda f: f
    return nb.njit(cache=True, nogil=True, **options)  # type: ignore[no-any-return]


@_jit()
def common_prefix(data: np.ndarray, offsets: np.ndarray) -> int:
    """Number of leading bytes all strings share (0 for no strings)."""
    n = offsets.shape[0] - 1
    if n == 0:
        return 0
    s0 = offsets[0]
    common = offsets[1] - s0
    for i in range(1, n):
        s = offsets[i]
        m = min(common, offsets[i + 1] - s)
        j = 0
        while j < m and data[s + j] == data[s0 + j]:
            j += 1
        common = j
        if common == 0:
            break
    return common


@_jit()
def prefixes(data: np.ndarray, offsets: np.ndarray, skip: int) -> np.ndarray:
    """Bytes ``skip .. skip + 7`` of each string as a big-endian uint64, zero-padded; (n,)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        s = offsets[i] + skip
        e = offsets[i + 1]
        k = np.uint64(0)
        for j in range(8):
            k = k << np.uint64(8)
            if s + j < e:
                k = k | np.uint64(data[s + j])
        out[i] = k
    return out


@_jit()
def _tail_cmp(da, sa, ea, db, sb, eb):
    """-1, 0, 1 as bytes ``da[sa:ea]`` are <, ==, > bytes ``db[sb:eb]``."""
    la = ea - sa
    lb = eb - sb
    for i in range(min(la, lb)):
        ca = da[sa + i]
        cb = db[sb + i]
        if ca != cb:
            return -1 if ca < cb else 1
    if la == lb:
        return 0
    return -1 if la < lb else 1


@_jit(inline="always")
def _copy_run(src_i, src_k, dst_i, dst_k, lo, hi, k):
    """Copy ``src[lo:hi]`` (indices and keys) to ``dst`` from ``k`` on; the next free ``k``.

    The rest of a merge, once one side is used up: one call per merge, not per element.
    """
    for p in range(lo, hi):
        dst_i[k] = src_i[p]
        dst_k[k] = src_k[p]
        k += 1
    return k


# Comparisons are written out in the loops: the keys settle almost all of them, and a call
# passing several arrays costs more than the comparison (numba reference counting).


@_jit()
def _merge_sort(idx, key, data, offsets, skip, by_string):
    """Stable merge sort of ``idx`` in place by ``key`` ascending, ``key`` moved along.

    With ``by_string``, equal keys are ordered by the bytes from ``skip`` on of strings
    ``idx[i]`` (``key`` holding the bytes before them, see :func:`prefixes`). Insertion sort of
    runs of 16, then merges of doubling width between ``idx``/``key`` and a scratch pair.
    """
    m = idx.shape[0]
    run = 16
    for lo in range(0, m, run):
        hi = min(lo + run, m)
        for i in range(lo + 1, hi):
            v = idx[i]
            kv = key[i]
            j = i - 1
            while j >= lo:  # shift while ``v`` sorts strictly before ``idx[j]``
                kj = key[j]
                if not kv < kj:
                    if kv != kj or not by_string:
                        break
                    u = idx[j]
                    su = offsets[u] + skip
                    sv = offsets[v] + skip
                    if _tail_cmp(data, su, offsets[u + 1], data, sv, offsets[v + 1]) <= 0:
                        break
                idx[j + 1] = idx[j]
                key[j + 1] = kj
                j -= 1
            idx[j + 1] = v
            key[j + 1] = kv
    if m <= run:
        return
    src_i = idx
    src_k = key
    dst_i = np.empty_like(idx)
    dst_k = np.empty_like(key)
    in_tmp = False
    width = run
    while width < m:
        for lo in range(0, m, 2 * width):
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                ki = src_k[i]
                kj = src_k[j]
                take_right = kj < ki
                if by_string and kj == ki:
                    a = src_i[j]
                    b = src_i[i]
                    sa = offsets[a] + skip
                    sb = offsets[b] + skip
                    take_right = _tail_cmp(data, sa, offsets[a + 1], data, sb, offsets[b + 1]) < 0
                if take_right:
                    dst_i[k] = src_i[j]
                    dst_k[k] = kj
                    j += 1
                else:
                    dst_i[k] = src_i[i]
                    dst_k[k] = ki
                    i += 1
                k += 1
            k = _copy_run(src_i, src_k, dst_i, dst_k, i, mid, k)
            _copy_run(src_i, src_k, dst_i, dst_k, j, hi, k)
        src_i, dst_i = dst_i, src_i
        src_k, dst_k = dst_k, src_k
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        idx[:] = src_i
        key[:] = src_k


@_jit()
def _sort_by_string(idx, data, offsets, prefix, skip):
    """Stable merge sort of ``idx`` (string numbers) in place by string."""
    key = np.empty(idx.shape[0], dtype=np.uint64)
    for i in range(idx.shape[0]):
        key[i] = prefix[idx[i]]
    _merge_sort(idx, key, data, offsets, skip, True)


@_jit()
def doc_order(rows, starts, data, offsets, prefix, skip, out, dup, g_lo, g_hi):
    """Sort each group's rows by their string ascending; flag groups holding a string twice.

    For groups ``g_lo <= g < g_hi`` writes ``out[starts[g]:starts[g + 1]]`` (the group's rows by
    string) and ``dup[g]`` (a row whose string repeats in the group, else -1). ``prefix`` holds
    bytes ``skip ..`` of each string (all strings share their first ``skip`` bytes).
    """
    for g in range(g_lo, g_hi):
        s = starts[g]
        e = starts[g + 1]
        seg = out[s:e]
        seg[:] = rows[s:e]
        _sort_by_string(seg, data, offsets, prefix, skip)
        dup[g] = -1
        for i in range(1, e - s):
            a = seg[i - 1]
            b = seg[i]
            if prefix[a] == prefix[b] and (
                _tail_cmp(
                    data, offsets[a] + skip, offsets[a + 1], data, offsets[b] + skip, offsets[b + 1]
                )
                == 0
            ):
                dup[g] = b
                break


@_jit()
def _sort_by_key(key, idx):
    """Stable merge sort of ``key`` (float64) ascending in place, ``idx`` moved along."""
    no_strings = np.zeros(1, dtype=np.int64)
    _merge_sort(idx, key, np.empty(0, dtype=np.uint8), no_strings, 0, False)


@_jit()
def _sorted_by_file_key(by_key, keys, ordered, has_file_key):
    """Sort the rows ``by_key`` by their file keys ``keys`` (stable: ties by row) when
    ``has_file_key``; True when that order differs from ``ordered`` (the score order)."""
    if not has_file_key:
        return False
    _sort_by_key(keys, by_key)
    for t in range(len(by_key)):
        if by_key[t] != ordered[t]:
            return True
    return False


@_jit()
def _by_score(by_id, score):
    """Rows in trec_eval's order, score descending and ties by id descending, from the rows
    ``by_id`` sorted by id ascending (reversed, then a stable sort on minus the score)."""
    m = by_id.shape[0]
    out = np.empty(m, dtype=np.int64)
    keys = np.empty(m, dtype=np.float64)
    for i in range(m):
        r = by_id[m - 1 - i]
        out[i] = r
        keys[i] = -score[r]
    _sort_by_key(keys, out)
    return out


@_jit()
def rank_order(
    by_doc, rows, starts, score, file_key, has_file_key, by_file, out, disagree, g_lo, g_hi
):
    """Evaluation order of each group's rows, and whether the file order disagrees with it.

    The score order is score descending, ties by string descending (``by_doc`` reversed, then a
    stable sort on minus the score). The file order is ``file_key`` ascending, ties by row
    (``rows`` is in row order; a stable sort); without a file key it is row order. For groups
    ``g_lo <= g < g_hi``, ``out`` receives the file order when ``by_file`` is set, else the score
    order; ``disagree[g]`` is set when a file key is given and the two orders differ.
    """
    for g in range(g_lo, g_hi):
        s = starts[g]
        e = starts[g + 1]
        m = e - s
        by_score = _by_score(by_doc[s:e], score)
        if has_file_key:
            keys = np.empty(m, dtype=np.float64)
            by_key = np.empty(m, dtype=np.int64)
            for i in range(m):
                r = rows[s + i]
                by_key[i] = r
                keys[i] = file_key[r]
            disagree[g] = _sorted_by_file_key(by_key, keys, by_score, True)
            if by_file:
                out[s:e] = by_key
        elif by_file:
            out[s:e] = rows[s:e]
        if not by_file:
            out[s:e] = by_score


@_jit()
def join_grades(
    r_by_doc,
    r_order,
    r_starts,
    r_data,
    r_off,
    r_pre,
    row_of_group,
    q_by_doc,
    q_starts,
    q_data,
    q_off,
    q_pre,
    q_grade,
    skip,
    rank_of_row,
    grades,
    judged,
    filled,
    g_lo,
    g_hi,
):
    """Scatter each run group's top ranks, joined with its query's judgements, into the arrays.

    Run group ``g`` (rows by string ``r_by_doc``, in evaluation order ``r_order``) belongs to array
    row ``i = row_of_group[g]`` (-1: no qrels, skipped) and to qrels group ``i`` (rows by string
    ``q_by_doc``, grade ``q_grade[row]``). The first ``grades.shape[1]`` ranks are written to row
    ``i`` of ``grades``, ``judged`` and ``filled``. Both prefix arrays start at byte ``skip``, a
    length all strings of both sides share. ``rank_of_row`` is scratch space, one int64 per run
    row.
    """
    width = grades.shape[1]
    for g in range(g_lo, g_hi):
        i = row_of_group[g]
        if i < 0:
            continue
        s = r_starts[g]
        e = r_starts[g + 1]
        for p in range(e - s):
            rank_of_row[r_order[s + p]] = p
        for p in range(min(e - s, width)):
            filled[i, p] = True
        # Merge the two string-sorted lists; a run row found among the judgements is judged.
        a = s
        b = q_starts[i]
        qe = q_starts[i + 1]
        while a < e and b < qe:
            ra = r_by_doc[a]
            qb = q_by_doc[b]
            x = r_pre[ra]
            y = q_pre[qb]
            if x != y:
                c = -1 if x < y else 1
            else:
                c = _tail_cmp(
                    r_data, r_off[ra] + skip, r_off[ra + 1], q_data, q_off[qb] + skip, q_off[qb + 1]
                )
            if c < 0:
                a += 1
            elif c > 0:
                b += 1
            else:
                p = rank_of_row[r_by_doc[a]]
                if p < width:
                    judged[i, p] = True
                    grades[i, p] = q_grade[q_by_doc[b]]
                a += 1
                b += 1


@_jit()
def coded_join(
    first,
    size,
    rows,
    indirect,
    codes,
    score,
    file_key,
    has_file_key,
    by_file,
    row_of_group,
    q_codes,
    q_grade,
    q_starts,
    grades,
    judged,
    filled,
    disagree,
    dup,
    g_lo,
    g_hi,
):
    """Order each query of a dictionary-coded run and scatter its top ranks, joined with the
    query's judgements, into the arrays (:func:`ragnb.frames.index.join_coded`).

    Query ``g`` holds rows ``rows[first[g]:first[g] + size[g]]`` (``indirect``) or
    ``first[g] .. first[g] + size[g] - 1``; ``codes[row]`` is the rank of its document id among
    the run's distinct ids, so codes compare as the ids do. Its rows are sorted by code
    (``dup[g]``: a row whose id repeats, else left alone), then put in evaluation order as
    :func:`rank_order` does (score descending, ties by id descending; or the file key, ties by
    row; ``disagree[g]`` when the two differ). Array row ``i = row_of_group[g]`` (-1: skipped)
    receives the first ``grades.shape[1]`` ranks; a document is judged when its code is among
    ``q_codes[q_starts[i]:q_starts[i + 1]]`` (ascending), with grade ``q_grade`` there.
    """
    width = grades.shape[1]
    for g in range(g_lo, g_hi):
        m = size[g]
        f = first[g]
        by_id = np.empty(m, dtype=np.int64)
        keys = np.empty(m, dtype=np.float64)
        for t in range(m):
            r = rows[f + t] if indirect else f + t
            by_id[t] = r
            keys[t] = codes[r]
        _sort_by_key(keys, by_id)
        for t in range(1, m):
            if keys[t] == keys[t - 1]:
                dup[g] = by_id[t]
                break
        ordered = _by_score(by_id, score)
        if has_file_key or by_file:
            by_key = np.empty(m, dtype=np.int64)
            for t in range(m):
                r = rows[f + t] if indirect else f + t
                by_key[t] = r
                keys[t] = file_key[r] if has_file_key else t
            if _sorted_by_file_key(by_key, keys, ordered, has_file_key):
                disagree[g] = True
            if by_file:
                ordered = by_key
        i = row_of_group[g]
        if i < 0:
            continue
        qs = q_starts[i]
        qe = q_starts[i + 1]
        for p in range(min(m, width)):
            filled[i, p] = True
            c = codes[ordered[p]]
            lo = qs
            hi = qe
            while lo < hi:
                mid = (lo + hi) // 2
                if q_codes[mid] < c:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < qe and q_codes[lo] == c:
                judged[i, p] = True
                grades[i, p] = q_grade[lo]


# ----------------------------------------------------------- runs whose ids are strings, in chunks
# A run read by pyarrow holds its document ids as strings in chunks of about 100,000 rows. Each
# query whose rows lie in one chunk is ordered, checked and joined on that chunk's buffers, by
# :func:`string_join`: no code per row and no dictionary of the run's ids. Equal strings are found
# by a hash table per query (a 55-bit polynomial hash, then the bytes compared); strings are
# compared byte by byte only where two scores tie.

#: :func:`_hash` keeps 55 bits: ``h * 251 + byte`` stays below 2**63 (no overflow, compiled or not).
_HASH_MASK = (1 << 55) - 1


@_jit(inline="always")
def _hash(data, s, e):
    """A 55-bit hash of the bytes ``data[s:e]``: equal bytes, equal hash (a filter before the
    bytes are compared)."""
    h = 0
    for j in range(s, e):
        h = (h * 251 + int(data[j])) & _HASH_MASK
    return h


@_jit(inline="always")
def _slot(h, mask):
    """The first slot of hash ``h`` in a table of ``mask + 1`` slots (its high bits mixed in)."""
    return (h ^ (h >> 23)) & mask


@_jit(inline="always")
def _table_mask(n):
    """The slot mask of an open-addressing table for ``n`` keys: a power of two >= 2n, minus 1."""
    c = 16
    while c < 2 * n:
        c *= 2
    return c - 1


@_jit()
def _repeated(data, offsets, lo, m, hashes, t_key, t_row, t_gen, gen):
    """The first string of ``lo .. lo + m - 1`` whose bytes equal an earlier one's, else -1;
    ``hashes[t]`` receives the hash of string ``lo + t``. The table slots stamped ``gen`` are
    this call's."""
    mask = _table_mask(m)
    found = -1
    for t in range(m):
        a = lo + t
        h = _hash(data, offsets[a], offsets[a + 1])
        hashes[t] = h
        slot = _slot(h, mask)
        while t_gen[slot] == gen:
            b = t_row[slot]
            if t_key[slot] == h and found < 0:
                if (
                    _tail_cmp(data, offsets[a], offsets[a + 1], data, offsets[b], offsets[b + 1])
                    == 0
                ):
                    found = a
            slot = (slot + 1) & mask
        t_gen[slot] = gen
        t_key[slot] = h
        t_row[slot] = a
    return found


@_jit()
def _descending_strings(idx, data, offsets):
    """Sort the string numbers ``idx`` in place by their bytes, descending."""
    m = idx.shape[0]
    key = np.empty(m, dtype=np.uint64)
    for i in range(m):
        s = offsets[idx[i]]
        e = offsets[idx[i] + 1]
        k = np.uint64(0)
        for j in range(8):
            k = k << np.uint64(8)
            if s + j < e:
                k = k | np.uint64(data[s + j])
        key[i] = k
    _merge_sort(idx, key, data, offsets, 0, True)
    idx[:] = idx[::-1].copy()


@_jit()
def _string_score_order(data, offsets, lo, m, score, base):
    """Strings ``lo .. lo + m - 1`` (rows ``base + lo ..``) in trec_eval's order: score
    descending, ties by bytes descending. Rows already by score descending are not sorted."""
    idx = np.empty(m, dtype=np.int64)
    by_score = True
    for t in range(m):
        idx[t] = lo + t
        if t and score[base + lo + t] > score[base + lo + t - 1]:
            by_score = False
    if not by_score:
        keys = np.empty(m, dtype=np.float64)
        for t in range(m):
            keys[t] = -score[base + idx[t]]
        _sort_by_key(keys, idx)
    t = 0
    while t < m:
        u = t + 1
        x = score[base + idx[t]]
        while u < m and score[base + idx[u]] == x:
            u += 1
        if u - t > 1:
            _descending_strings(idx[t:u], data, offsets)
        t = u
    return idx


@_jit()
def _join_strings(i, ordered, lo, hashes, data, offsets, q, t_key, t_row, t_gen, gen, out):
    """Array row ``i``'s cells from the strings ``ordered`` (evaluation order; ``hashes[a - lo]``
    the hash of string ``a``) and query ``i``'s judgements ``q`` = (rows, starts, data, offsets,
    grade of each row); ``out`` = (grades, judged, filled)."""
    q_rows, q_starts, q_data, q_off, q_grade = q
    grades, judged, filled = out
    qs = q_starts[i]
    qe = q_starts[i + 1]
    mask = _table_mask(qe - qs)
    for j in range(qs, qe):
        r = q_rows[j]
        h = _hash(q_data, q_off[r], q_off[r + 1])
        slot = _slot(h, mask)
        while t_gen[slot] == gen:
            slot = (slot + 1) & mask
        t_gen[slot] = gen
        t_key[slot] = h
        t_row[slot] = r
    for p in range(min(ordered.shape[0], grades.shape[1])):
        filled[i, p] = True
        a = ordered[p]
        h = hashes[a - lo]
        slot = _slot(h, mask)
        while t_gen[slot] == gen:
            r = t_row[slot]
            if t_key[slot] == h and (
                _tail_cmp(data, offsets[a], offsets[a + 1], q_data, q_off[r], q_off[r + 1]) == 0
            ):
                judged[i, p] = True
                grades[i, p] = q_grade[r]
                break
            slot = (slot + 1) & mask


@_jit()
def string_join(data, offsets, base, groups, first, size, keys, flags, row_of_group, q, out):
    """Order, check and join the queries ``groups`` of a run whose document ids are strings
    ``data``/``offsets`` (int64; string ``a`` is row ``base + a``), as :func:`coded_join`
    does for codes (:func:`ragnb.frames.index.join_strings`).

    Query ``g`` holds rows ``first[g] .. first[g] + size[g] - 1``. ``keys`` = (score, file key);
    ``flags`` = (has a file key, order by it); ``q`` = (rows, starts, data, offsets, grade) of the
    qrels grouped by query; ``out`` = (grades, judged, filled, disagree, dup): array row
    ``row_of_group[g]`` (-1: skipped) receives the query's first ``grades.shape[1]`` ranks,
    ``disagree[g]`` whether the file key's order differs from the score order, ``dup[g]`` a row
    whose id repeats in the query (else left alone).
    """
    score, file_key = keys
    has_file_key, by_file = flags
    grades, judged, filled, disagree, dup = out
    q_starts = q[1]
    big = 1
    for g in groups:
        big = max(big, size[g])
        i = row_of_group[g]
        if i >= 0:
            big = max(big, q_starts[i + 1] - q_starts[i])
    n_slots = _table_mask(big) + 1
    t_key = np.empty(n_slots, dtype=np.int64)
    t_row = np.empty(n_slots, dtype=np.int64)
    t_gen = np.zeros(n_slots, dtype=np.int64)
    hashes = np.empty(big, dtype=np.int64)
    gen = 0
    for g in groups:
        m = size[g]
        lo = first[g] - base
        gen += 1
        repeated = _repeated(data, offsets, lo, m, hashes, t_key, t_row, t_gen, gen)
        if repeated >= 0:
            dup[g] = base + repeated
        ordered = _string_score_order(data, offsets, lo, m, score, base)
        if has_file_key or by_file:
            by_key = np.empty(m, dtype=np.int64)
            fkeys = np.empty(m, dtype=np.float64)
            for t in range(m):
                by_key[t] = lo + t
                fkeys[t] = file_key[first[g] + t] if has_file_key else t
            if _sorted_by_file_key(by_key, fkeys, ordered, has_file_key):
                disagree[g] = True
            if by_file:
                ordered = by_key
        i = row_of_group[g]
        if i >= 0:
            gen += 1
            _join_strings(
                i, ordered, lo, hashes, data, offsets, q, t_key, t_row, t_gen, gen,
                (grades, judged, filled),
            )  # fmt: skip


@_jit()
def count_above(first, size, score, group_of, j_starts, j_score, above, tied, g_lo, g_hi):
    """How many scores of a run group are above, and equal to, each of some given scores.

    For ``g_lo <= i < g_hi``, the scores ``j_score[j_starts[i]:j_starts[i + 1]]`` (NaN: skipped)
    are compared with the scores of run group ``g = group_of[i]`` (-1: none),
    ``score[first[g]:first[g] + size[g]]``: ``above[j]`` receives the count of scores greater
    than ``j_score[j]``, ``tied[j]`` the count equal to it. A few scores are compared with every
    score of the group, more with a sorted copy (binary search).
    """
    for i in range(g_lo, g_hi):
        g = group_of[i]
        js = j_starts[i]
        je = j_starts[i + 1]
        if g < 0 or je == js:
            continue
        values = score[first[g] : first[g] + size[g]]
        if je - js > 16:
            values = np.sort(values)
        for j in range(js, je):
            x = j_score[j]
            if x != x:
                continue
            if je - js > 16:
                hi = np.searchsorted(values, x, side="right")
                above[j] = values.shape[0] - hi
                tied[j] = hi - np.searchsorted(values, x, side="left")
                continue
            a = 0
            t = 0
            for y in values:  # no branch: the compiler vectorises it
                a += y > x
                t += y == x
            above[j] = a
            tied[j] = t


@_jit()
def tied_positions(first, size, score, groups, x, out_starts, out, c_lo, c_hi):
    """Where in its run group each of some scores occurs.

    For ``c_lo <= c < c_hi``: the positions ``k`` (ascending) in run group ``g = groups[c]``,
    ``score[first[g] + k] == x[c]``, are written to ``out[out_starts[c]:out_starts[c + 1]]``
    (the caller sizes each slice by the count :func:`count_above` returned as ``tied``).
    """
    for c in range(c_lo, c_hi):
        g = groups[c]
        f = first[g]
        o = out_starts[c]
        end = out_starts[c + 1]  # never past the slice, whatever the count said
        v = x[c]
        for k in range(size[g]):
            if score[f + k] == v and o < end:
                out[o] = k
                o += 1


def run_chunks(kernel: Callable[..., None], n_groups: int, *args: object) -> None:
    """Run ``kernel(*args, g_lo, g_hi)`` over ``range(n_groups)`` on the usable cores (at most 8).

    The groups are cut into disjoint ranges, a few per thread; the kernels release the GIL and
    write disjoint parts of their outputs. Fewer than 4096 groups run on the calling thread.
    """
    n_threads = min(usable_cores(), 8, max(1, n_groups // 2048))
    if n_threads <= 1:
        kernel(*args, 0, n_groups)
        return
    bounds = np.linspace(0, n_groups, n_threads * 4 + 1).astype(np.int64)
    with ThreadPoolExecutor(n_threads) as pool:
        futures = [
            pool.submit(kernel, *args, int(lo), int(hi))
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
            if hi > lo
        ]
        for f in futures:
            f.result()


# ------------------------------------------------------------------ plain Python, without numba
# Without numba (the plain copy for small inputs, or no ``fast`` extra) the byte-string kernels
# that loop in Python are replaced by numpy and Python's own sort, which order bytes as the loops
# above do (``bytes`` compare lexicographically, a shorter prefix first; ``sorted`` is stable).

if nb is None:

    def tied_positions(  # noqa: F811
        first: np.ndarray,
        size: np.ndarray,
        score: np.ndarray,
        groups: np.ndarray,
        x: np.ndarray,
        out_starts: np.ndarray,
        out: np.ndarray,
        c_lo: int,
        c_hi: int,
    ) -> None:
        """Where in its run group each of some scores occurs (see the compiled loop above)."""
        g = groups[c_lo:c_hi]
        m = size[g]
        case = np.repeat(np.arange(c_hi - c_lo), m)
        local = np.arange(int(m.sum())) - np.repeat(np.cumsum(m) - m, m)
        hit = score[np.repeat(first[g], m) + local] == x[c_lo:c_hi][case]
        out[out_starts[c_lo] : out_starts[c_hi]] = local[hit]

    def common_prefix(data: np.ndarray, offsets: np.ndarray) -> int:  # noqa: F811
        """Number of leading bytes all strings share (0 for no strings)."""
        n = offsets.shape[0] - 1
        if n == 0:
            return 0
        starts = offsets[:-1]
        common = int((offsets[1:] - starts).min())
        for j in range(common):
            if bool((data[starts + j] != data[starts[0] + j]).any()):
                return j
        return common

    def prefixes(data: np.ndarray, offsets: np.ndarray, skip: int) -> np.ndarray:  # noqa: F811
        """Bytes ``skip .. skip + 7`` of each string as a big-endian uint64, zero-padded; (n,)."""
        starts = offsets[:-1] + skip
        lengths = offsets[1:] - starts
        out = np.zeros(len(starts), dtype=np.uint64)
        for j in range(8):
            byte = np.zeros(len(starts), dtype=np.uint64)
            has = lengths > j
            byte[has] = data[starts[has] + j]
            out = (out << np.uint64(8)) | byte
        return out

    def doc_order(rows, starts, data, offsets, prefix, skip, out, dup, g_lo, g_hi):  # noqa: F811
        """Sort each group's rows by their string ascending; flag groups holding a string twice.

        The same outputs as the compiled :func:`doc_order`, through ``sorted`` on ``bytes``.
        """
        raw = data.tobytes()
        bounds = offsets.tolist()
        for g in range(g_lo, g_hi):
            s = int(starts[g])
            e = int(starts[g + 1])
            seg = rows[s:e].tolist()
            keys = [raw[bounds[r] : bounds[r + 1]] for r in seg]
            order = sorted(range(len(seg)), key=keys.__getitem__)  # stable: ties in row order
            out[s:e] = [seg[i] for i in order]
            dup[g] = -1
            for i, j in zip(order[:-1], order[1:], strict=True):
                if keys[i] == keys[j]:
                    dup[g] = seg[j]
                    break
