"""Non-LLM context precision and recall of RAG samples, against reference texts or reference ids.

When the gold material is a set of reference chunks rather than qrels, a retrieved chunk is
relevant when it is similar enough to one of the references, and a reference is recalled when it
is similar enough to one of the retrieved chunks (seed "RAG Evaluation Part 1", non-LLM relevance
and non-LLM context recall). With ids instead of texts the match is exact.

Samples
-------
A DataFrame (or a list of dicts, or anything with ``to_pandas()`` such as a ragas
``EvaluationDataset``) with ragas' field names, one row per sample:

========================= ======================= =========================================
field                     type                    used by
========================= ======================= =========================================
``user_input``            str, optional           copied to the output
``retrieved_contexts``    list of str, in rank    :func:`non_llm_context_scores`,
                          order                   :func:`context_matches`
``reference_contexts``    list of str             :func:`non_llm_context_scores`,
                                                  :func:`context_matches`
``retrieved_context_ids`` list of str or int,     :func:`id_based_context_scores`
                          in rank order
``reference_context_ids`` list of str or int      :func:`id_based_context_scores`
========================= ======================= =========================================

Similarities
------------
``"levenshtein"``
    ``1 - lev(a, b) / max(len(a), len(b))``: normalised Levenshtein (edit) distance on Unicode
    code points, 1 for two empty strings. This is the default of ragas' ``NonLLMStringSimilarity``
    (rapidfuzz ``Levenshtein.normalized_distance``), implemented here with numpy.
``"sequence_matcher"``
    ``difflib.SequenceMatcher(None, retrieved, reference, autojunk=False).ratio()``: Ratcliff and
    Obershelp's gestalt pattern matching, ``2 M / (len(a) + len(b))`` with M the characters in
    matching blocks. Not symmetric in general; the retrieved chunk is the first argument.
    ``autojunk`` is off because on texts over 200 characters it discards every common letter.
``"embedding"``
    Cosine similarity of the embeddings from a :class:`ragnb.embed.CachedEmbedder` (``kind =
    "passage"``), in [-1, 1]: a threshold tuned for the string similarities does not transfer.
a callable
    ``f(retrieved, reference) -> float``.

The decision ``score >= tau`` or ``score > tau`` is the ``compare`` parameter. "RAG Evaluation
Part 1" uses ``>=`` for both precision and recall; ragas uses ``>=`` in
``NonLLMContextPrecisionWithReference`` and ``>`` in ``NonLLMContextRecall`` (both with
tau = 0.5): pass ``compare=">"`` to reproduce the latter.

References
----------
.. [1] "RAG Evaluation Part 1: Retriever Evaluation", sections "Non-LLM based relevance
   calculation" (score(r_i) = max_c sim(r_i, c) >= tau) and "Non-LLM based Context Recall"
   (Recall = sum_j u_j / m).
.. [2] S. Es et al., "Ragas: automated evaluation of retrieval augmented generation", EACL 2024;
   ragas ``NonLLMContextPrecisionWithReference``, ``NonLLMContextRecall``,
   ``IDBasedContextPrecision``, ``IDBasedContextRecall``.
.. [3] V. I. Levenshtein, "Binary codes capable of correcting deletions, insertions, and
   reversals", Soviet Physics Doklady 10(8), 1966.
.. [4] J. W. Ratcliff and D. E. Metzener, "Pattern matching: the gestalt approach", Dr. Dobb's
   Journal, July 1988 (Python's ``difflib``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.measures.context import context_precision_from_verdicts

__all__ = [
    "context_matches",
    "id_based_context_scores",
    "levenshtein_similarity",
    "non_llm_context_scores",
    "sequence_matcher_similarity",
    "similarity_matrix",
]

Similarity: TypeAlias = (
    Literal["levenshtein", "sequence_matcher", "embedding"] | Callable[[str, str], float]
)
Compare: TypeAlias = Literal[">=", ">"]
Samples: TypeAlias = pd.DataFrame | Sequence[Mapping[str, Any]] | Any

TEXT_FIELDS = ("retrieved_contexts", "reference_contexts")
ID_FIELDS = ("retrieved_context_ids", "reference_context_ids")


class _Embedder(Protocol):
    def embed(self, texts: Sequence[str], kind: Any = ...) -> np.ndarray: ...


# ----------------------------------------------------------------------------- similarities


def _codes(text: str) -> np.ndarray:
    """Unicode code points of ``text``, shape (len(text),)."""
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


def _levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute: cost 1 each); one numpy row per char of ``a``.

    Row recurrence: with ``t[j] = min(prev[j] + 1, prev[j-1] + (a_i != b_j))`` and ``t[0] = i``,
    the row is ``row[j] = min_{l <= j} t[l] + (j - l)`` (a run of insertions), a running minimum.
    """
    if len(a) > len(b):
        a, b = b, a
    if not a:
        return len(b)
    ca, cb = _codes(a), _codes(b)
    offsets = np.arange(len(cb) + 1, dtype=np.int64)
    prev = offsets.copy()
    t = np.empty(len(cb) + 1, dtype=np.int64)
    for i, char in enumerate(ca, start=1):
        t[0] = i
        np.minimum(prev[1:] + 1, prev[:-1] + (cb != char), out=t[1:])
        prev = np.minimum.accumulate(t - offsets) + offsets
    return int(prev[-1])


