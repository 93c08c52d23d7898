"""Synthetic queries for a corpus without any: generate from passages, filter, dedupe, write.

A user with a corpus and no queries gets candidate queries from an LLM, one per sampled passage,
in the style their users write (:data:`STYLES`):

``keyword``
    2 to 6 lower-case words, what a search box receives;
``question``
    one natural question ending in ``?``;
``conversational``
    a chat user's message, one or two casual sentences.

Then three steps keep the usable ones:

1. **generation** (:class:`QueryGenerator`) through a :class:`~ragnb.llm.ChatClient`, its
   retries, cache and cost ledger (stage :data:`QUERYGEN_STAGE`), with a shipped prompt
   per style (``ragnb/prompts/querygen-<style>.en.yaml``, editable: pass a path) whose answer is
   the one line ``1. <query>`` (the strict ``numbered_list`` parser). With ``grammar=True``
   each call also carries a llama.cpp GBNF grammar (the ``grammar`` request field of llama.cpp's
   servers, what their JSON-schema mode compiles to) that admits only ``1. <query>`` of the style's
   shape, which a 135M-parameter model needs to answer in format at all. A call that gets no
   answer is ``failed`` and never cached: the next run sends it again.
2. **round-trip filter** (:func:`round_trip`): a query is kept only when a retriever other
   than the ones being evaluated (default BM25) ranks its source passage in the top ``k``:
   Promptagator's consistency filtering [2]_ (the round-trip consistency of Alberti et al.
   [3]_); InPars [1]_ filters its generated queries too (by the generator's log-probability).
   The filter favours the filtering retriever's own kind of match: keep it out of the
   comparison, or say so.
3. **near-duplicate removal** (:func:`dedupe`): on normalised text (NFKC, lower case,
   punctuation dropped, white space collapsed), a query whose word set has a Jaccard similarity
   of at least ``threshold`` (default 0.8) with an earlier kept query is a duplicate of it.

:func:`write_synthetic` writes a BEIR folder: ``queries.jsonl`` (``_id``, ``text``,
``metadata: {"synthetic": true, "source_doc", "style", "model"}``), ``qrels/synthetic.tsv``
(each query with its source passage, grade 1), ``recipe.json`` (``"synthetic": true``, the
generator, the filter, the counts) and the corpus as a symbolic link. :func:`is_synthetic` and
:func:`synthetic_notice` let a report say on its first screen that its queries are synthetic.

References
----------
.. [1] Bonifacio, Abonizio, Fadaee, Nogueira, "InPars: Unsupervised Dataset Generation for
   Information Retrieval", SIGIR 2022 (arXiv 2202.05144): queries generated from sampled
   documents by a prompted LLM, then filtered.
.. [2] Dai, Zhao, Ma, Luan, Ni, Lu, Bakalov, Guu, Hall, Chang, "Promptagator: Few-shot Dense
   Retrieval From 8 Examples", ICLR 2023 (arXiv 2209.11755), section 3.2: round-trip
   consistency filtering, a generated query kept only if its source passage is retrieved in
   the top K.
.. [3] Alberti, Andor, Pitler, Devlin, Collins, "Synthetic QA Corpora Generation with Roundtrip
   Consistency", ACL 2019.
"""

from __future__ import annotations

import os
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.io.files import read_json, read_records, write_json, write_jsonl
from ragnb.llm.client import ChatClient
from ragnb.llm.prompts import PromptTemplate, load_prompt

if TYPE_CHECKING:
    from ragnb.retrievers.retrieve import Retriever

__all__ = [
    "GENERATED_COLUMNS",
    "QUERYGEN_STAGE",
    "STYLES",
    "SYNTHETIC_SPLIT",
    "QueryGenerator",
    "SyntheticQueries",
    "dedupe",
    "is_synthetic",
    "normalise_query",
    "read_query_metadata",
    "round_trip",
    "sample_passages",
    "style_grammar",
    "synthesize_queries",
    "synthetic_notice",
    "write_synthetic",
]

