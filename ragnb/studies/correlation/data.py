"""The retrieval-response dataset of the Primer paper: schema, loaders, validators, builders.

Three parts (Primer, Appendix A.1), one row per sample:

========================= ======================================================================
part                      columns
========================= ======================================================================
query-texts (A.1.1)       ``id`` (str, ``"<subset>-<item>"`` such as ``"A-0"``, ``"Hs-e-12"``),
                          ``q`` (str, the query), ``p`` (list of str, positives), ``n`` (list of
                          str, negatives); other keys are kept (``c1``, ``c2``, ``q2``,
                          ``query_id``)
ranked (A.1.2)            ``id``, ``E`` (embedder short name), ``Nc`` (int, candidates), ``Np``
                          (int, positives among them), ``K`` (list of int, sorted), ``P``, ``R``
                          (list of float, one per K), ``rank`` (list of int, length ``Nc``:
                          candidate indexes by decreasing cosine; index ``i < Np`` is ``p[i]``,
                          else ``n[i - Np]``)
graded (A.1.3)            ``id``, ``E``, ``Nc``, ``Np``, ``K`` (int), ``rank`` (the ranked
                          sample's ``rank[:K]``), ``inK`` (list of 0/1: ``rank`` with positives
                          as 1), ``answer_ideal``, ``answer_topK`` (str), ``grade`` (float, the
                          numeric grade, NaN when the grader gave none), ``grade_raw`` (str, the
                          grade as read or answered), ``P``, ``R`` (float at this K)
========================= ======================================================================

A ranked sample is identified by ``(id, E, Nc, Np)``, a graded one by ``(id, E, Nc, Np, K)``.
The validators run the assertions of the paper's Figures 22 and 30 (and the arithmetic of ``P``,
``R`` and ``inK``) and name the offending sample.

References
----------
.. [1] S. Schwartz, O. Vasilyev and R. Sawaya, "How important is Recall for Measuring Retrieval
   Quality?", Primer, Appendix A.1 (dataset), Figures 21, 22 and 30.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_ints, l2_normalise, require_columns
from ragnb.errors import InputError
from ragnb.io.files import read_records, write_records

__all__ = [
    "GRADED_COLUMNS",
    "QUERY_TEXTS_COLUMNS",
    "RANKED_COLUMNS",
    "RANKED_KEY",
    "GRADED_KEY",
    "beir_query_texts",
    "check_graded",
    "check_ranked",
    "graded_labels",
    "rank_samples",
    "ranked_texts",
    "read_graded",
    "read_query_texts",
    "read_ranked",
    "subset_of",
    "validate_graded",
    "validate_ranked",
    "write_samples",
]

QUERY_TEXTS_COLUMNS = ("id", "q", "p", "n")
RANKED_COLUMNS = ("id", "E", "Nc", "Np", "K", "P", "R", "rank")
GRADED_COLUMNS = (
    "id",
    "E",
    "Nc",
    "Np",
    "K",
    "rank",
    "inK",
    "answer_ideal",
    "answer_topK",
    "grade",
    "P",
    "R",
)
RANKED_KEY = ("id", "E", "Nc", "Np")
GRADED_KEY = ("id", "E", "Nc", "Np", "K")
_LIST_COLUMNS = {"p", "n", "K", "P", "R", "rank", "inK"}
_TOL = 1e-6


def subset_of(sample_id: str) -> str:
    """The subset of a sample id: everything before its last ``-`` (``"Hs-e-12"`` -> ``"Hs-e"``).

    Examples
    --------
    >>> subset_of("Hs-e-12"), subset_of("A-0")
    ('Hs-e', 'A')
    """
    return str(sample_id).rsplit("-", 1)[0]


# ----------------------------------------------------------------------------- reading


def _read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A jsonl, json, csv or parquet file as a frame; list cells of csv files are JSON text."""
    return read_records(path, json_columns=_LIST_COLUMNS)