def levenshtein_similarity(a: str, b: str) -> float:
    """Normalised Levenshtein similarity ``1 - lev(a, b) / max(len(a), len(b))``.

    Parameters
    ----------
    a, b : str

    Returns
    -------
    float in [0, 1]
        1 for equal strings (also two empty ones), 0 when no character can be kept in place.

    Raises
    ------
    InputError
        When ``a`` or ``b`` is not a str.

    References
    ----------
    .. [1] V. I. Levenshtein, Soviet Physics Doklady 10(8), 1966.
    .. [2] rapidfuzz ``Levenshtein.normalized_similarity`` (the ragas default), same definition.

    Examples
    --------
    >>> levenshtein_similarity("kitten", "sitting")   # 3 edits over 7 characters: 1 - 3/7
    0.5714285714285714
    >>> levenshtein_similarity("", ""), levenshtein_similarity("abc", "")
    (1.0, 0.0)
    """
    _check_strs(a, b)
    return _levenshtein_ratio(a, b)


def sequence_matcher_similarity(a: str, b: str) -> float:
    """``difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()``.

    Parameters
    ----------
    a, b : str
        ``a`` is the retrieved chunk, ``b`` the reference (the ratio is not always symmetric).

    Returns
    -------
    float in [0, 1]
        ``2 M / (len(a) + len(b))``, M the characters in matching blocks; 1 for two empty strings.

    Raises
    ------
    InputError
        When ``a`` or ``b`` is not a str.

    References
    ----------
    .. [1] J. W. Ratcliff and D. E. Metzener, Dr. Dobb's Journal, July 1988; Python ``difflib``.

    Examples
    --------
    >>> sequence_matcher_similarity("abcd", "bcde")   # matching block "bcd": 2 * 3 / 8
    0.75
    """
    _check_strs(a, b)
    return _gestalt_ratio(a, b)


def _check_strs(a: Any, b: Any) -> None:
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, str):
            raise InputError(f"{name} must be a str, got {type(value).__name__}")


def _levenshtein_ratio(a: str, b: str) -> float:
    """:func:`levenshtein_similarity` without the type checks (the matrices check once)."""
    longest = max(len(a), len(b))
    return 1.0 if longest == 0 else 1.0 - _levenshtein(a, b) / longest


