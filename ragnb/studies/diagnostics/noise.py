"""Conversational noise: a seeded noise generator, a rule-based denoiser, and what noise costs.

Noise levels
------------
Dallaire (section 4.4, Appendix A.4) reports levels 0 (no noise), 2 (moderate) and 4 (high) and
shows one example of each; levels 1 and 3 are not described. Here each level adds components to
the previous one, so level ``l + 1`` contains level ``l``'s text and is strictly longer:

===== ========================= ===================================================================
level adds                      English example (core: "Can forests regulate the climate?")
===== ========================= ===================================================================
0     nothing (the clean query) ``Can forests regulate the climate?``
1     a greeting                ``Hi! Can forests regulate the climate?``
2     a filler lead-in          ``Hi! Quick question: Can forests regulate the climate?``
3     an apology and a closing  ``Hi! Sorry to bother you. Quick question: Can forests ... Thanks!``
4     a personal digression     ``Hi! Sorry to bother you. I'm on the train right now... 😅 Quick
      and emoji                 question: Can forests regulate the climate? Thanks! 🙏``
===== ========================= ===================================================================

Level 2 is the paper's "moderate" example ("Hi! Quick question: ..."); level 4 its "high" one
(greeting, apology, "I'm on the train...", the question). The paper's examples also reword the
question; here the core is kept verbatim so the denoiser can be checked against it. Each
component is drawn from a short list of phrasings (:data:`PHRASES`, English and French) by a
generator seeded with ``(seed, language, query)``, once for all levels.

Mitigation
----------
:func:`denoise` strips greetings, filler lead-ins, apologies, first-person asides that end in an
ellipsis, closings and emoji with regular expressions that describe the *kind* of phrase (not a
lookup of :data:`PHRASES`). Any ``rewrite`` callable (``text -> str or None``, e.g.
``functools.partial(denoise, language="fr")``, or :class:`ragnb.rewrite.LLMRewriter`, whose
``many`` method is used when present) can be passed to :func:`noise_similarity` and
:func:`noise_retrieval_impact`; the share of the drop it recovers is
``(score_denoised - score_noisy) / (score_clean - score_noisy)`` (:func:`recovered_share`).

References
----------
Dallaire, "Practical RAG evaluation" (arXiv 2511.09545), section 4.4 (conversational noise
stress tests, section 4.4.1 on rewriting), Appendix A.4 (Tables 12 and 13), section 4.1
(paired designs, bootstrap CIs, overlap@K and Kendall's tau).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import l2_normalise, require_columns
from ragnb.errors import InputError
from ragnb.rewrite import denoise_query
from ragnb.studies.diagnostics.names import Embedder, check_language

__all__ = [
    "LEVELS",
    "PHRASES",
    "NoiseImpact",
    "add_noise",
    "denoise",
    "noise_retrieval_impact",
    "noise_similarity",
    "noise_summary",
    "prompt_rewriter",
    "recovered_share",
    "reference_passages",
    "subset_dataset",
]

LEVELS: tuple[int, ...] = (0, 1, 2, 3, 4)

PHRASES: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "greeting": ("Hi!", "Hello!", "Hey there!", "Hi everyone,", "Good morning!"),
        "filler": (
            "Quick question:",
            "So, um,",
            "Okay so, basically,",
            "I was wondering:",
            "Just curious:",
        ),
        "apology": (
            "Sorry to bother you.",
            "Sorry if this is a silly question.",
            "Apologies for the random question.",
            "Sorry for the kinda random question.",
        ),
        "digression": (
            "I'm on the train right now...",
            "My coffee just went cold...",
            "I've been stuck on this all day...",
            "It's been a long week...",
        ),
        "closing": ("Thanks!", "Thanks in advance!", "Any help appreciated!", "Cheers!"),
        "emoji": ("😅", "🙏", "🙂", "🤔", "☕"),
    },
    "fr": {
        "greeting": ("Bonjour !", "Salut !", "Coucou !", "Bonsoir !", "Bonjour à tous,"),
        "filler": (
            "Petite question :",
            "Alors, euh,",
            "Du coup,",
            "Je me demandais :",
            "Juste par curiosité :",
        ),
        "apology": (
            "Désolé de vous déranger.",
            "Pardon si la question est bête.",
            "Excusez-moi pour la question un peu bizarre.",
            "Désolée pour la question un peu random.",
        ),
        "digression": (
            "Je suis dans le train là...",
            "Mon café vient de refroidir...",
            "Je bloque là-dessus depuis ce matin...",
            "Ma semaine a été longue...",
        ),
        "closing": (
            "Merci !",
            "Merci d'avance !",
            "Toute aide est la bienvenue !",
            "Bonne journée !",
        ),
        "emoji": ("😅", "🙏", "🙂", "🤔", "☕"),
    },
}
"""Phrasings of each noise component, per language."""


def _check_level(level: int) -> int:
    if isinstance(level, bool) or not isinstance(level, int | np.integer) or level not in LEVELS:
        raise InputError(f"noise level must be one of {list(LEVELS)}, got {level!r}")
    return int(level)


def _choices(query: str, language: str, seed: int) -> dict[str, str]:
    digest = hashlib.sha256(f"{int(seed)}\x1f{language}\x1f{query}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    out = {}
    for part, options in PHRASES[language].items():
        out[part] = options[int(rng.integers(len(options)))]
    out["emoji2"] = PHRASES[language]["emoji"][int(rng.integers(len(PHRASES[language]["emoji"])))]
    return out


def add_noise(query: str, level: int, language: str = "en", seed: int = 0) -> str:
    """The query wrapped in conversational noise of the given level (module docstring table).

    Parameters
    ----------
    query : str
        The clean query (kept verbatim, outer white space stripped).
    level : int in {0, 1, 2, 3, 4}
        0 returns the clean query.
    language : {"en", "fr"}, default "en"
        Language of the noise phrases.
    seed : int, default 0
        With the query and the language, fixes the phrasings (the same for every level).

    Returns
    -------
    str

    Examples
    --------
    >>> q = "Can forests regulate the climate?"
    >>> lengths = [len(add_noise(q, level, seed=1)) for level in (0, 1, 2, 3, 4)]
    >>> lengths == sorted(set(lengths)), q in add_noise(q, 4, seed=1)
    (True, True)
    """
    check_language(language)
    level = _check_level(level)
    core = str(query).strip()
    if level == 0:
        return core
    c = _choices(core, language, seed)
    head = [c["greeting"]]
    tail: list[str] = []
    if level >= 3:
        head.append(c["apology"])
    if level >= 4:
        head += [c["digression"], c["emoji"]]
    if level >= 2:
        head.append(c["filler"])
    if level >= 3:
        tail.append(c["closing"])
    if level >= 4:
        tail.append(c["emoji2"])
    return " ".join([*head, core, *tail])


# ----------------------------------------------------------------------------- denoiser


def denoise(query: str, language: str = "en") -> str:
    """Strip conversational noise with regular expressions.

    :func:`ragnb.rewrite.denoise_query` with ``rules="trim"`` (the rules are described
    there): removes emoji anywhere; then, repeatedly from the start, greetings, filler lead-ins
    closed by a comma or colon, apologies (to the end of their sentence) and first-person asides
    that end in an ellipsis; then, repeatedly from the end, closings ("Thanks!", "Merci d'avance
    !"). Runs of white space become one space. A removal that would leave nothing is not made.

    Parameters
    ----------
    query : str
        Converted with ``str`` first.
    language : {"en", "fr"}, default "en"

    Returns
    -------
    str

    Raises
    ------
    InputError
        On a language other than ``"en"`` and ``"fr"``.

    Examples
    --------
    >>> denoise("Hello! Sorry to bother you. I'm on the train... 😅 Quick question: "
    ...         "Can forests regulate the climate? Thanks! 🙏")
    'Can forests regulate the climate?'
    """
    check_language(language)
    return denoise_query(str(query), language, rules="trim")


def recovered_share(clean: Any, noisy: Any, denoised: Any) -> Any:
    """Share of the noise drop that a rewrite recovers: ``(denoised - noisy) / (clean - noisy)``.

    1 means the rewrite restores the clean score, 0 no gain, negative a further loss; NaN when
    the noise cost nothing (``clean == noisy``). Works on floats and arrays alike.

    Examples
    --------
    >>> recovered_share(1.0, 0.5, 0.875)
    0.75
    """
    clean, noisy, denoised = (np.asarray(x, dtype=np.float64) for x in (clean, noisy, denoised))
    gap = clean - noisy
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(np.abs(gap) > 1e-12, (denoised - noisy) / gap, np.nan)
    return float(out) if out.ndim == 0 else out


REWRITE_INSTRUCTION = (
    "Extract and restate the core information need of this search query as one short, "
    "self-contained request, in the language of the query. Drop greetings, apologies, fillers, "
    "personal asides and emoji; keep every name, number and technical term.\n\nQuery:\n{query}"
)


def prompt_rewriter(
    complete: Callable[[str], str], instruction: str = REWRITE_INSTRUCTION
) -> Callable[[str], str | None]:
    """A rewrite hook from any ``prompt -> answer`` function (an LLM client's completion).

    The answer's first non-empty line, stripped of a leading "1." and quotes, is the rewrite;
    an empty answer gives None (the caller keeps the noisy text). For the project's chat
    client (:class:`ragnb.llm.ChatClient`, with cache and ledger), use
    :class:`ragnb.rewrite.LLMRewriter` directly.

    Examples
    --------
    >>> rewrite = prompt_rewriter(lambda prompt: "1. Can forests regulate the climate?")
    >>> rewrite("Hi! So, can forests regulate the climate? Thanks!")
    'Can forests regulate the climate?'
    """

    def rewrite(text: str) -> str | None:
        answer = str(complete(instruction.format(query=text)) or "")
        for line in answer.splitlines():
            line = re.sub(r"^\s*1\.\s*", "", line).strip().strip('"“”«» ')
            if line:
                return line
        return None

    return rewrite


def _apply_rewrite(rewrite: Any, texts: Sequence[str]) -> list[str]:
    """Rewritten texts; the input text where the rewrite gives None or an empty string."""
    if hasattr(rewrite, "many"):
        results = [r[0] if isinstance(r, tuple) else r for r in rewrite.many(list(texts))]
    else:
        results = [rewrite(t) for t in texts]
    return [
        r.strip() if isinstance(r, str) and r.strip() else t
        for r, t in zip(results, texts, strict=True)
    ]


# ----------------------------------------------------------------------------- cosine view


def _query_frame(queries: Any) -> pd.DataFrame:
    if isinstance(queries, pd.DataFrame):
        require_columns(queries, ("query_id", "text"), "the queries frame")
        out = queries[["query_id", "text"]].astype(str).reset_index(drop=True)
    else:
        texts = [str(t) for t in queries]
        out = pd.DataFrame({"query_id": [f"q{i}" for i in range(len(texts))], "text": texts})
    if out["query_id"].duplicated().any():
        qid = str(out.loc[out["query_id"].duplicated(), "query_id"].iloc[0])
        raise InputError("duplicate query id", query_id=qid)
    return out


def _reference_list(references: Any, queries: pd.DataFrame) -> list[str]:
    if isinstance(references, pd.Series | Mapping) and not isinstance(references, str):
        refs = dict(references)
        missing = [q for q in queries["query_id"] if q not in refs]
        if missing:
            raise InputError("no reference passage for this query", query_id=str(missing[0]))
        return [str(refs[q]) for q in queries["query_id"]]
    out = [str(r) for r in references]
    if len(out) != len(queries):
        raise InputError(f"{len(out)} references for {len(queries)} queries; give one per query")
    return out


def _levels(levels: Sequence[int]) -> list[int]:
    out = sorted({_check_level(lv) for lv in levels})
    if not out:
        raise InputError("levels is empty")
    return out


def noise_similarity(
    embedder: Embedder,
    queries: pd.DataFrame | Sequence[str],
    references: Sequence[str] | Mapping[str, str] | pd.Series,
    levels: Sequence[int] = LEVELS,
    language: str = "en",
    seed: int = 0,
    *,
    rewrite: Callable[[str], str | None] | None = None,
) -> pd.DataFrame:
    """Cosine of each query, at each noise level, with its reference passage and its clean form.

    Every query text (all levels, the clean forms, and the rewrites) is embedded in one call
    with ``kind="query"``, the references in one call with ``kind="passage"``.

    Parameters
    ----------
    embedder : CachedEmbedder or Embedder
    queries : DataFrame (``query_id``, ``text``) or sequence of str
        Clean queries (ids ``q0``, ``q1``, ... for a plain sequence).
    references : sequence of str (one per query, in order) or {query_id: text}
        A relevant passage per query: the "ideal reference" of Dallaire section 4.4.1.
    levels : sequence of int, default (0, 1, 2, 3, 4)
    language : {"en", "fr"}, default "en"
    seed : int, default 0
    rewrite : callable, optional
        ``text -> str or None`` applied to each noisy query (e.g. :func:`denoise`); adds the
        ``rewritten`` columns.

    Returns
    -------
    DataFrame
        One row per query and level: ``model``, ``language``, ``query_id``, ``level``, ``text``
        (the noisy query), ``n_chars``, ``cos_reference`` (cosine with the reference, in [-1,
        1]), ``cos_clean`` (cosine with the level-0 query; 1 at level 0); with ``rewrite`` also
        ``rewritten`` (text), ``restored`` (bool, rewritten == clean), ``cos_reference_rewritten``.
        Aggregate with :func:`noise_summary`.
    """
    check_language(language)
    lv = _levels(levels)
    q = _query_frame(queries)
    refs = _reference_list(references, q)
    clean = [t.strip() for t in q["text"]]
    noisy = {level: [add_noise(t, level, language, seed) for t in clean] for level in lv}
    texts = list(clean) + [t for level in lv for t in noisy[level]]
    rewritten: dict[int, list[str]] = {}
    if rewrite is not None:
        for level in lv:
            rewritten[level] = _apply_rewrite(rewrite, noisy[level])
            texts += rewritten[level]
    qv = l2_normalise(embedder.embed(texts, kind="query"), np.float64)
    rv = l2_normalise(embedder.embed(refs, kind="passage"), np.float64)
    n = len(clean)
    clean_v = qv[:n]
    model = str(getattr(embedder, "model_id", type(embedder).__name__))
    frames = []
    for j, level in enumerate(lv):
        v = qv[n * (j + 1) : n * (j + 2)]
        part = pd.DataFrame(
            {
                "model": model,
                "language": language,
                "query_id": q["query_id"].to_numpy(),
                "level": level,
                "text": noisy[level],
                "n_chars": [len(t) for t in noisy[level]],
                "cos_reference": np.einsum("nd,nd->n", v, rv),
                "cos_clean": np.einsum("nd,nd->n", v, clean_v),
            }
        )
        if rewrite is not None:
            start = n * (len(lv) + 1) + n * j
            w = qv[start : start + n]
            part["rewritten"] = rewritten[level]
            part["restored"] = [a == b for a, b in zip(rewritten[level], clean, strict=True)]
            part["cos_reference_rewritten"] = np.einsum("nd,nd->n", w, rv)
        frames.append(part)
    return pd.concat(frames, ignore_index=True)


def noise_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean cosines per level, and the drop from level 0 (Dallaire Tables 12 and 13).

    Parameters
    ----------
    frame : DataFrame
        From :func:`noise_similarity` (several models or languages may be concatenated).

    Returns
    -------
    DataFrame
        One row per ``model``, ``language``, ``level``: ``n_queries``, ``n_chars`` (mean),
        ``cos_reference`` (mean, Table 12), ``cos_reference_sd``, ``drop`` (mean at this level
        minus mean at level 0: negative when noise hurts, Table 13), ``drop_pct`` (``100 drop /
        level-0 mean``), ``cos_clean`` (mean); with rewrites also ``restored_share`` (share of
        rewrites equal to the clean query), ``cos_reference_rewritten`` and ``recovered_share``
        (:func:`recovered_share` of the means; NaN at level 0).
    """
    need = {"model", "language", "level", "query_id", "cos_reference", "cos_clean"}
    missing = sorted(need - set(frame.columns))
    if missing:
        raise InputError(f"the frame lacks column(s) {missing}", column=missing[0])
    has_rw = "cos_reference_rewritten" in frame.columns
    rows = []
    for (model, language), g in frame.groupby(["model", "language"], sort=False):
        base = g.loc[g["level"] == 0, "cos_reference"]
        base_mean = float(base.mean()) if len(base) else np.nan
        for level, gl in g.groupby("level", sort=True):
            mean = float(gl["cos_reference"].mean())
            row: dict[str, Any] = {
                "model": model,
                "language": language,
                "level": int(level),
                "n_queries": int(gl["query_id"].nunique()),
                "n_chars": float(gl["n_chars"].mean()) if "n_chars" in gl else np.nan,
                "cos_reference": mean,
                "cos_reference_sd": float(gl["cos_reference"].std(ddof=1)),
                "drop": mean - base_mean,
                "drop_pct": 100.0 * (mean - base_mean) / base_mean,
                "cos_clean": float(gl["cos_clean"].mean()),
            }
            if has_rw:
                rw = float(gl["cos_reference_rewritten"].mean())
                row["restored_share"] = float(gl["restored"].mean()) if "restored" in gl else np.nan
                row["cos_reference_rewritten"] = rw
                row["recovered_share"] = (
                    np.nan if int(level) == 0 else recovered_share(base_mean, mean, rw)
                )
            rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- retrieval view


@dataclass
class NoiseImpact:
    """What noise does to retrieval (:func:`noise_retrieval_impact`).

    Attributes
    ----------
    table : DataFrame
        One row per ``level``, ``condition`` (``"noisy"``; ``"rewritten"`` with a rewrite) and
        ``measure``: ``value`` (mean over the queries), ``delta`` (vs level 0 noisy, i.e. the
        clean queries), ``ci_low``, ``ci_high`` (paired bootstrap interval of ``delta``),
        ``n_queries``, ``recovered_share`` (rewritten rows: share of the level's drop that the
        rewrite recovers). Rows ``overlap@K`` and ``kendall_tau@K`` hold the mean agreement of
        the top K with the clean run's (``delta`` and CI NaN).
    per_query : DataFrame
        ``level``, ``condition``, ``query_id``, ``measure``, ``value``.
    runs : dict of (int, str) to DataFrame
        The run of each (level, condition).
    queries : DataFrame
        ``query_id``, ``level``, ``condition``, ``text``: what was retrieved with.
    """

    table: pd.DataFrame
    per_query: pd.DataFrame
    runs: dict[tuple[int, str], pd.DataFrame] = field(default_factory=dict)
    queries: pd.DataFrame = field(default_factory=pd.DataFrame)


def subset_dataset(dataset: Any, n_queries: int = 20, max_docs: int = 300, seed: int = 0) -> Any:
    """A small copy of a BEIR dataset for quick runs: ``n_queries`` judged queries, their judged
    passages, and other passages drawn at random up to ``max_docs`` (judged ones always kept).

    Returns
    -------
    BeirDataset
        Same ``path`` and ``meta``; ``name`` suffixed with ``-subset``.
    """
    from ragnb.io.files import BeirDataset

    rng = np.random.default_rng(seed)
    judged = dataset.judged_queries
    pick = np.sort(rng.choice(len(judged), size=min(n_queries, len(judged)), replace=False))
    queries = judged.iloc[pick].reset_index(drop=True)
    qrels = dataset.qrels[dataset.qrels["query_id"].isin(set(queries["query_id"]))]
    keep = set(qrels["doc_id"])
    others = [d for d in dataset.corpus["doc_id"] if d not in keep]
    room = max(0, int(max_docs) - len(keep))
    if room and others:
        extra = rng.choice(len(others), size=min(room, len(others)), replace=False)
        keep |= {others[int(i)] for i in extra}
    corpus = dataset.corpus[dataset.corpus["doc_id"].isin(keep)].reset_index(drop=True)
    return BeirDataset(
        dataset.path,
        f"{dataset.name}-subset",
        dataset.split,
        corpus,
        queries,
        qrels.reset_index(drop=True),
        dict(dataset.meta),
    )


def reference_passages(dataset: Any) -> dict[str, str]:
    """One relevant passage per judged query: the highest grade, first in qrels order.

    Returns
    -------
    dict of str to str
        ``{query_id: title + " " + text}`` (:func:`ragnb.retrievers.retrieve.doc_texts`), for the
        references of :func:`noise_similarity`.
    """
    from ragnb.retrievers.retrieve import doc_texts

    texts = dict(zip(dataset.corpus["doc_id"], doc_texts(dataset.corpus), strict=True))
    qrels = dataset.qrels[dataset.qrels["relevance"] > 0].reset_index(drop=True)
    qrels = qrels[qrels["doc_id"].isin(texts)]
    best = qrels.sort_values("relevance", ascending=False, kind="stable")
    best = best.drop_duplicates("query_id")
    order = {q: i for i, q in enumerate(dataset.judged_queries["query_id"])}
    pairs = sorted(
        zip(best["query_id"], best["doc_id"], strict=True), key=lambda p: order.get(p[0], 0)
    )
    return {q: texts[d] for q, d in pairs}


def noise_retrieval_impact(
    retriever: Any,
    dataset: Any,
    levels: Sequence[int] = LEVELS,
    language: str = "en",
    seed: int = 0,
    *,
    k: int = 10,
    measures: Sequence[str] | None = None,
    rewrite: Callable[[str], str | None] | None = None,
    index: bool = True,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
) -> NoiseImpact:
    """Retrieval quality at each noise level vs the clean queries, paired by query.

    Parameters
    ----------
    retriever : Retriever or callable
        A :class:`ragnb.retrievers.retrieve.Retriever` (e.g. a ``DenseRetriever``), or a function of
        no arguments returning one.
    dataset : BeirDataset
        Its judged queries are the clean queries (:func:`subset_dataset` for a quick run).
    levels : sequence of int, default (0, 1, 2, 3, 4)
        Level 0 is always run (the reference).
    language : {"en", "fr"}, default "en"
    seed : int, default 0
        Noise phrasing seed; also the bootstrap seed.
    k : int, default 10
        Cutoff of the default measures and of overlap@K / Kendall's tau.
    measures : sequence of str, optional
        Default ``nDCG@k`` and ``R@k``.
    rewrite : callable, optional
        ``text -> str or None`` applied to each noisy query; adds ``"rewritten"`` rows.
    index : bool, default True
        Index ``dataset.corpus`` first (False when the retriever is already indexed on it).
    n_resamples : int, default 10000
    confidence : float, default 0.95

    Returns
    -------
    NoiseImpact
    """
    from ragnb.evaluation.evaluate import evaluate
    from ragnb.measures import parse_measure

    check_language(language)
    lv = sorted(set(_levels(levels)) | {0})
    if isinstance(retriever, type) or (not hasattr(retriever, "retrieve") and callable(retriever)):
        retriever = retriever()  # a class or a factory
    if not hasattr(retriever, "retrieve"):
        raise InputError(f"expected a Retriever or a factory of one, got {retriever!r}")
    if index:
        retriever.index(dataset.corpus)
    names = [str(parse_measure(m)) for m in (measures or (f"nDCG@{k}", f"R@{k}"))]
    depth = max([k, *(parse_measure(m).cutoff or k for m in names)])
    clean = dataset.judged_queries[["query_id", "text"]].copy()
    clean["text"] = clean["text"].astype(str).str.strip()
    runs: dict[tuple[int, str], pd.DataFrame] = {}
    per_query, used = [], []
    for level, cond, texts in _noise_conditions(list(clean["text"]), lv, language, seed, rewrite):
        qf = pd.DataFrame({"query_id": clean["query_id"].to_numpy(), "text": texts})
        run = retriever.retrieve(qf, k=depth)
        runs[(level, cond)] = run
        res = evaluate(dataset.qrels, run, names)
        per_query.append(res.per_query.assign(level=level, condition=cond))
        used.append(qf.assign(level=level, condition=cond))
    pq = pd.concat(per_query, ignore_index=True)[
        ["level", "condition", "query_id", "measure", "value"]
    ]
    table = _impact_table(pq, runs, names, k, n_resamples, confidence, seed)
    return NoiseImpact(table, pq, runs, pd.concat(used, ignore_index=True))


def _noise_conditions(
    texts: list[str],
    levels: list[int],
    language: str,
    seed: int,
    rewrite: Callable[[str], str | None] | None,
) -> list[tuple[int, str, list[str]]]:
    """``(level, condition, query texts)``: the noisy queries of each level, then their
    rewrites when ``rewrite`` is given."""
    conditions: list[tuple[int, str, list[str]]] = []
    for level in levels:
        noisy = [add_noise(t, level, language, seed) for t in texts]
        conditions.append((level, "noisy", noisy))
        if rewrite is not None:
            conditions.append((level, "rewritten", _apply_rewrite(rewrite, noisy)))
    return conditions


def _impact_table(
    pq: pd.DataFrame,
    runs: dict[tuple[int, str], pd.DataFrame],
    names: list[str],
    k: int,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> pd.DataFrame:
    """:attr:`NoiseImpact.table`: per level and condition, each measure against level 0 with
    its bootstrap interval, overlap@K and Kendall's tau against the level-0 run, and the share
    of the loss a rewrite recovers."""
    from ragnb.stats import paired_bootstrap, top_k_agreement

    ref = pq[(pq["level"] == 0) & (pq["condition"] == "noisy")]
    rows = []
    means: dict[tuple[int, str, str], float] = {}
    for (level, cond), g in pq.groupby(["level", "condition"], sort=True):
        key = {"level": int(level), "condition": cond}
        for m in names:
            a = g[g["measure"] == m].set_index("query_id")["value"]
            b = ref[ref["measure"] == m].set_index("query_id")["value"]
            boot = paired_bootstrap(a, b, n_resamples=n_resamples, confidence=confidence, seed=seed)
            means[(int(level), str(cond), m)] = boot.mean_a
            interval = {"delta": boot.difference, "ci_low": boot.low, "ci_high": boot.high}
            rows.append(
                {**key, "measure": m, "value": boot.mean_a, **interval, "n_queries": boot.n_queries}
            )
        agree = top_k_agreement(runs[(int(level), str(cond))], runs[(0, "noisy")], k=k)
        values = agree.aggregate_to_dict()
        for name in ("overlap", "kendall_tau"):
            no_interval = {"delta": np.nan, "ci_low": np.nan, "ci_high": np.nan}
            rows.append(
                {
                    **key,
                    "measure": f"{name}@{k}",
                    "value": values[name],
                    **no_interval,
                    "n_queries": int(agree.per_query[name].notna().sum()),
                }
            )
    table = pd.DataFrame(rows)
    table["recovered_share"] = np.nan
    for i, row in table.iterrows():
        if row["condition"] == "rewritten" and row["level"] > 0 and row["measure"] in names:
            table.loc[i, "recovered_share"] = recovered_share(
                means[(0, "noisy", row["measure"])],
                means[(row["level"], "noisy", row["measure"])],
                row["value"],
            )
    return table