def _where(frame: pd.DataFrame) -> str | None:
    return frame.attrs.get("path")


def _sample_name(row: Any, key: Sequence[str]) -> str:
    return "sample " + ", ".join(f"{k}={_plain(row[k])!r}" for k in key if k in row)


def _int_list(v: Any, name: str, where: str, path: str | None) -> list[int]:
    if isinstance(v, str | bytes) or not hasattr(v, "__iter__"):
        raise InputError(f"{where}: {name} must be a list, got {v!r}", path=path, column=name)
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, int | np.integer):
            if isinstance(x, float | np.floating) and float(x).is_integer():
                x = int(x)
            else:
                raise InputError(
                    f"{where}: {name} holds {x!r}, not an integer", path=path, column=name
                )
        out.append(int(x))
    return out


def _float_list(v: Any, name: str, where: str, path: str | None) -> list[float]:
    if isinstance(v, str | bytes) or not hasattr(v, "__iter__"):
        raise InputError(f"{where}: {name} must be a list, got {v!r}", path=path, column=name)
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
            raise InputError(f"{where}: {name} holds {x!r}, not a number", path=path, column=name)
        out.append(float(x))
    return out


def _int(v: Any, name: str, where: str, path: str | None) -> int:
    if isinstance(v, float | np.floating) and float(v).is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int | np.integer):
        raise InputError(f"{where}: {name} must be an integer, got {v!r}", path=path, column=name)
    return int(v)


def _text_list(v: Any, name: str, where: str, path: str | None) -> list[str]:
    if isinstance(v, str | bytes) or not hasattr(v, "__iter__"):
        raise InputError(f"{where}: {name} must be a list of texts", path=path, column=name)
    out = list(v)
    for x in out:
        if not isinstance(x, str):
            raise InputError(f"{where}: {name} holds {x!r}, not text", path=path, column=name)
    return out


def _typed_query_texts(frame: pd.DataFrame) -> pd.DataFrame:
    require_columns(frame, QUERY_TEXTS_COLUMNS, "query-texts samples", path=_where(frame))
    path = _where(frame)
    out = frame.copy()
    out["id"] = out["id"].astype(str)
    for col in ("p", "n"):
        out[col] = [
            _text_list(v, col, f"sample id={i!r}", path)
            for i, v in zip(out["id"], out[col], strict=True)
        ]
    for i, q in zip(out["id"], out["q"], strict=True):
        if not isinstance(q, str) or not q.strip():
            raise InputError(f"sample id={i!r}: q must be a non-empty text", path=path, column="q")
    dup = out["id"][out["id"].duplicated()]
    if len(dup):
        raise InputError(f"sample id {dup.iloc[0]!r} appears twice", path=path, column="id")
    out.attrs["path"] = path
    return out.reset_index(drop=True)


def _typed_copy(
    frame: pd.DataFrame, columns: Sequence[str], what: str
) -> tuple[pd.DataFrame, list[dict[Any, Any]], str | None]:
    """``frame`` checked for ``columns``, copied with text ``id`` and ``E``; its rows and path."""
    path = _where(frame)
    require_columns(frame, columns, what, path=path)
    out = frame.copy()
    out["id"] = out["id"].astype(str)
    out["E"] = out["E"].astype(str)
    return out, out.to_dict("records"), path


def _typed_ranked(frame: pd.DataFrame) -> pd.DataFrame:
    out, rows, path = _typed_copy(frame, RANKED_COLUMNS, "ranked samples")
    for col in ("Nc", "Np"):
        out[col] = [_int(r[col], col, _sample_name(r, RANKED_KEY), path) for r in rows]
    for col in ("K", "rank"):
        out[col] = [_int_list(r[col], col, _sample_name(r, RANKED_KEY), path) for r in rows]
    for col in ("P", "R"):
        out[col] = [_float_list(r[col], col, _sample_name(r, RANKED_KEY), path) for r in rows]
    out.attrs["path"] = path
    return out.reset_index(drop=True)