def _gestalt_ratio(a: str, b: str) -> float:
    """:func:`sequence_matcher_similarity` without the type checks."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


_STRING_SIMILARITIES: dict[str, Callable[[str, str], float]] = {
    "levenshtein": _levenshtein_ratio,
    "sequence_matcher": _gestalt_ratio,
}


def _similarity_name(similarity: Similarity) -> str:
    if callable(similarity):
        return getattr(similarity, "__name__", type(similarity).__name__)
    if similarity not in (*_STRING_SIMILARITIES, "embedding"):
        raise InputError(
            f"unknown similarity {similarity!r}; use 'levenshtein', 'sequence_matcher', "
            "'embedding' or a callable"
        )
    return similarity


def _matrices(
    retrieved: list[list[str]],
    reference: list[list[str]],
    similarity: Similarity,
    embedder: _Embedder | None,
) -> list[np.ndarray]:
    """One (n_retrieved, n_reference) float64 similarity matrix per sample."""
    name = _similarity_name(similarity)
    if name == "embedding" and not callable(similarity):
        if embedder is None or not hasattr(embedder, "embed"):
            raise InputError(
                "similarity='embedding' needs an embedder, e.g. "
                "embedder=ragnb.embed.make_embedder()"
            )
        texts = list(dict.fromkeys(t for row in (*retrieved, *reference) for t in row))
        if not texts:
            return [np.zeros((len(r), len(c))) for r, c in zip(retrieved, reference, strict=True)]
        vectors = np.asarray(embedder.embed(texts, kind="passage"), dtype=np.float64)
        if vectors.shape[0] != len(texts):
            raise InputError(
                f"the embedder returned {vectors.shape[0]} vectors for {len(texts)} texts"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        index = {t: i for i, t in enumerate(texts)}
        out = []
        for r, c in zip(retrieved, reference, strict=True):
            vr = vectors[[index[t] for t in r]].reshape(len(r), -1)
            vc = vectors[[index[t] for t in c]].reshape(len(c), -1)
            out.append(
                np.clip(vr @ vc.T, -1.0, 1.0) if len(r) and len(c) else np.zeros((len(r), len(c)))
            )
        return out
    fn = similarity if callable(similarity) else _STRING_SIMILARITIES[name]
    memo: dict[tuple[str, str], float] = {}
    out = []
    for r, c in zip(retrieved, reference, strict=True):
        m = np.empty((len(r), len(c)), dtype=np.float64)
        for i, a in enumerate(r):
            for j, b in enumerate(c):
                key = (a, b)
                if key not in memo:
                    memo[key] = float(fn(a, b))
                m[i, j] = memo[key]
        out.append(m)
    return out


def similarity_matrix(
    retrieved: Sequence[str],
    reference: Sequence[str],
    *,
    similarity: Similarity = "levenshtein",
    embedder: _Embedder | None = None,
) -> np.ndarray:
    """Similarity of every retrieved chunk to every reference chunk.

    Parameters
    ----------
    retrieved : sequence of str, length n
    reference : sequence of str, length m
    similarity : {"levenshtein", "sequence_matcher", "embedding"} or callable
        See the module docstring.
    embedder : CachedEmbedder, optional
        Required for ``"embedding"`` (anything with ``embed(texts, kind) -> (n, dim)``).

    Returns
    -------
    ndarray of float64, shape (n, m)
        In [0, 1] for the string similarities, [-1, 1] for cosine.

    Raises
    ------
    InputError
        When an element is not a str, the similarity is unknown, or ``"embedding"`` lacks an
        embedder.

    References
    ----------
    .. [1] "RAG Evaluation Part 1", non-LLM relevance: sim(r_i, c).

    Examples
    --------
    >>> similarity_matrix(["abcd", "xyz"], ["abcd", "abce"]).round(2).tolist()
    [[1.0, 0.75], [0.0, 0.0]]
    """
    r = _text_list(retrieved, "retrieved", None)
    c = _text_list(reference, "reference", None)
    return _matrices([r], [c], similarity, embedder)[0]


# ----------------------------------------------------------------------------- validation


def samples_frame(samples: Samples) -> pd.DataFrame:
    """``samples`` (a DataFrame, a list of dicts or a ragas dataset) as a DataFrame."""
    if isinstance(samples, pd.DataFrame):
        return samples
    if hasattr(samples, "to_pandas") and callable(samples.to_pandas):
        frame = samples.to_pandas()
        if isinstance(frame, pd.DataFrame):
            return frame
    if isinstance(samples, Sequence) and not isinstance(samples, str | bytes):
        for i, row in enumerate(samples):
            if not isinstance(row, Mapping):
                raise InputError(f"row {i}: a sample must be a dict, got {type(row).__name__}")
        return pd.DataFrame(list(samples))
    raise InputError(
        f"samples must be a DataFrame or a list of dicts, got {type(samples).__name__}"
    )


def _text_list(value: Any, column: str, row: Any) -> list[str]:
    where = "" if row is None else f"row {row}: "
    col = None if row is None else column
    if isinstance(value, str):
        raise InputError(
            f"{where}{column} is a single string; expected a list of strings", column=col
        )
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise InputError(f"{where}{column} is missing; expected a list of strings", column=col)
    if not isinstance(value, list | tuple | np.ndarray | pd.Series):
        raise InputError(
            f"{where}{column} must be a list of strings, got {type(value).__name__}", column=col
        )
    out = list(value)
    for i, item in enumerate(out):
        if not isinstance(item, str):
            raise InputError(
                f"{where}{column}[{i}] must be a str, got {type(item).__name__} {item!r}",
                column=col,
            )
    return out


def _id_list(value: Any, column: str, row: Any) -> list[str]:
    if isinstance(value, str | int) and not isinstance(value, bool):
        raise InputError(
            f"row {row}: {column} is a single id; expected a list of ids", column=column
        )
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise InputError(f"row {row}: {column} is missing; expected a list of ids", column=column)
    if not isinstance(value, list | tuple | set | frozenset | np.ndarray | pd.Series):
        raise InputError(
            f"row {row}: {column} must be a list of ids, got {type(value).__name__}",
            column=column,
        )
    out = []
    for i, item in enumerate(value):
        if isinstance(item, np.integer):
            item = int(item)
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise InputError(
                f"row {row}: {column}[{i}] must be a str or int id, got "
                f"{type(item).__name__} {item!r}",
                column=column,
            )
        out.append(str(item))
    return out


def _fields(
    frame: pd.DataFrame, fields: tuple[str, str], parse: Callable[[Any, str, Any], list[str]]
) -> tuple[list[list[str]], list[list[str]]]:
    missing = [f for f in fields if f not in frame.columns]
    if missing:
        raise InputError(
            f"samples lack the field {missing[0]!r} (ragas name); columns are "
            f"{[str(c) for c in frame.columns]}",
            column=missing[0],
        )
    cols = [
        [parse(v, field, label) for label, v in zip(frame.index, frame[field], strict=True)]
        for field in fields
    ]
    return cols[0], cols[1]


def _check_threshold(tau: float, compare: str) -> Callable[[np.ndarray], np.ndarray]:
    if isinstance(tau, bool) or not isinstance(tau, int | float) or not math.isfinite(tau):
        raise InputError(f"tau must be a finite number, got {tau!r}")
    if compare == ">=":
        return lambda s: s >= tau
    if compare == ">":
        return lambda s: s > tau
    raise InputError(f"compare must be '>=' or '>', got {compare!r}")


def _head(frame: pd.DataFrame) -> dict[str, Any]:
    out: dict[str, Any] = {"sample": frame.index.to_numpy()}
    if "user_input" in frame.columns:
        out["user_input"] = frame["user_input"].to_numpy(dtype=object)
    return out


# ----------------------------------------------------------------------------- text-based scores


def _compare(
    samples: Samples,
    k: int | None,
    similarity: Similarity,
    tau: float,
    compare: Compare,
    embedder: _Embedder | None,
) -> tuple[pd.DataFrame, list[np.ndarray], Callable[[np.ndarray], np.ndarray], str]:
    """The arguments checked, then the samples as a frame, each sample's (top-``k`` retrieved,
    reference) similarity matrix, the relevance test ``sim >= tau`` (or ``>``) and the
    similarity's name."""
    check_positive_int(k, allow_none=True)
    decide = _check_threshold(tau, compare)
    name = _similarity_name(similarity)
    frame = samples_frame(samples)
    retrieved, reference = _fields(frame, TEXT_FIELDS, _text_list)
    mats = _matrices([r[:k] for r in retrieved], reference, similarity, embedder)
    return frame, mats, decide, name