#: The ledger stage of query generation calls.
QUERYGEN_STAGE = "querygen"
#: Query styles, each with a shipped prompt ``querygen-<style>`` and a grammar.
STYLES = ("keyword", "question", "conversational")
#: Name of the qrels split written beside synthetic queries.
SYNTHETIC_SPLIT = "synthetic"

# llama.cpp GBNF: the one line "1. <query>" in each style's shape. Characters are ASCII
# letters, digits and common punctuation so a small model cannot wander into other scripts.
_GRAMMARS = {
    "keyword": 'root ::= "1. " w (" " w){1,5}\nw ::= [a-z] [a-z0-9-]{1,24}',
    "question": ('root ::= "1. " [A-Z] c{8,160} "?"\nc ::= [a-zA-Z0-9 ,;:\'()/%+-]'),
    "conversational": ('root ::= "1. " [A-Z] c{15,220} [.?!]\nc ::= [a-zA-Z0-9 ,;:\'()/%+?!.-]'),
}

_WORDS = re.compile(r"\w+")


def style_grammar(style: str) -> str:
    """The llama.cpp GBNF grammar admitting only ``1. <query>`` in ``style``'s shape.

    Parameters
    ----------
    style : {"keyword", "question", "conversational"}

    Returns
    -------
    str
        ``keyword``: 2 to 6 lower-case words, each starting with a letter; ``question``: a
        capital, 8 to 160 characters, ``?``; ``conversational``: a capital, 15 to 220
        characters, then ``.``, ``?`` or ``!``.

    Raises
    ------
    InputError
        On an unknown style.

    References
    ----------
    llama.cpp ``grammars/README.md`` (GBNF); llama.cpp's servers take it as the ``grammar``
    field of a chat completion request.
    """
    _check_style(style)
    return _GRAMMARS[style]


def _check_style(style: Any) -> str:
    if style not in STYLES:
        raise InputError(f"unknown query style {style!r}; use one of {list(STYLES)}")
    return str(style)


def normalise_query(text: str) -> str:
    """NFKC, lower case, every run of non-word characters a single space, stripped.

    Examples
    --------
    >>> normalise_query("  What is   BM25's k1? ")
    'what is bm25 s k1'
    """
    return " ".join(_WORDS.findall(unicodedata.normalize("NFKC", str(text)).lower()))


def _clean(text: str) -> str:
    """The generated query without surrounding quotes or white space."""
    return str(text).strip().strip("\"'`").strip()