def _grade_value(v: Any) -> float:
    """The numeric value of a grade as read (int, float or digit text); NaN when there is none."""
    if v is None or isinstance(v, bool):
        return math.nan
    if isinstance(v, int | float | np.integer | np.floating):
        return float(v)
    try:
        return float(str(v).strip())
    except ValueError:
        return math.nan


def _typed_graded(frame: pd.DataFrame) -> pd.DataFrame:
    out, rows, path = _typed_copy(frame, GRADED_COLUMNS, "graded samples")
    for col in ("Nc", "Np", "K"):
        out[col] = [_int(r[col], col, _sample_name(r, GRADED_KEY), path) for r in rows]
    for col in ("rank", "inK"):
        out[col] = [_int_list(r[col], col, _sample_name(r, GRADED_KEY), path) for r in rows]
    for col in ("P", "R"):
        out[col] = [float(_grade_value(r[col])) for r in rows]
    if "grade_raw" not in out.columns:
        out["grade_raw"] = [None if r["grade"] is None else str(r["grade"]) for r in rows]
    out["grade"] = np.asarray([_grade_value(r["grade"]) for r in rows], dtype=np.float64)
    out.attrs["path"] = path
    return out.reset_index(drop=True)


def read_query_texts(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read query-texts samples (Primer A.1.1) from jsonl, json, csv or parquet.

    Parameters
    ----------
    path : str or PathLike
        ``.jsonl`` (one object per line), ``.json`` (a list), ``.csv`` (list cells as JSON) or
        ``.parquet``; ``.gz`` for the text forms.

    Returns
    -------
    DataFrame
        Columns ``id``, ``q``, ``p`` (list of str), ``n`` (list of str) and any others the file
        holds; one row per sample.

    Raises
    ------
    InputError
        On malformed content, a missing column, a non-text query or passage, a repeated id
        (naming the file, line or sample id).
    """
    return _typed_query_texts(_read_table(path))


def read_ranked(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read ranked samples (Primer A.1.2); see :func:`read_query_texts` for the formats.

    Returns
    -------
    DataFrame
        Columns ``id``, ``E``, ``Nc``, ``Np`` (int), ``K``, ``rank`` (list of int), ``P``, ``R``
        (list of float). Run :func:`validate_ranked` for the paper's consistency checks.

    Raises
    ------
    InputError
        On malformed content or types, naming the file and sample.
    """
    return _typed_ranked(_read_table(path))


def read_graded(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read graded samples (Primer A.1.3); see :func:`read_query_texts` for the formats.

    Returns
    -------
    DataFrame
        Columns of :data:`GRADED_COLUMNS`; ``grade`` is numeric (float, NaN when the file's grade
        is empty or not a number) and ``grade_raw`` keeps the grade as the file holds it.

    Raises
    ------
    InputError
        On malformed content or types, naming the file and sample.
    """
    return _typed_graded(_read_table(path))


def write_samples(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write samples atomically as ``.jsonl`` or ``.parquet`` (by the suffix of ``path``).

    Returns
    -------
    Path
    """
    return write_records(frame, path)


# ----------------------------------------------------------------------------- validation


def _problem(rows: list[dict[str, Any]], key: dict[str, Any], check: str, detail: str) -> None:
    rows.append({**key, "check": check, "detail": detail})


def _keyed_samples(
    frame: pd.DataFrame, key: Sequence[str], problems: list[dict[str, Any]]
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Each sample of ``frame`` with its ``key`` columns; a key seen before is recorded in
    ``problems`` (check ``unique (<key>)``) before the sample is yielded."""
    dup = frame.duplicated(list(key), keep="first")
    for r, is_dup in zip(frame.to_dict("records"), dup, strict=True):
        k = {c: r[c] for c in key}
        if is_dup:
            _problem(problems, k, f"unique ({', '.join(key)})", "this key appears more than once")
        yield r, k


def check_ranked(ranked: pd.DataFrame, query_texts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every failed consistency check of ranked samples (Primer Figure 22), one row each.

    Parameters
    ----------
    ranked : DataFrame
        Ranked samples (:func:`read_ranked`).
    query_texts : DataFrame, optional
        Their query-texts samples; without them the checks that need ``p``, ``n`` are skipped.

    Returns
    -------
    DataFrame
        Columns ``id``, ``E``, ``Nc``, ``Np``, ``check`` (the assertion, as in the figure) and
        ``detail``; empty when every sample passes.

    Notes
    -----
    Figure 22's assertions: ``len(P) == len(K)``, ``len(R) == len(K)``, ``len(rank) == Nc``,
    ``Nc <= len(p) + len(n)``, ``Np <= len(p)``, ``Np < Nc``, ``Nc >= 2``, ``Np >= 2``. Added here:
    ``rank`` is a permutation of ``range(Nc)``, ``K`` is sorted with ``1 <= K <= Nc``, ``P`` and
    ``R`` equal the share of positives (indexes ``< Np``) in ``rank[:K]`` over ``K`` and ``Np``,
    the sample key is unique and its id is in ``query_texts``.
    """
    problems: list[dict[str, Any]] = []
    qt = None
    if query_texts is not None:
        qt = {
            i: (len(p), len(n))
            for i, p, n in zip(query_texts["id"], query_texts["p"], query_texts["n"], strict=True)
        }
    for r, key in _keyed_samples(ranked, RANKED_KEY, problems):
        nc, np_, ks, rank = r["Nc"], r["Np"], list(r["K"]), list(r["rank"])
        if len(r["P"]) != len(ks):
            _problem(problems, key, "len(Sr['P']) == len(Sr['K'])", f"{len(r['P'])} != {len(ks)}")
        if len(r["R"]) != len(ks):
            _problem(problems, key, "len(Sr['R']) == len(Sr['K'])", f"{len(r['R'])} != {len(ks)}")
        if len(rank) != nc:
            _problem(problems, key, "len(Sr['rank']) == Sr['Nc']", f"{len(rank)} != {nc}")
        if not np_ < nc:
            _problem(problems, key, "Sr['Np'] < Sr['Nc']", f"Np={np_}, Nc={nc}")
        if nc < 2:
            _problem(problems, key, "Sr['Nc'] >= 2", f"Nc={nc}")
        if np_ < 2:
            _problem(problems, key, "Sr['Np'] >= 2", f"Np={np_}")
        if qt is not None:
            if r["id"] not in qt:
                _problem(problems, key, "id in query-texts", "no query-texts sample has this id")
            else:
                n_p, n_n = qt[r["id"]]
                if not nc <= n_p + n_n:
                    _problem(
                        problems,
                        key,
                        "Sr['Nc'] <= len(Sq['p']) + len(Sq['n'])",
                        f"Nc={nc}, len(p)+len(n)={n_p + n_n}",
                    )
                if not np_ <= n_p:
                    _problem(problems, key, "Sr['Np'] <= len(Sq['p'])", f"Np={np_}, len(p)={n_p}")
        if sorted(rank) != list(range(len(rank))):
            _problem(problems, key, "rank is a permutation of range(Nc)", f"rank={rank[:12]}...")
        if ks != sorted(ks) or any(k < 1 or k > nc for k in ks):
            _problem(problems, key, "K sorted, 1 <= K <= Nc", f"K={ks}")
        elif len(r["P"]) == len(ks) and len(r["R"]) == len(ks) and np_ > 0:
            pos = np.cumsum(np.asarray(rank) < np_)
            for k, p, rec in zip(ks, r["P"], r["R"], strict=True):
                n_in = int(pos[k - 1]) if k <= len(pos) else int(pos[-1]) if len(pos) else 0
                if abs(p - n_in / k) > _TOL or abs(rec - n_in / np_) > _TOL:
                    _problem(
                        problems,
                        key,
                        "P == n_p/K and R == n_p/Np at each K",
                        f"K={k}: P={p}, R={rec}, but {n_in} positives in rank[:K]",
                    )
                    break
    return pd.DataFrame(problems, columns=[*RANKED_KEY, "check", "detail"])


def check_graded(graded: pd.DataFrame, ranked: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every failed consistency check of graded samples (Primer Figure 30), one row each.

    Parameters
    ----------
    graded : DataFrame
        Graded samples (:func:`read_graded`).
    ranked : DataFrame, optional
        Their ranked samples; without them the checks that need ``Sr`` are skipped.

    Returns
    -------
    DataFrame
        Columns ``id``, ``E``, ``Nc``, ``Np``, ``K``, ``check``, ``detail``; empty when all pass.

    Notes
    -----
    Figure 30's assertions: ``len(rank) == K``, ``len(inK) == K``, ``sum(inK) <= Np``,
    ``K in Sr['K']``, ``rank == Sr['rank'][:K]`` (the figure prints ``[Sg['K']]``, a slice is
    meant). Added: ``inK[i] == (rank[i] < Np)``, ``P == sum(inK)/K``, ``R == sum(inK)/Np``, the
    key is unique and its ranked sample exists.
    """
    problems: list[dict[str, Any]] = []
    by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    if ranked is not None:
        for r in ranked.to_dict("records"):
            by_key[tuple(r[k] for k in RANKED_KEY)] = r
    for g, key in _keyed_samples(graded, GRADED_KEY, problems):
        k, np_, rank, ink = g["K"], g["Np"], list(g["rank"]), list(g["inK"])
        if len(rank) != k:
            _problem(problems, key, "len(Sg['rank']) == Sg['K']", f"{len(rank)} != {k}")
        if len(ink) != k:
            _problem(problems, key, "len(Sg['inK']) == Sg['K']", f"{len(ink)} != {k}")
        if sum(ink) > np_:
            _problem(problems, key, "sum(Sg['inK']) <= Sg['Np']", f"{sum(ink)} > {np_}")
        if len(ink) == len(rank) and any(
            int(x) != int(i < np_) for x, i in zip(ink, rank, strict=True)
        ):
            _problem(problems, key, "inK[i] == (rank[i] < Np)", f"inK={ink}, rank={rank}")
        n_in = sum(ink)
        if k > 0 and np_ > 0 and (abs(g["P"] - n_in / k) > _TOL or abs(g["R"] - n_in / np_) > _TOL):
            _problem(problems, key, "P == sum(inK)/K, R == sum(inK)/Np", f"P={g['P']}, R={g['R']}")
        if ranked is not None:
            sr = by_key.get(tuple(g[c] for c in RANKED_KEY))
            if sr is None:
                _problem(problems, key, "ranked sample exists", "no ranked sample (id, E, Nc, Np)")
                continue
            if k not in list(sr["K"]):
                _problem(problems, key, "Sg['K'] in Sr['K']", f"K={k}, Sr['K']={list(sr['K'])}")
            if rank != list(sr["rank"])[:k]:
                _problem(
                    problems,
                    key,
                    "Sg['rank'] == Sr['rank'][:Sg['K']]",
                    f"{rank} != {list(sr['rank'])[:k]}",
                )
    return pd.DataFrame(problems, columns=[*GRADED_KEY, "check", "detail"])


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _raise_first(problems: pd.DataFrame, key: Sequence[str], what: str, path: str | None) -> None:
    if problems.empty:
        return
    first = problems.iloc[0]
    name = ", ".join(f"{k}={_plain(first[k])!r}" for k in key)
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    raise InputError(
        f"{what} sample {name} fails {first['check']}: {first['detail']}{more}",
        path=path,
        query_id=str(first["id"]),
    )


def validate_ranked(ranked: pd.DataFrame, query_texts: pd.DataFrame | None = None) -> None:
    """Raise on the first failed check of :func:`check_ranked`.

    Raises
    ------
    InputError
        Naming the sample ``(id, E, Nc, Np)``, the failed assertion and how many others failed.
    """
    _raise_first(check_ranked(ranked, query_texts), RANKED_KEY, "ranked", _where(ranked))


def validate_graded(graded: pd.DataFrame, ranked: pd.DataFrame | None = None) -> None:
    """Raise on the first failed check of :func:`check_graded`.

    Raises
    ------
    InputError
        Naming the sample ``(id, E, Nc, Np, K)``, the failed assertion and how many others failed.
    """
    _raise_first(check_graded(graded, ranked), GRADED_KEY, "graded", _where(graded))


# ----------------------------------------------------------------------------- building


def ranked_texts(sr: Any, sq: Any) -> list[str]:
    """The candidate texts of a ranked sample in rank order (Primer Figure 21).

    Examples
    --------
    >>> sq = {"p": ["p0", "p1", "p2"], "n": ["n0", "n1"]}
    >>> ranked_texts({"Np": 2, "rank": [3, 0, 2, 1]}, sq)
    ['n1', 'p0', 'n0', 'p1']
    """
    np_ = int(sr["Np"])
    return [(sq["p"][i] if i < np_ else sq["n"][i - np_]) for i in sr["rank"]]


def beir_query_texts(
    dataset: Any,
    *,
    negatives: str = "bm25",
    embedder: Any = None,
    rel: int = 1,
    min_positives: int = 2,
    max_positives: int = 15,
    n_negatives: int = 50,
    subset: str | None = None,
    max_queries: int = 0,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Query-texts samples from a BEIR dataset with qrels.

    Parameters
    ----------
    dataset : ragnb.io.files.BeirDataset
        Corpus, queries and qrels (:func:`ragnb.io.files.read_beir`).
    negatives : {"bm25", "dense"}, default "bm25"
        Where hard negatives come from: the top documents of BM25 (Lucene defaults,
        :class:`ragnb.retrievers.retrieve.BM25Retriever`) or of dense retrieval with ``embedder``,
        minus the query's relevant documents.
    embedder : CachedEmbedder, optional
        Needed for ``negatives="dense"``.
    rel : int, default 1
        A judged document with grade >= ``rel`` is a positive.
    min_positives : int, default 2
        Queries with fewer positives do not qualify (the paper's ``N_p >= 2``).
    max_positives : int, default 15
        Positives kept per query (by grade, then qrels order): the paper's ``N_p`` range 2-15.
    n_negatives : int, default 50
        Hard negatives kept per query, in retrieval order.
    subset : str, optional
        The subset name of the sample ids (default: the dataset's folder name).
    max_queries : int, default 0
        Use the first qualifying queries only (0: all).

    Returns
    -------
    samples : DataFrame
        Columns ``id`` (``"<subset>-<i>"``), ``q``, ``p``, ``n``, ``query_id``, ``n_relevant``
        (the query's relevant documents before the ``max_positives`` cap), ``p_ids``, ``n_ids``.
    summary : dict
        ``judged_queries``, ``qualified`` (queries with >= ``min_positives`` positives),
        ``used`` (after ``max_queries``), ``rel``, ``negatives``, ``min_positives``.

    Raises
    ------
    InputError
        On an unknown ``negatives`` source, a missing embedder or bad counts.

    Notes
    -----
    Unjudged documents count as negatives, as in BEIR; some may in fact be relevant.
    """
    for name, v, low in (
        ("min_positives", min_positives, 1),
        ("max_positives", max_positives, 1),
        ("n_negatives", n_negatives, 1),
        ("max_queries", max_queries, 0),
    ):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise InputError(f"{name} must be an integer >= {low}, got {v!r}", column=name)
    if negatives not in ("bm25", "dense"):
        raise InputError(f"negatives must be 'bm25' or 'dense', got {negatives!r}")
    if negatives == "dense" and embedder is None:
        raise InputError("negatives='dense' needs an embedder")
    judged = dataset.judged_queries
    positives = _positives(dataset.qrels, rel)
    counts = {q: len(v) for q, v in positives.items()}
    qualified = judged[judged["query_id"].map(lambda q: counts.get(q, 0) >= min_positives)]
    used = qualified if max_queries == 0 else qualified.head(max_queries)
    rows: list[dict[str, Any]] = []
    if len(used):
        depth = min(len(dataset.corpus), n_negatives + max(counts.values()) + 10)
        hits = _hard_negative_hits(dataset, used, negatives, embedder, depth)
        texts = dict(
            zip(dataset.corpus["doc_id"].astype(str), _doc_texts(dataset.corpus), strict=True)
        )
        name = subset or Path(getattr(dataset, "path", "beir")).name
        for i, (qid, qtext) in enumerate(zip(used["query_id"], used["text"], strict=True)):
            p_ids = positives[qid][:max_positives]
            relevant = set(positives[qid])
            n_ids = [d for d in hits.get(qid, []) if d not in relevant][:n_negatives]
            rows.append(
                {
                    "id": f"{name}-{i}",
                    "q": str(qtext),
                    "p": [texts[d] for d in p_ids],
                    "n": [texts[d] for d in n_ids],
                    "query_id": str(qid),
                    "n_relevant": counts[qid],
                    "p_ids": p_ids,
                    "n_ids": n_ids,
                }
            )
    samples = pd.DataFrame(
        rows, columns=["id", "q", "p", "n", "query_id", "n_relevant", "p_ids", "n_ids"]
    )
    summary = {
        "dataset": getattr(dataset, "name", ""),
        "judged_queries": len(judged),
        "qualified": len(qualified),
        "used": len(used),
        "rel": rel,
        "min_positives": min_positives,
        "negatives": negatives,
    }
    return samples, summary


def _positives(qrels: pd.DataFrame, rel: int) -> dict[str, list[str]]:
    """Each query's documents with grade >= ``rel``, by grade descending, then qrels order."""
    pos = qrels[qrels["relevance"] >= rel]
    pos = pos.assign(_order=np.arange(len(pos))).sort_values(
        ["query_id", "relevance", "_order"], ascending=[True, False, True], kind="stable"
    )
    return pos.groupby("query_id", sort=False)["doc_id"].apply(list).to_dict()


def _hard_negative_hits(
    dataset: Any, queries: pd.DataFrame, negatives: str, embedder: Any, depth: int
) -> dict[str, list[str]]:
    """The top ``depth`` documents of BM25 or dense retrieval for each query, in rank order."""
    from ragnb.retrievers.retrieve import BM25Retriever, DenseRetriever

    retriever = BM25Retriever() if negatives == "bm25" else DenseRetriever(embedder)
    retriever.index(dataset.corpus)
    run = retriever.retrieve(queries[["query_id", "text"]], k=depth)
    return run.groupby("query_id", sort=False)["doc_id"].apply(list).to_dict()


def _doc_texts(corpus: pd.DataFrame) -> list[str]:
    from ragnb.retrievers.retrieve import doc_texts

    return doc_texts(corpus)


def rank_samples(
    query_texts: pd.DataFrame,
    embedder: Any,
    *,
    name: str,
    configs: Sequence[tuple[int, int]],
    ks: Sequence[int],
) -> pd.DataFrame:
    """Ranked samples (Primer A.1.2): rank each sample's first ``Nc`` candidates by cosine.

    Parameters
    ----------
    query_texts : DataFrame
        Query-texts samples (``id``, ``q``, ``p``, ``n``).
    embedder : CachedEmbedder
        Embeds the query (``kind="query"``) and the candidates (``kind="passage"``).
    name : str
        The embedder's short name, stored in ``E``.
    configs : sequence of (Nc, Np)
        Candidate and positive counts; a sample gets a ranked sample for each config it can fill
        (``Np <= len(p)``, ``Nc - Np <= len(n)``, ``2 <= Np < Nc``).
    ks : sequence of int
        The cutoffs; each ranked sample keeps those with ``K <= Nc`` (sorted).

    Returns
    -------
    DataFrame
        Columns of :data:`RANKED_COLUMNS`: candidates are the first ``Np`` of ``p`` then the
        first ``Nc - Np`` of ``n``; ``rank`` lists their indexes by decreasing cosine similarity
        (ties by index); ``P``, ``R`` at each K.

    Raises
    ------
    InputError
        On an impossible config or no cutoff.
    """
    for nc, np_ in configs:
        if not 2 <= np_ < nc:
            raise InputError(f"config (Nc={nc}, Np={np_}) needs 2 <= Np < Nc", column="configs")
    ks = sorted(set(check_positive_ints(ks, "ks")))
    todo = []
    for sq in query_texts.to_dict("records"):
        for nc, np_ in configs:
            if np_ <= len(sq["p"]) and nc - np_ <= len(sq["n"]):
                todo.append((sq, nc, np_))
    if not todo:
        return pd.DataFrame(columns=list(RANKED_COLUMNS))
    # embed each distinct text once
    passages = sorted({t for sq, nc, np_ in todo for t in (*sq["p"][:np_], *sq["n"][: nc - np_])})
    queries = sorted({sq["q"] for sq, _, _ in todo})
    pvec = l2_normalise(
        embedder.embed(passages, kind="passage", desc=f"ranking with {name}"), np.float64
    )
    qvec = l2_normalise(
        embedder.embed(queries, kind="query", desc=f"queries with {name}"), np.float64
    )
    p_index = {t: i for i, t in enumerate(passages)}
    q_index = {t: i for i, t in enumerate(queries)}
    rows = []
    for sq, nc, np_ in todo:
        cand = [*sq["p"][:np_], *sq["n"][: nc - np_]]
        sims = pvec[[p_index[t] for t in cand]] @ qvec[q_index[sq["q"]]]
        rank = np.argsort(-sims, kind="stable")
        n_in = np.cumsum(rank < np_)
        k_here = [k for k in ks if k <= nc]
        rows.append(
            {
                "id": sq["id"],
                "E": name,
                "Nc": nc,
                "Np": np_,
                "K": k_here,
                "P": [float(n_in[k - 1] / k) for k in k_here],
                "R": [float(n_in[k - 1] / np_) for k in k_here],
                "rank": [int(i) for i in rank],
            }
        )
    return pd.DataFrame(rows, columns=list(RANKED_COLUMNS))


def graded_labels(ranked: pd.DataFrame) -> pd.DataFrame:
    """Graded-sample skeletons of ranked samples: one row per (ranked sample, K), no grade yet.

    Returns
    -------
    DataFrame
        Columns ``id``, ``E``, ``Nc``, ``Np``, ``K``, ``rank`` (``rank[:K]``), ``inK``, ``P``,
        ``R`` (floats at K).
    """
    rows = []
    for r in ranked.to_dict("records"):
        rank = list(r["rank"])
        for k, p, rec in zip(r["K"], r["P"], r["R"], strict=True):
            top = rank[:k]
            rows.append(
                {
                    "id": r["id"],
                    "E": r["E"],
                    "Nc": int(r["Nc"]),
                    "Np": int(r["Np"]),
                    "K": int(k),
                    "rank": top,
                    "inK": [int(i < r["Np"]) for i in top],
                    "P": float(p),
                    "R": float(rec),
                }
            )
    return pd.DataFrame(rows, columns=["id", "E", "Nc", "Np", "K", "rank", "inK", "P", "R"])