def non_llm_context_scores(
    samples: Samples,
    k: int | None = None,
    *,
    similarity: Similarity = "levenshtein",
    tau: float = 0.5,
    compare: Compare = ">=",
    embedder: _Embedder | None = None,
) -> pd.DataFrame:
    """Non-LLM context precision and recall of each sample against its reference contexts.

    Parameters
    ----------
    samples : DataFrame or list of dict
        Fields ``retrieved_contexts`` (list of str, rank order) and ``reference_contexts`` (list
        of str); ``user_input`` is copied if present.
    k : int, optional
        Use only the first ``k`` retrieved contexts; default all.
    similarity : {"levenshtein", "sequence_matcher", "embedding"} or callable, default
        "levenshtein"
        How a retrieved chunk is compared to a reference (module docstring).
    tau : float, default 0.5
        The threshold (ragas' default for the string similarities).
    compare : {">=", ">"}, default ">="
        A retrieved chunk r is relevant when ``max_c sim(r, c) compare tau``; a reference c is
        recalled when ``max_r sim(c, r) compare tau``.
    embedder : CachedEmbedder, optional
        Required for ``similarity="embedding"``; all texts are embedded in one call.

    Returns
    -------
    DataFrame
        One row per sample, in input order: ``sample`` (the input row label), ``user_input`` (if
        given), ``n_retrieved`` (int, after the cut at k), ``n_reference`` (int),
        ``n_relevant`` (int, relevant retrieved chunks), ``n_recalled`` (int, matched references),
        ``precision`` (float in [0, 1], ``n_relevant / n_retrieved``),
        ``non_llm_context_precision_with_reference`` (float in [0, 1], the Context Precision@K
        weighting ``sum_k P@k v_k / sum_k v_k``, 0 with no relevant chunk) and
        ``non_llm_context_recall`` (float in [0, 1], ``n_recalled / n_reference``). Precisions are
        NaN when nothing was retrieved, recall when there is no reference. ``attrs`` records
        ``similarity``, ``tau``, ``compare`` and ``k``.

    Raises
    ------
    InputError
        Naming the field and row when a field is missing, not a list of strings, or a single
        string; on a bad ``k``, ``tau``, ``compare`` or ``similarity``, or ``"embedding"`` without
        an embedder.

    Notes
    -----
    The similarity matrix of a sample is computed once; precision reads its row maxima, recall
    its column maxima. ragas computes the same two numbers in
    ``NonLLMContextPrecisionWithReference`` (``>=``) and ``NonLLMContextRecall`` (``>``, so pass
    ``compare=">"`` to match it); ragas divides the weighting by ``sum v_k + 1e-10``, a relative
    difference below 1e-10.

    References
    ----------
    .. [1] "RAG Evaluation Part 1: Retriever Evaluation": Context Precision@K; non-LLM relevance
       ``score(r_i) = max_c sim(r_i, c) >= tau``; non-LLM context recall ``sum_j u_j / m``.
    .. [2] S. Es et al., Ragas, EACL 2024.

    Examples
    --------
    >>> sample = {
    ...     "user_input": "Who developed relativity?",
    ...     "retrieved_contexts": ["Einstein developed relativity.", "Tesla was an inventor."],
    ...     "reference_contexts": ["Einstein developed relativity!", "Born in Ulm in 1879."],
    ... }
    >>> out = non_llm_context_scores([sample])
    >>> # chunk 1 is one edit from reference 1 (sim 1 - 1/30 >= 0.5), chunk 2 matches nothing
    >>> cols = ["n_relevant", "precision", "n_recalled", "non_llm_context_recall"]
    >>> print(out[cols].to_string(index=False))    # reference 1 recalled, reference 2 not
     n_relevant  precision  n_recalled  non_llm_context_recall
              1        0.5           1                     0.5
    >>> float(out["non_llm_context_precision_with_reference"].iloc[0])   # P@1 * v_1 / 1
    1.0
    """
    frame, mats, decide, name = _compare(samples, k, similarity, tau, compare, embedder)
    n = len(mats)
    n_ret = np.array([m.shape[0] for m in mats], dtype=np.int64)
    n_ref = np.array([m.shape[1] for m in mats], dtype=np.int64)
    n_relevant = np.zeros(n, dtype=np.int64)
    n_recalled = np.zeros(n, dtype=np.int64)
    weighted = np.full(n, np.nan)
    for i, m in enumerate(mats):
        v = decide(m.max(axis=1)) if m.shape[1] else np.zeros(m.shape[0], dtype=bool)
        u = decide(m.max(axis=0)) if m.shape[0] else np.zeros(m.shape[1], dtype=bool)
        n_relevant[i], n_recalled[i] = int(v.sum()), int(u.sum())
        if m.shape[0]:
            weighted[i] = context_precision_from_verdicts(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(n_ret > 0, n_relevant / np.maximum(n_ret, 1), np.nan)
        recall = np.where(n_ref > 0, n_recalled / np.maximum(n_ref, 1), np.nan)
    out = pd.DataFrame(
        {
            **_head(frame),
            "n_retrieved": n_ret,
            "n_reference": n_ref,
            "n_relevant": n_relevant,
            "n_recalled": n_recalled,
            "precision": precision,
            "non_llm_context_precision_with_reference": weighted,
            "non_llm_context_recall": recall,
        }
    )
    out.attrs.update(similarity=name, tau=float(tau), compare=compare, k=k)
    if name == "embedding" and embedder is not None:
        out.attrs["embedding_model"] = getattr(embedder, "model_id", type(embedder).__name__)
    return out


def context_matches(
    samples: Samples,
    k: int | None = None,
    *,
    similarity: Similarity = "levenshtein",
    tau: float = 0.5,
    compare: Compare = ">=",
    embedder: _Embedder | None = None,
) -> pd.DataFrame:
    """Each retrieved chunk's best reference and each reference's best chunk, for inspection.

    Parameters
    ----------
    samples, k, similarity, tau, compare, embedder
        As for :func:`non_llm_context_scores`.

    Returns
    -------
    DataFrame
        One row per retrieved chunk (``side = "retrieved"``) then per reference
        (``side = "reference"``) of each sample: ``sample`` (input row label), ``side`` (str),
        ``position`` (int, 1-based rank of the chunk, or 1-based index of the reference),
        ``best`` (int, 1-based position of the best counterpart; 0 when there is none), ``score``
        (float, the similarity to it; NaN when there is none) and ``hit`` (bool: relevant chunk,
        or recalled reference).

    Raises
    ------
    InputError
        As :func:`non_llm_context_scores`.

    References
    ----------
    .. [1] "RAG Evaluation Part 1": score(r_i) = max_c sim(r_i, c); max_sim(c_j) = max_r
       sim(c_j, r).

    Examples
    --------
    >>> sample = {"retrieved_contexts": ["abcd", "xyz"], "reference_contexts": ["abce"]}
    >>> print(context_matches([sample]).to_string(index=False))
     sample      side  position  best  score   hit
          0 retrieved         1     1   0.75  True
          0 retrieved         2     1   0.00 False
          0 reference         1     1   0.75  True
    """
    frame, mats, decide, _ = _compare(samples, k, similarity, tau, compare, embedder)
    parts = []
    for label, m in zip(frame.index, mats, strict=True):
        for side, sims in (("retrieved", m), ("reference", m.T)):
            n, other = sims.shape
            best = sims.argmax(axis=1) + 1 if other else np.zeros(n, dtype=np.int64)
            score = sims.max(axis=1) if other else np.full(n, np.nan)
            parts.append(
                pd.DataFrame(
                    {
                        "sample": [label] * n,
                        "side": [side] * n,
                        "position": np.arange(1, n + 1, dtype=np.int64),
                        "best": best.astype(np.int64),
                        "score": score,
                        "hit": decide(score) if other else np.zeros(n, dtype=bool),
                    }
                )
            )
    columns = ["sample", "side", "position", "best", "score", "hit"]
    if not parts:
        return pd.DataFrame({c: [] for c in columns})
    return pd.concat(parts, ignore_index=True)


# ----------------------------------------------------------------------------- id-based scores


def id_based_context_scores(samples: Samples, k: int | None = None) -> pd.DataFrame:
    """ID-based context precision and recall of each sample (exact id match, as ragas).

    Parameters
    ----------
    samples : DataFrame or list of dict
        Fields ``retrieved_context_ids`` (list of str or int, rank order) and
        ``reference_context_ids`` (list of str or int); ``user_input`` copied if present.
    k : int, optional
        Use only the first ``k`` retrieved ids; default all.

    Returns
    -------
    DataFrame
        One row per sample: ``sample`` (input row label), ``user_input`` (if given),
        ``n_retrieved`` (int, distinct retrieved ids), ``n_reference`` (int, distinct reference
        ids), ``n_hits`` (int, distinct ids in both), ``id_based_context_precision`` (float in
        [0, 1], ``n_hits / n_retrieved``, NaN when nothing was retrieved) and
        ``id_based_context_recall`` (float in [0, 1], ``n_hits / n_reference``, NaN without
        references).

    Raises
    ------
    InputError
        Naming the field and row when a field is missing, not a list, a single id, or holds
        something other than str or int ids; on a bad ``k``.

    Notes
    -----
    Ids are compared as strings (``1`` and ``"1"`` are the same id) and as sets: a repeated
    retrieved id counts once, as in ragas' ``IDBasedContextPrecision`` which builds sets (some
    ragas releases divide by the list length instead; they differ only on repeated ids).

    References
    ----------
    .. [1] S. Es et al., Ragas, EACL 2024; ragas ``IDBasedContextPrecision``,
       ``IDBasedContextRecall``.

    Examples
    --------
    >>> s = {"retrieved_context_ids": [1, 2, 3], "reference_context_ids": [1, 2, 4]}
    >>> out = id_based_context_scores([s])          # {1, 2} in both: 2/3 and 2/3
    >>> out[["id_based_context_precision", "id_based_context_recall"]].round(3).values.tolist()
    [[0.667, 0.667]]
    """
    check_positive_int(k, allow_none=True)
    frame = samples_frame(samples)
    retrieved, reference = _fields(frame, ID_FIELDS, _id_list)
    n_ret, n_ref, n_hits = [], [], []
    for r, c in zip(retrieved, reference, strict=True):
        got, gold = set(r[:k]), set(c)
        n_ret.append(len(got))
        n_ref.append(len(gold))
        n_hits.append(len(got & gold))
    a_ret, a_ref, a_hits = (np.asarray(x, dtype=np.int64) for x in (n_ret, n_ref, n_hits))
    return pd.DataFrame(
        {
            **_head(frame),
            "n_retrieved": a_ret,
            "n_reference": a_ref,
            "n_hits": a_hits,
            "id_based_context_precision": np.where(
                a_ret > 0, a_hits / np.maximum(a_ret, 1), np.nan
            ),
            "id_based_context_recall": np.where(a_ref > 0, a_hits / np.maximum(a_ref, 1), np.nan),
        }
    )