class QueryGenerator:
    """One query per passage from an LLM, through a :class:`~ragnb.llm.ChatClient`.

    Uses the client's retries, cache and ledger (stage :data:`QUERYGEN_STAGE`), like
    :class:`~ragnb.rewrite.LLMRewriter`; each call's cache key holds the model, the prompt, the
    client's parameters and this generator's (``max_tokens``, the grammar).

    Parameters
    ----------
    client : ChatClient
        Its ``model`` writes the queries (a judge's client, ``OpenAIJudge.client``, will do).
    prompts : mapping of style to str, PathLike or PromptTemplate, optional
        Override the shipped ``querygen-<style>`` prompt of a style (an ``extract`` template
        with a ``{passage}`` field and a ``numbered_list`` answer).
    grammar : bool, default False
        Send :func:`style_grammar` as the ``grammar`` request field (llama.cpp servers only:
        OpenAI's API rejects the field, and the calls then fail).
    max_tokens : int or None, default 64
        The answer's length cap, tokens (``max_tokens`` in the request body); None sends none.
    max_passage_chars : int, default 1200
        Passages are cut to this many characters (title first) in the prompt; the filter
        retrieves the whole document.

    Attributes
    ----------
    generator_id : str
        ``"querygen:<model>"``, written into the queries' metadata as ``model``.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        prompts: dict[str, Any] | None = None,
        grammar: bool = False,
        max_tokens: int | None = 64,
        max_passage_chars: int = 1200,
    ) -> None:
        if not isinstance(client, ChatClient):
            raise InputError(f"QueryGenerator needs a ragnb.llm.ChatClient, got {client!r}")
        max_tokens = check_positive_int(max_tokens, "max_tokens", allow_none=True)
        if type(max_passage_chars) is not int or max_passage_chars < 50:
            raise InputError(f"max_passage_chars must be an integer >= 50: {max_passage_chars!r}")
        self.client = client
        self.model = client.model
        self.grammar = bool(grammar)
        self.max_tokens = max_tokens
        self.max_passage_chars = max_passage_chars
        self.templates: dict[str, PromptTemplate] = {}
        given = dict(prompts or {})
        for style in given:
            _check_style(style)
        for style in STYLES:
            tpl = load_prompt(given.get(style, f"querygen-{style}"))
            if (
                tpl.kind != "extract"
                or tpl.answer != "numbered_list"
                or "passage" not in tpl.fields
            ):
                raise InputError(
                    f"query prompt {tpl.id} must be an extract prompt with a numbered_list "
                    "answer and a {passage} field"
                )
            self.templates[style] = tpl
        self.generator_id = f"querygen:{self.model}"

    def describe(self) -> dict[str, Any]:
        """JSON-safe settings, for the recipe of a synthetic dataset."""
        return {
            "generator_id": self.generator_id,
            "model": self.model,
            "prompts": {s: t.id for s, t in self.templates.items()},
            "grammar": self.grammar,
            "max_tokens": self.max_tokens,
            "max_passage_chars": self.max_passage_chars,
            "client_params": self.client.params,
        }

    def _call(self, style: str, passage: str, item: str) -> Any:
        params: dict[str, Any] = {}
        body: dict[str, Any] = {}
        if self.max_tokens is not None:
            params["max_tokens"] = body["max_tokens"] = self.max_tokens
        if self.grammar:
            params["grammar"] = body["grammar"] = style_grammar(style)
        return self.client.make_call(
            self.templates[style],
            {"passage": passage},
            item=item,
            query_id=item,
            params=params,
            body=body,
        )

    def generate(
        self, passages: pd.DataFrame, style: str | Sequence[str] = "question"
    ) -> pd.DataFrame:
        """One candidate query per passage.

        Parameters
        ----------
        passages : DataFrame
            Columns ``doc_id``, ``text`` and optionally ``title`` (a corpus frame, or its
            sample: :func:`sample_passages`).
        style : str or sequence of str, default "question"
            One style for every passage, or styles given to the passages in turn (passage i
            gets ``style[i % len(style)]``).

        Returns
        -------
        DataFrame
            One row per passage, in order: ``query_id`` (``syn-<style>-<doc_id>``), ``doc_id``,
            ``style``, ``text`` (the query; missing when not valid), ``valid``, ``status``
            (``ok``, ``invalid``, ``failed``), ``reason``, ``raw`` (the answer as received),
            ``cached``, ``attempts``, ``input_tokens``, ``output_tokens``, ``model``,
            ``prompt`` (template id).

        Raises
        ------
        InputError
            On missing columns, a passage given twice, or an unknown style.
        JudgeUnavailable
            When the client's circuit breaker stopped the job (every answer received is cached).
        """
        styles = [style] if isinstance(style, str) else list(style)
        if not styles:
            raise InputError("style must name at least one style")
        for s in styles:
            _check_style(s)
        for col in ("doc_id", "text"):
            if col not in passages.columns:
                raise InputError(f"passages need a {col!r} column", column=col)
        repeated = passages["doc_id"].astype(str).duplicated()
        if repeated.any():
            doc = passages["doc_id"].astype(str)[repeated].iloc[0]
            raise InputError(f"passage {doc!r} is given twice (one query per passage)")
        titles = passages["title"] if "title" in passages.columns else pd.Series("", passages.index)
        rows, calls = [], []
        for i, (doc, title, text) in enumerate(
            zip(passages["doc_id"], titles.fillna(""), passages["text"].fillna(""), strict=True)
        ):
            s = styles[i % len(styles)]
            passage = f"{title}. {text}" if str(title).strip() else str(text)
            qid = f"syn-{s}-{doc}"
            calls.append(self._call(s, passage[: self.max_passage_chars], qid))
            rows.append({"query_id": qid, "doc_id": str(doc), "style": s, "passage": passage})
        results = self.client.run(calls, stage=QUERYGEN_STAGE, kind="extract") if calls else []
        out = []
        for row, c, r in zip(rows, calls, results, strict=True):
            text, valid, status, reason = None, bool(r.valid), r.status, r.reason or ""
            if valid:
                text, why = _check_query(r.value, row.pop("passage"))
                if why:
                    text, valid, status, reason = None, False, "invalid", why
            row.pop("passage", None)
            out.append(
                {
                    **row,
                    "text": text,
                    "valid": valid,
                    "status": status,
                    "reason": reason,
                    "raw": r.raw,
                    "cached": bool(r.cached),
                    "attempts": int(r.attempts),
                    "input_tokens": int(r.input_tokens),
                    "output_tokens": int(r.output_tokens),
                    "model": self.model,
                    "prompt": c.template.id,
                }
            )
        return pd.DataFrame(out, columns=GENERATED_COLUMNS)


GENERATED_COLUMNS = [
    "query_id",
    "doc_id",
    "style",
    "text",
    "valid",
    "status",
    "reason",
    "raw",
    "cached",
    "attempts",
    "input_tokens",
    "output_tokens",
    "model",
    "prompt",
]


def _check_query(value: Any, passage: str) -> tuple[str | None, str]:
    """``(query, "")`` for a usable answer, else ``(None, why)``: one line, two words or more,
    and not a copy of the passage (six words or more found verbatim in it)."""
    items = list(value) if isinstance(value, list | tuple) else [value]
    if len(items) != 1:
        return None, f"expected one query, got {len(items)} lines"
    text = _clean(items[0])
    norm = normalise_query(text)
    if len(norm.split()) < 2:
        return None, f"fewer than two words: {text[:60]!r}"
    if len(norm.split()) >= 6 and f" {norm} " in f" {normalise_query(passage)} ":
        return None, "copies a span of the passage"
    return text, ""


def sample_passages(
    corpus: pd.DataFrame, n: int, *, seed: int = 0, min_chars: int = 40
) -> pd.DataFrame:
    """``n`` documents drawn without replacement, those with at least ``min_chars`` of text.

    Parameters
    ----------
    corpus : DataFrame
        ``doc_id``, ``title``, ``text`` (:func:`ragnb.io.readers.read_corpus`).
    n : int
        Passages wanted; fewer when the corpus has fewer eligible documents.
    seed : int, default 0
        numpy ``default_rng`` seed: the same seed draws the same passages.
    min_chars : int, default 40
        Shorter texts say too little to ask about.

    Returns
    -------
    DataFrame
        The drawn rows, in the draw's order, index reset.
    """
    n = check_positive_int(n, "n")
    eligible = corpus[corpus["text"].fillna("").astype(str).str.len() >= min_chars]
    if eligible.empty:
        raise InputError(f"no document of the corpus has {min_chars} characters of text")
    rng = np.random.default_rng(seed)
    take = rng.choice(len(eligible), size=min(n, len(eligible)), replace=False)
    return eligible.iloc[take].reset_index(drop=True)


def round_trip(
    candidates: pd.DataFrame,
    retriever: str | Retriever = "bm25",
    *,
    corpus: pd.DataFrame | None = None,
    k: int = 20,
) -> pd.DataFrame:
    """Round-trip consistency: is each valid query's source passage in the retriever's top k?

    Parameters
    ----------
    candidates : DataFrame
        :meth:`QueryGenerator.generate`'s frame (``query_id``, ``doc_id``, ``text``, ``valid``).
    retriever : str or Retriever, default "bm25"
        A name for :func:`ragnb.retrievers.retrieve.make_retriever` or a retriever; it must not be
        one of the systems the queries will compare (the filter favours its kind of match).
    corpus : DataFrame, optional
        Indexed first when given; otherwise ``retriever`` must be indexed already.
    k : int, default 20
        Depth at which the source passage must be found.

    Returns
    -------
    DataFrame
        ``candidates`` with ``source_rank`` (1-based rank of the source passage, NaN when not
        in the top k or the query is not valid) and ``round_trip`` (bool).

    References
    ----------
    .. [1] Dai et al., "Promptagator", ICLR 2023, section 3.2 (round-trip filtering).
    .. [2] Alberti et al., ACL 2019 (roundtrip consistency).
    """
    from ragnb.retrievers.retrieve import make_retriever

    k = check_positive_int(k, "k")
    r = make_retriever(retriever) if isinstance(retriever, str) else retriever
    if corpus is not None:
        r.index(corpus)
    out = candidates.copy()
    valid = out[out["valid"].astype(bool) & out["text"].notna()]
    ranks: dict[str, int] = {}
    if not valid.empty:
        run = r.retrieve(valid[["query_id", "text"]].reset_index(drop=True), k=k)
        source = dict(zip(valid["query_id"], valid["doc_id"].astype(str), strict=True))
        hit = run[run["doc_id"].astype(str) == run["query_id"].map(source)]
        ranks = dict(zip(hit["query_id"], hit["rank"].astype(int), strict=True))
    out["source_rank"] = out["query_id"].map(ranks).astype(float)
    out["round_trip"] = out["source_rank"].notna()
    return out


def dedupe(
    queries: pd.DataFrame, *, threshold: float = 0.8, among: pd.Series | None = None
) -> pd.DataFrame:
    """Mark near-duplicate queries: same normalised text, or word-set Jaccard >= ``threshold``.

    Queries are taken in order; each is compared with the queries kept before it, and a match
    makes it a duplicate of the first one matched.

    Parameters
    ----------
    queries : DataFrame
        ``query_id``, ``text``.
    threshold : float in (0, 1], default 0.8
        Jaccard similarity |A & B| / |A | B| of the normalised word sets
        (:func:`normalise_query`) at or above which two queries are duplicates; 1 keeps only
        exact duplicates of the word set.
    among : Series of bool, optional
        The rows taking part (default all rows with a text); the others get no mark.

    Returns
    -------
    DataFrame
        ``queries`` with ``duplicate_of`` (the query id kept, or None).

    Examples
    --------
    >>> q = pd.DataFrame({"query_id": ["a", "b", "c"],
    ...                   "text": ["What is BM25?", "what is bm25", "How does BM25 rank?"]})
    >>> dedupe(q)["duplicate_of"].tolist()
    [None, 'a', None]
    """
    if not 0 < threshold <= 1:
        raise InputError(f"threshold must be in (0, 1], got {threshold!r}")
    out = queries.copy()
    take = out["text"].notna() if among is None else (among.astype(bool) & out["text"].notna())
    kept: list[tuple[str, str, frozenset[str]]] = []
    by_word: dict[str, list[int]] = {}
    dup: list[str | None] = [None] * len(out)
    for pos, (qid, text, use) in enumerate(zip(out["query_id"], out["text"], take, strict=True)):
        if not use:
            continue
        norm = normalise_query(text)
        words = frozenset(norm.split())
        seen = sorted({i for w in words for i in by_word.get(w, ())})
        match = next(
            (
                kept[i][0]
                for i in seen
                if kept[i][1] == norm
                or len(words & kept[i][2]) / max(1, len(words | kept[i][2])) >= threshold
            ),
            None,
        )
        if match is not None:
            dup[pos] = match
            continue
        for w in words:
            by_word.setdefault(w, []).append(len(kept))
        kept.append((str(qid), norm, words))
    out["duplicate_of"] = pd.Series(dup, index=out.index, dtype=object)
    return out


@dataclass
class SyntheticQueries:
    """Synthetic queries and how they were made.

    Attributes
    ----------
    candidates : DataFrame
        Every generated row (:meth:`QueryGenerator.generate`) with ``source_rank``,
        ``round_trip``, ``duplicate_of`` and ``kept``.
    generator : dict
        :meth:`QueryGenerator.describe`.
    filter : dict
        ``retriever``, ``k``, ``dedupe`` (``"word-set Jaccard >= t on normalised text"``).
    """

    candidates: pd.DataFrame
    generator: dict[str, Any]
    filter: dict[str, Any] = field(default_factory=dict)

    @property
    def queries(self) -> pd.DataFrame:
        """The kept queries: ``query_id``, ``text``, ``source_doc``, ``style``, ``model``."""
        kept = self.candidates[self.candidates["kept"]]
        return pd.DataFrame(
            {
                "query_id": kept["query_id"].to_numpy(),
                "text": kept["text"].to_numpy(),
                "source_doc": kept["doc_id"].to_numpy(),
                "style": kept["style"].to_numpy(),
                "model": kept["model"].to_numpy(),
            }
        )

    @property
    def qrels(self) -> pd.DataFrame:
        """Each kept query with its source passage, grade 1: ``query_id``, ``doc_id``,
        ``relevance``."""
        q = self.queries
        return pd.DataFrame({"query_id": q["query_id"], "doc_id": q["source_doc"], "relevance": 1})

    def stats(self) -> dict[str, Any]:
        """Counts and shares of the pipeline.

        Returns
        -------
        dict
            ``generated`` (calls), ``failed``, ``valid``, ``round_trip`` (valid queries whose
            source came back in the top k), ``pass_rate`` (round_trip / valid, NaN when none is
            valid), ``duplicates`` (among those), ``duplicate_share`` (duplicates /
            round_trip), ``kept``, ``input_tokens``, ``output_tokens``, ``cached`` (answers
            from the cache), ``by_style`` (kept per style).
        """
        c = self.candidates
        valid = int(c["valid"].sum())
        passed = int(c["round_trip"].sum())
        dups = int((c["round_trip"] & c["duplicate_of"].notna()).sum())
        return {
            "generated": len(c),
            "failed": int((c["status"] == "failed").sum()),
            "valid": valid,
            "round_trip": passed,
            "pass_rate": passed / valid if valid else float("nan"),
            "duplicates": dups,
            "duplicate_share": dups / passed if passed else float("nan"),
            "kept": int(c["kept"].sum()),
            "input_tokens": int(c["input_tokens"].sum()),
            "output_tokens": int(c["output_tokens"].sum()),
            "cached": int(c["cached"].sum()),
            "by_style": {str(k): int(v) for k, v in c[c["kept"]]["style"].value_counts().items()},
        }


def synthesize_queries(
    generator: QueryGenerator,
    corpus: pd.DataFrame,
    *,
    n: int = 200,
    style: str | Sequence[str] = STYLES,
    seed: int = 0,
    retriever: str | Retriever = "bm25",
    k: int = 20,
    threshold: float = 0.8,
    passages: pd.DataFrame | None = None,
    time_budget_s: float | None = None,
    chunk: int = 10,
) -> SyntheticQueries:
    """Generate, round-trip filter and dedupe: :class:`QueryGenerator`, :func:`round_trip`,
    :func:`dedupe` in a row.

    Parameters
    ----------
    generator : QueryGenerator
    corpus : DataFrame
        The whole corpus: the filter searches it.
    n : int, default 200
        Passages sampled (:func:`sample_passages`), one candidate each; fewer queries survive.
    style : str or sequence of str, default all of :data:`STYLES` in turn
    seed : int, default 0
    retriever : str or Retriever, default "bm25"
        The filter's retriever (indexed on ``corpus`` here).
    k : int, default 20
    threshold : float, default 0.8
        :func:`dedupe`'s Jaccard threshold.
    passages : DataFrame, optional
        Use these passages instead of a sample.
    time_budget_s : float, optional
        Wall-clock seconds for generation: passages are sent ``chunk`` at a time and no new
        chunk starts once the budget is spent (the passages not reached get no query; a rerun
        finds the answers so far in the cache and goes on). None: every passage.
    chunk : int, default 10
        Passages per generation batch under a time budget.

    Returns
    -------
    SyntheticQueries
        ``filter["passages"]`` counts the passages sent, ``filter["seconds"]`` the generation
        time.
    """
    chosen = sample_passages(corpus, n, seed=seed) if passages is None else passages
    styles = [style] if isinstance(style, str) else list(style)
    start = time.monotonic()
    parts: list[pd.DataFrame] = []
    for i in range(0, len(chosen), chunk if time_budget_s is not None else max(1, len(chosen))):
        if time_budget_s is not None and parts and time.monotonic() - start > time_budget_s:
            break
        block = chosen.iloc[i : i + (chunk if time_budget_s is not None else len(chosen))]
        # passage i keeps style i of the whole sample, whatever the chunking
        turn = [styles[(i + j) % len(styles)] for j in range(len(block))]
        parts.append(generator.generate(block, turn))
    generated = pd.concat(parts, ignore_index=True) if parts else generator.generate(chosen[:0])
    seconds = time.monotonic() - start
    filtered = round_trip(generated, retriever, corpus=corpus, k=k)
    marked = dedupe(filtered, threshold=threshold, among=filtered["round_trip"])
    marked["kept"] = marked["round_trip"] & marked["duplicate_of"].isna()
    name = retriever if isinstance(retriever, str) else getattr(retriever, "name", "retriever")
    return SyntheticQueries(
        marked,
        generator.describe(),
        {
            "retriever": name,
            "k": k,
            "dedupe": f"word-set Jaccard >= {threshold} on normalised text",
            "seed": seed,
            "passages": len(generated),
            "seconds": round(seconds, 1),
        },
    )


def write_synthetic(
    result: SyntheticQueries,
    folder: str | os.PathLike[str],
    *,
    corpus_path: str | os.PathLike[str] | None = None,
) -> Path:
    """Write synthetic queries as a BEIR folder (files written atomically).

    Parameters
    ----------
    result : SyntheticQueries
    folder : str or PathLike
        Created if needed. Receives ``queries.jsonl`` (``_id``, ``text``, ``metadata``:
        ``{"synthetic": true, "source_doc", "style", "model"}``), ``qrels/synthetic.tsv``
        (BEIR form, grade 1 for each query's source passage), ``recipe.json`` (``synthetic:
        true``, generator, filter, stats).
    corpus_path : str or PathLike, optional
        The corpus file, linked (a symbolic link, never a copy) as ``corpus.jsonl``, so that
        ``ragnb.io.files.read_beir(folder, split="synthetic")`` reads the whole dataset.

    Returns
    -------
    Path
        The folder.
    """
    from ragnb.io.files import write_qrels

    out = Path(folder)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    q = result.queries
    records = [
        {
            "_id": qid,
            "text": text,
            "metadata": {"synthetic": True, "source_doc": doc, "style": style, "model": model},
        }
        for qid, text, doc, style, model in zip(
            q["query_id"], q["text"], q["source_doc"], q["style"], q["model"], strict=True
        )
    ]
    write_jsonl(records, out / "queries.jsonl")
    write_qrels(result.qrels, out / "qrels" / f"{SYNTHETIC_SPLIT}.tsv", form="beir")
    stats = result.stats()
    recipe = {
        "synthetic": True,
        "built_by": "ragnb.studies.retrieval.querygen",
        "split": SYNTHETIC_SPLIT,
        "generator": result.generator,
        "filter": result.filter,
        "stats": {
            k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in stats.items()
        },
    }
    write_json(recipe, out / "recipe.json")
    if corpus_path is not None:
        link = out / "corpus.jsonl"
        target = Path(corpus_path).resolve()
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    return out


def read_query_metadata(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The provenance of each query of a BEIR ``queries.jsonl`` (or of the folder holding it).

    Returns
    -------
    DataFrame
        ``query_id``, ``synthetic`` (bool: ``metadata.synthetic`` is true), ``source_doc``,
        ``style``, ``model`` (None where absent); file order.

    Raises
    ------
    InputError
        On malformed JSON (file and line).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "queries.jsonl"
    records = read_records(p)
    ids = records["_id"] if "_id" in records.columns else pd.Series([None] * len(records))
    metas = records["metadata"] if "metadata" in records.columns else [None] * len(records)
    rows = []
    for qid, meta in zip(ids, metas, strict=True):
        meta = meta if isinstance(meta, dict) else {}
        rows.append(
            {
                "query_id": None if pd.isna(qid) else str(qid),
                "synthetic": meta.get("synthetic") is True,
                "source_doc": meta.get("source_doc"),
                "style": meta.get("style"),
                "model": meta.get("model"),
            }
        )
    return pd.DataFrame(rows, columns=["query_id", "synthetic", "source_doc", "style", "model"])


def is_synthetic(source: Any) -> bool:
    """True when the queries are (at least partly) synthetic.

    Parameters
    ----------
    source : str, PathLike, BeirDataset or DataFrame
        A BEIR folder or ``queries.jsonl`` (read for ``metadata.synthetic``, and the folder's
        ``recipe.json`` for ``"synthetic": true``), a loaded
        :class:`~ragnb.io.files.BeirDataset` (its ``meta``, then its folder), or a frame with a
        ``synthetic`` column (:func:`read_query_metadata`, :attr:`SyntheticQueries.queries`
        counts as synthetic through its ``source_doc`` column).
    """
    if isinstance(source, pd.DataFrame):
        if "synthetic" in source.columns:
            return bool(source["synthetic"].astype(bool).any())
        return "source_doc" in source.columns and len(source) > 0
    meta = getattr(source, "meta", None)
    if isinstance(meta, dict) and meta.get("synthetic") is True:
        return True
    path = Path(getattr(source, "path", source))
    folder = path if path.is_dir() else path.parent
    recipe = folder / "recipe.json"
    if recipe.is_file():
        data = read_json(recipe)
        if isinstance(data, dict) and data.get("synthetic") is True:
            return True
    queries = path / "queries.jsonl" if path.is_dir() else path
    return queries.is_file() and bool(read_query_metadata(queries)["synthetic"].any())


def synthetic_notice(source: Any) -> str | None:
    """The first-screen sentence of a report whose queries are synthetic, or None.

    Parameters
    ----------
    source : str, PathLike or BeirDataset
        As for :func:`is_synthetic`.

    Returns
    -------
    str or None
        E.g. "These 143 queries are synthetic: generated by smollm2-135m-instruct from
        sampled passages (styles keyword, question, conversational), kept when bm25 found
        their source passage in its top 20. Rankings on them need not match rankings on
        real users' queries." None when the queries are not synthetic.
    """
    if not is_synthetic(source):
        return None
    path = Path(getattr(source, "path", source))
    folder = path if path.is_dir() else path.parent
    queries = folder / "queries.jsonl"
    meta = read_query_metadata(queries) if queries.is_file() else pd.DataFrame()
    recipe = read_json(folder / "recipe.json") if (folder / "recipe.json").is_file() else {}
    syn = meta[meta["synthetic"]] if not meta.empty else meta
    models = ", ".join(sorted({str(m) for m in syn.get("model", []) if m})) or "an LLM"
    styles = ", ".join(s for s in STYLES if not syn.empty and s in set(syn["style"]))
    filt = recipe.get("filter", {}) if isinstance(recipe, dict) else {}
    share = f"{len(syn)} of the {len(meta)}" if len(syn) < len(meta) else f"{len(syn)}"
    n = f" {share}" if len(syn) else ""
    verb = "query is" if len(meta) == 1 else "queries are"
    text = f"{'This' if len(meta) == 1 else 'These'}{n} {verb} synthetic: generated by {models}"
    text += " from sampled passages"
    text += f" (styles {styles})" if styles else ""
    if filt.get("retriever") and filt.get("k"):
        text += f", kept when {filt['retriever']} found their source passage in its top {filt['k']}"
    return text + ". Rankings on them need not match rankings on real users' queries."
