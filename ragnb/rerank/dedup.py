"""Near-duplicate suppression before reranking (Dallaire, section 5.2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from ragnb.core.validation import l2_normalise
from ragnb.errors import InputError
from ragnb.frames.index import sort_run

__all__ = ["suppress_near_duplicates"]


def suppress_near_duplicates(
    run: pd.DataFrame,
    vectors: Mapping[str, np.ndarray] | Callable[[list[str]], np.ndarray],
    threshold: float = 0.95,
) -> pd.DataFrame:
    """Drop candidates that nearly repeat a better-ranked candidate of the same query.

    Per query, candidates are visited in trec_eval order (score descending, ties by doc_id
    descending); a candidate is dropped when its cosine similarity with a candidate already
    KEPT is at least ``threshold``. Comparing with kept candidates only (greedy) means a chain
    a ~ b ~ c where a and c differ more than the threshold keeps a and c.

    Parameters
    ----------
    run : DataFrame
        ``query_id``, ``doc_id``, ``score`` (other columns are kept).
    vectors : mapping of doc_id to 1-D array, or callable
        The documents' vectors (any dimension, normalised here), or a function called once with
        the run's distinct doc ids (list of str, length m) returning an array of shape (m, dim),
        e.g. ``lambda ids: embedder.embed([texts[i] for i in ids])``.
    threshold : float in (-1, 1], default 0.95
        Cosine at or above which a candidate counts as a near-duplicate.

    Returns
    -------
    DataFrame
        The rows of ``run`` that are kept, in their input order (a ``rank`` column, if any, is
        renumbered 1..k per query in trec_eval order). ``attrs["dropped"]`` (int): rows
        dropped; ``attrs["near_duplicates"]``: list of ``(query_id, doc_id, kept_doc_id,
        cosine)`` tuples, one per dropped row.

    Raises
    ------
    InputError
        On a malformed run, a threshold outside (-1, 1], or a document with no vector (naming
        it).

    Examples
    --------
    >>> import pandas as pd, numpy as np
    >>> run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"],
    ...                     "score": [3.0, 2.0, 1.0]})
    >>> vecs = {"a": np.array([1.0, 0.0]), "b": np.array([0.99, 0.1]), "c": np.array([0.0, 1.0])}
    >>> out = suppress_near_duplicates(run, vecs, threshold=0.95)
    >>> out["doc_id"].tolist(), out.attrs["dropped"]
    (['a', 'c'], 1)

    References
    ----------
    .. [1] Dallaire (arXiv 2511.09545), section 5.2: "dedupe/near-duplicate suppression before
       rerank to thin hard negatives"; section 2 (novelty discount of repeated sources).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise InputError(f"threshold must be a number, got {threshold!r}")
    if not -1.0 < float(threshold) <= 1.0:
        raise InputError(f"threshold must be in (-1, 1], got {threshold}")
    if not isinstance(run, pd.DataFrame):
        raise InputError(f"run must be a DataFrame, got {type(run).__name__}")
    out = run.copy()
    out.attrs = {}
    if run.empty:
        out.attrs.update(dropped=0, near_duplicates=[])
        return out
    work = run.reset_index(drop=True).assign(_row=np.arange(len(run)))
    ordered = sort_run(work, warn=False).run
    ids = ordered["doc_id"].astype(str).tolist()
    distinct = list(dict.fromkeys(ids))
    if callable(vectors) and not isinstance(vectors, Mapping):
        mat = np.asarray(vectors(distinct), dtype=np.float64)
        if mat.ndim != 2 or mat.shape[0] != len(distinct):
            raise InputError(
                f"the vectors function returned shape {mat.shape} for {len(distinct)} documents"
            )
    elif isinstance(vectors, Mapping):
        rows = []
        for d in distinct:
            v = vectors.get(d)
            if v is None:
                q = ordered["query_id"].iloc[ids.index(d)]
                raise InputError(f"no vector for document {d!r}", query_id=str(q))
            rows.append(np.asarray(v, dtype=np.float64).ravel())
        if len({r.shape for r in rows}) > 1:
            raise InputError("document vectors have different dimensions")
        mat = np.vstack(rows)
    else:
        raise InputError(f"vectors must be a mapping or a callable, got {type(vectors).__name__}")
    unit = l2_normalise(mat, np.float64)
    pos = {d: i for i, d in enumerate(distinct)}
    vec_idx = np.array([pos[d] for d in ids])
    qids = ordered["query_id"].to_numpy(dtype=object)
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    ends = np.r_[starts[1:], len(qids)]
    keep = np.ones(len(ordered), dtype=bool)
    pairs: list[tuple[str, str, str, float]] = []
    thr = float(threshold)
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        u = unit[vec_idx[s:e]]
        sims = u @ u.T
        kept: list[int] = []
        for i in range(e - s):
            if kept:
                row = sims[i, kept]
                j = int(np.argmax(row))
                if row[j] >= thr:
                    keep[s + i] = False
                    pairs.append((str(qids[s]), ids[s + i], ids[s + kept[j]], float(row[j])))
                    continue
            kept.append(i)
    kept_rows = np.sort(ordered["_row"].to_numpy()[keep])
    out = run.iloc[kept_rows].copy()
    out.attrs = {}
    if "rank" in out.columns:
        ranks = ordered.loc[keep, ["_row"]].copy()
        ranks["new_rank"] = ranks.groupby(ordered.loc[keep, "query_id"]).cumcount() + 1
        out["rank"] = ranks.set_index("_row").loc[kept_rows, "new_rank"].to_numpy(np.int64)
    out.attrs["dropped"] = int((~keep).sum())
    out.attrs["near_duplicates"] = pairs
    return out
