"""The golden-set pipeline behind notebook 02: Dallaire's six stages as DataFrame stages.

Stages
------
===== ====================== =====================================================================
stage output (``stages/``)   what it does
===== ====================== =====================================================================
S1    ``s1_queries``         Unicode NFC normalisation of each query; optionally a rewrite
                             ("extract and restate the core information need") by a pluggable
                             callable such as :class:`LLMRewriter`; the original text is kept
S2    ``s2_pools``           each pool system's top ``depth`` for the S1 text, with provenance:
                             which system returned each candidate, at which rank, with which score
S3    ``s3_candidates``      reciprocal rank fusion of the pools (``rrf_k`` = 60, Cormack et al.)
S4    ``s4_grades``          every candidate graded by the judge (:meth:`Judge.grade_many`)
S5    ``s5_pool``            grade-bucketed prune down to a minimum pool size (rule below)
S6    ``s6_order``,          listwise refinement (:func:`~.refine.refine`, Alg. 1) of each
      ``s6_history``,        query's pruned pool to a stable top ``top_n``
      ``s6_summary``
===== ====================== =====================================================================

Which text each stage reads: retrieval (S2) uses the S1 text (rewritten when a rewriter is
given); the judge (S4, S6) reads the normalised *original* query, the user's own words, and each
document as ``title + " " + text`` (:func:`ragnb.retrieve.doc_texts`).

The S5 rule
-----------
Per query, every candidate with a valid grade ``>= keep_grade`` is kept, however many there are.
The other candidates then fill the pool bucket by bucket, highest grade first and in RRF order
within a bucket, until it holds ``min_pool`` documents or the candidates run out; candidates with
no valid grade (the judge's answer was invalid or failed) form the last bucket. ``keep_grade``
defaults to the grades above the middle of the judge's scale: 4-5 on 1-5, 1 on 0-1, 2 on 0-2.

The S6 choices
--------------
Initial scores come from the S4 grades (:func:`ragnb.golden.refine.initial_scores_from_grades`, an
ungraded document at the lowest grade); each query's refinement has its own seed, derived from
``seed`` and the query id; the judge is called as ``judge.rank(query, passages, query_id=...,
doc_ids=...)`` under the ledger stage ``s6_rank``.

The run folder
--------------
With ``run_dir`` set, each stage writes its frames (Parquet) and then a marker
``stages/s<n>.done.json`` holding the SHA-256 of its inputs: the stage's parameters, the
output hashes of the stages it reads, the data (corpus and query texts), the source of the
modules it runs (:data:`STAGE_CODE`) and, for judged stages, the judge's identity
(:func:`judge_fingerprint`: model, prompt hash, parameters, or the labels of an offline judge;
never the key, the URL or cache paths). Re-running a stage whose marker
matches and whose files are intact loads them instead: no retrieval, no judge call. Every file is
written atomically (:mod:`ragnb.io`: a temporary file renamed over the target), the marker last,
so a crash mid-stage leaves the previous state and the stage is simply run again.

After S6, :meth:`GoldenSet.export` writes the products beside the stages:

========================= =========================================================================
``golden.qrels``          TREC qrels of every valid grade (pool and increments), on the judge's
                          scale
``judgements.csv``        the same with provenance: ``query_id, doc_id, grade, source, systems``
                          (``source`` "pool" or "incremental"; ``systems`` those that brought it)
``refined.trec``          the refined order of each pruned pool (a TREC run, tag golden-refined)
``refined_top.csv``       the top ``top_n`` per query with grades, scores and uncertainties
``pool_provenance.csv``   S2's frame: ``query_id, doc_id, system, rank, score``
``judged_at_k.csv``       Judged@K per system on the golden qrels
``runs/<system>.trec``    each pool system's top ``depth``
``increments/``           incremental judgements per new system (:meth:`GoldenSet.extend`)
``ledger.jsonl``          every LLM request (LLM judges only; :class:`ragnb.ledger.Ledger`)
``manifest.json``         config, versions, seeds, stage hashes and counts, cache hits, costs per
                          stage from the ledger, judge identity (see :meth:`GoldenSet.manifest`)
========================= =========================================================================

Secrets
-------
The API key is read from ``$OPENAI_API_KEY`` by the client and never passed through this module:
there is no key parameter. The manifest records the judge's ``base_url`` only when it holds no
credentials (no user info, query string or fragment), and every string it writes is scrubbed of
the key's value as a last guard.

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Section 3.4 (rag-gs, S1-S6) and
   Algorithm 1.
.. [2] G. V. Cormack, C. L. A. Clarke, S. Buettcher, "Reciprocal rank fusion outperforms Condorcet
   and individual rank learning methods", SIGIR 2009.
.. [3] J. Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (pooling,
   Judged@10, calibrating the judge).
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import importlib
import json
import math
import os
import re
import time
import unicodedata
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.embed.base import DEFAULT_MODEL
from ragnb.errors import InputError
from ragnb.frames import sort_run
from ragnb.golden.refine import HISTORY_COLUMNS, RefineConfig, initial_scores_from_grades, refine
from ragnb.judge.base import Judge
from ragnb.params import NotebookParams, resolve_path
from ragnb.retrieve import BM25Retriever, Retriever, doc_texts, rrf

__all__ = [
    "JUDGES",
    "POOL_RETRIEVERS",
    "STAGES",
    "STAGE_CODE",
    "GoldenPipeline",
    "GoldenSet",
    "GoldenSetConfig",
    "Increment",
    "LLMRewriter",
    "StageRecord",
    "default_keep_grade",
    "estimate_markdown",
    "grade_candidates",
    "grade_distribution",
    "human_labels",
    "judge_banner",
    "judge_fingerprint",
    "judged_table",
    "make_judge",
    "make_pool_retriever",
    "merge_pools",
    "normalise_queries",
    "pool_candidates",
    "pool_overlap",
    "prune_pool",
    "public_judge_info",
    "refine_pools",
    "simulation_table",
]

POOL_RETRIEVERS = ("bm25", "bm25-plain", "dense", "hybrid")
JUDGES = ("noisy", "qrels", "openai")

#: Stage id -> (title, frames it writes, stages it reads).
STAGES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "s1": ("S1 queries", ("queries",), ()),
    "s2": ("S2 pools", ("pools",), ("s1",)),
    "s3": ("S3 merge (RRF)", ("candidates",), ("s2",)),
    "s4": ("S4 grades", ("grades",), ("s3",)),
    "s5": ("S5 prune", ("pool",), ("s4",)),
    "s6": ("S6 refine", ("order", "history", "summary"), ("s5",)),
}
_FILES = {
    "s1": {"queries": "s1_queries"},
    "s2": {"pools": "s2_pools"},
    "s3": {"candidates": "s3_candidates"},
    "s4": {"grades": "s4_grades"},
    "s5": {"pool": "s5_pool"},
    "s6": {"order": "s6_order", "history": "s6_history", "summary": "s6_summary"},
}
_JUDGE_CODE = ("ragnb.judge.base", "ragnb.judge.offline", "ragnb.judge.llm", "ragnb.judge.prompts")
#: The modules whose source is part of each stage's input hash (a code change reruns the stage).
STAGE_CODE: dict[str, tuple[str, ...]] = {
    "s1": ("ragnb.golden.study",),
    "s2": ("ragnb.golden.study", "ragnb.retrieve", "ragnb.embed.base"),
    "s3": ("ragnb.golden.study", "ragnb.retrieve"),
    "s4": ("ragnb.golden.study", *_JUDGE_CODE),
    "s5": ("ragnb.golden.study",),
    "s6": ("ragnb.golden.study", "ragnb.golden.refine", *_JUDGE_CODE),
}
LEDGER_STAGES = {"s1": "s1_rewrite", "s4": "s4_grade", "s6": "s6_rank"}
INCREMENTAL_STAGE = "incremental"
FORMAT = "ragnb-golden-set/1"


# ----------------------------------------------------------------------------- configuration


@dataclass
class GoldenSetConfig(NotebookParams):
    """Parameters of notebook 02 (``notebooks/02_golden_set.ipynb``), field for field.

    Attributes
    ----------
    dataset : str
        BEIR folder; relative paths are taken from the project root.
    split : str
        Qrels split whose queries are used (and whose labels offline judges read).
    max_queries : int
        Use the first ``max_queries`` judged queries (0: all).
    retrievers : list of str
        Pool systems (S2): ``"bm25"`` (Lucene BM25, English stemming and stop words),
        ``"bm25-plain"`` (BM25 without stemming or stop words: a second lexical system),
        ``"dense"`` (``embedder``), ``"hybrid"`` (RRF of BM25 and dense).
    embedder : str
        Embedding model of ``dense`` and ``hybrid``.
    depth : int
        Documents each pool system contributes per query (S2).
    rrf_k : int
        Constant of reciprocal rank fusion (S3).
    rewrite : bool
        Rewrite queries with the LLM (S1; only with ``judge="openai"``).
    judge : str
        ``"noisy"`` (:class:`~ragnb.judge.NoisyJudge`: the dataset's labels plus Gaussian noise of
        ``judge_sd``), ``"qrels"`` (:class:`~ragnb.judge.QrelsJudge`: the labels themselves) or
        ``"openai"`` (:class:`~ragnb.judge.OpenAIJudge`; the key comes from ``$OPENAI_API_KEY``).
    model : str
        The LLM of the ``openai`` judge.
    prompt : str
        Grading prompt of the ``openai`` judge (a shipped name or a YAML path).
    base_url : str
        OpenAI-compatible server root (empty: ``$OPENAI_BASE_URL`` or OpenAI). Must not hold
        credentials.
    judge_sd : float
        Noise of the ``noisy`` judge, in grade units.
    seed : int
        Seed of the noisy judge, the refinement and the simulation.
    min_pool : int
        Minimum pool size per query after pruning (S5).
    keep_grade : int
        Grades kept whatever the pool size (S5); -1: above the middle of the judge's scale.
    top_n : int
        Length of the refined top list (S6).
    refine_batch : int
        Passages per listwise judge call (S6; the paper's m = 5).
    refine_max_iterations : int
        Judge calls per query at most (S6; also the per-query bound of the cost estimate).
    budget_usd : float
        US dollars the run may spend (S1 rewrite, S4 and the S6 upper bound, priced before any
        call).
    grade_map : str
        Dataset labels onto the judge's scale (``"auto"``, ``"none"``, a name of
        :data:`ragnb.measures.GRADE_MAPS` or a mapping such as ``"{2: 5, 1: 4, 0: 1}"``): what
        offline judges read and what calibration compares with.
    cutoffs : list of int
        Cutoffs K of Judged@K.
    new_systems : list of str
        Systems judged incrementally after the golden set is built: only their unjudged top
        ``incremental_k`` (names as ``retrievers``).
    incremental_k : int
        Depth of incremental judging.
    calibrate : bool
        Compare the judge with the dataset's labels as human labels.
    calibration_measure : str
        Measure whose system ranking is compared under human and judge labels.
    cache_dir : str
        Cache folder of embeddings and LLM answers (empty: ``$RAGNB_CACHE_DIR`` or
        ``~/.cache/ragnb``).
    export_dir : str
        The run folder (stages, markers, qrels, manifest); empty: nothing written and no stage
        reused.
    simulate : bool
        Run the refinement-vs-one-shot simulation (:mod:`.simulation`) on the golden grades.
    sim_queries : int
        Queries simulated (the first ones; 0: all).
    sim_pool_size : int
        Pool size per simulated query.
    sim_noise_levels : list of float
        Noise levels of the simulated listwise judge, in grade units.
    sim_budgets : list of float
        Token budgets, in sliding-window passes.
    sim_replicates : int
        Replicates per query and noise level.
    """

    dataset: str = "data/pydocs"
    split: str = "test"
    max_queries: int = 0
    retrievers: list[str] = field(default_factory=lambda: ["bm25", "dense"])
    embedder: str = DEFAULT_MODEL
    depth: int = 30
    rrf_k: int = 60
    rewrite: bool = False
    judge: str = "noisy"
    model: str = "gpt-4o-mini"
    prompt: str = "utility-rubric"
    base_url: str = ""
    judge_sd: float = 1.0
    seed: int = 0
    min_pool: int = 30
    keep_grade: int = -1
    top_n: int = 20
    refine_batch: int = 5
    refine_max_iterations: int = 60
    budget_usd: float = 2.0
    grade_map: str = "auto"
    cutoffs: list[int] = field(default_factory=lambda: [5, 10, 20])
    new_systems: list[str] = field(default_factory=lambda: ["bm25-plain"])
    incremental_k: int = 10
    calibrate: bool = True
    calibration_measure: str = "nDCG@10"
    cache_dir: str = ""
    export_dir: str = ""
    simulate: bool = True
    sim_queries: int = 20
    sim_pool_size: int = 30
    sim_noise_levels: list[float] = field(default_factory=lambda: [0.5, 1.0, 2.0])
    sim_budgets: list[float] = field(default_factory=lambda: [0.5, 1.0, 2.0, 4.0])
    sim_replicates: int = 1

    def __post_init__(self) -> None:
        def positive(name: str, low: int = 1) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InputError(f"{name} must be an integer >= {low}, got {v!r}", column=name)

        for name, low in (
            ("depth", 1),
            ("rrf_k", 0),
            ("min_pool", 1),
            ("top_n", 1),
            ("refine_batch", 2),
            ("refine_max_iterations", 1),
            ("incremental_k", 1),
            ("max_queries", 0),
            ("sim_queries", 0),
            ("sim_pool_size", 2),
            ("sim_replicates", 1),
        ):
            positive(name, low)
        for name in ("retrievers", "new_systems"):
            values = getattr(self, name)
            bad = [r for r in values if r not in POOL_RETRIEVERS]
            if bad or (name == "retrievers" and not values):
                raise InputError(
                    f"{name} must be among {list(POOL_RETRIEVERS)}, got {values}", column=name
                )
        if len(set(self.retrievers)) != len(self.retrievers):
            raise InputError(f"retrievers repeat a name: {self.retrievers}", column="retrievers")
        if self.judge not in JUDGES:
            raise InputError(f"judge must be one of {list(JUDGES)}, got {self.judge!r}")
        if self.rewrite and self.judge != "openai":
            raise InputError("rewrite=True needs an LLM: set judge='openai'", column="rewrite")
        if not (isinstance(self.judge_sd, int | float) and self.judge_sd >= 0):
            raise InputError(f"judge_sd must be >= 0, got {self.judge_sd!r}", column="judge_sd")
        if not (isinstance(self.budget_usd, int | float) and self.budget_usd >= 0):
            raise InputError(f"budget_usd must be >= 0, got {self.budget_usd!r}")
        if not self.cutoffs or any(isinstance(k, bool) or int(k) < 1 for k in self.cutoffs):
            raise InputError(f"cutoffs must be positive integers, got {self.cutoffs}")
        if self.base_url and _has_credentials(self.base_url):
            raise InputError(
                "base_url must not hold credentials (user info, query string or fragment); the "
                "key is read from $OPENAI_API_KEY only",
                column="base_url",
            )


def _has_credentials(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return bool(parts.username or parts.password or parts.query or parts.fragment)


# ----------------------------------------------------------------------------- hashing


def _sha256(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _frame_hash(frame: pd.DataFrame) -> str:
    blob = frame.to_json(orient="split", index=False, default_handler=str)
    return hashlib.sha256(f"{list(frame.columns)}|{blob}".encode()).hexdigest()


@functools.cache
def _code_sha256(modules: tuple[str, ...]) -> str:
    """SHA-256 of the source files of ``modules``."""
    h = hashlib.sha256()
    for name in modules:
        source = importlib.import_module(name).__file__
        h.update(name.encode())
        h.update(Path(source).read_bytes() if source else b"")
    return h.hexdigest()


def _as_objects(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as ``object`` with None for missing values, whether the frame was built in
    memory or read back from Parquet (pandas' string dtype otherwise differs between the two)."""
    out = frame.copy()
    for col in out.columns:
        if isinstance(out[col].dtype, pd.StringDtype):
            values = out[col].astype(object)
            out[col] = values.where(out[col].notna(), None)
    return out


def _file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_VOLATILE = re.compile(r"(calls|texts|hits|misses|writes|max_seq_length|dim)$")


def _system_fingerprint(system: Retriever | pd.DataFrame) -> dict[str, Any]:
    if isinstance(system, pd.DataFrame):
        cols = [c for c in ("query_id", "doc_id", "score") if c in system.columns]
        return {"run_sha256": _frame_hash(system[cols])}
    info = system.describe()
    return {
        "class": type(system).__name__,
        **{k: v for k, v in info.items() if not _VOLATILE.search(k)},
    }


def judge_fingerprint(judge: Judge) -> dict[str, Any]:
    """What identifies a judge's answers, for stage hashes (never secrets or local paths).

    The judge's :meth:`~ragnb.judge.Judge.describe` without the cache and ledger paths, the base
    URL and the client settings that do not change answers (concurrency, timeout, attempts); for
    a judge reading labels (:class:`~ragnb.judge.QrelsJudge`, :class:`~ragnb.judge.NoisyJudge`)
    the SHA-256 of its labels is added, so other labels mean other grades.
    """
    drop = {"cache", "ledger", "base_url", "concurrency", "timeout_s", "max_attempts"}
    info = {k: v for k, v in judge.describe().items() if k not in drop}
    labels = getattr(judge, "_qrels", None)  # offline judges keep their labels here
    if isinstance(labels, Mapping):
        info["labels_sha256"] = _sha256(sorted((q, d, g) for (q, d), g in labels.items()))
    return info


def _public_url(url: str | None) -> tuple[str | None, bool]:
    """``(url, withheld)``: the URL when it holds no credentials, else ``(None, True)``."""
    if not url:
        return None, False
    if _has_credentials(url):
        return None, True
    return url, False


def _scrub(obj: Any, secrets: Sequence[str]) -> Any:
    """``obj`` with every occurrence of a secret in its strings replaced by ``[REDACTED]``."""
    if isinstance(obj, str):
        for s in secrets:
            obj = obj.replace(s, "[REDACTED]")
        return obj
    if isinstance(obj, Mapping):
        return {_scrub(k, secrets): _scrub(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_scrub(v, secrets) for v in obj]
    return obj


def _secrets() -> list[str]:
    key = os.environ.get("OPENAI_API_KEY", "")
    return [key] if len(key) >= 8 else []


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _query_seed(seed: int, query_id: str) -> int:
    digest = hashlib.sha256(f"{seed}:{query_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


# ----------------------------------------------------------------------------- S1


class LLMRewriter:
    """S1 query rewriting by an LLM: "extract and restate the core information need".

    Uses an :class:`~ragnb.judge.OpenAIJudge`'s client, retries, cache and ledger (stage
    ``s1_rewrite``) with its own prompt (an ``extract`` template whose answer is the one line
    ``1. <restated need>``). An answer that stays invalid after the reminder, or no answer,
    keeps the normalised original, with the reason in the S1 frame.

    Parameters
    ----------
    judge : OpenAIJudge

    Attributes
    ----------
    rewriter_id : str
        ``"llm-rewrite:<model>#<prompt hash8>"``: part of the S1 stage hash.
    """

    def __init__(self, judge: Any) -> None:
        from ragnb.judge.prompts import PromptTemplate

        if not hasattr(judge, "make_call") or not hasattr(judge, "run"):
            raise InputError("LLMRewriter needs an OpenAIJudge (make_call and run)")
        self.judge = judge
        self.template = PromptTemplate(
            name="query-rewrite",
            language="en",
            kind="extract",
            answer="numbered_list",
            user=(
                "Extract and restate the core information need of this search query as one "
                "short, self-contained request, in the language of the query. Keep every name, "
                "number and technical term; add nothing the query does not say.\n\n"
                "Query:\n{query}\n\n"
                'Answer with exactly one line of the form "1. <the restated information need>" '
                "and no other text."
            ),
            reminder=(
                "Your answer is not in the required format. Reply with exactly one line "
                '"1. <the restated information need>" and no other text.'
            ),
            expected_output_tokens=40,
            source="Dallaire (arXiv 2511.09545), Section 3.4, S1: rewrite queries",
        )
        self.rewriter_id = f"llm-rewrite:{judge.model}#{self.template.sha256[:8]}"

    def many(self, texts: Sequence[str]) -> list[tuple[str | None, str]]:
        """``(rewritten text or None, reason)`` per query text, in order."""
        calls = [
            self.judge.make_call(self.template, {"query": t}, item=f"q{i}", query_id=f"q{i}")
            for i, t in enumerate(texts)
        ]
        out: list[tuple[str | None, str]] = []
        for r in self.judge.run(calls, stage=LEDGER_STAGES["s1"], kind="extract"):
            if r.valid:
                out.append((" ".join(r.value).strip() or None, ""))
            else:
                out.append((None, r.reason or r.status))
        return out

    def __call__(self, text: str) -> str | None:
        return self.many([text])[0][0]


def normalise_queries(
    queries: pd.DataFrame, rewrite: Callable[[str], str | None] | None = None
) -> pd.DataFrame:
    """S1: NFC normalisation and an optional rewrite of each query.

    Parameters
    ----------
    queries : DataFrame
        ``query_id``, ``text``.
    rewrite : callable, optional
        ``rewrite(text) -> str or None`` (None or an empty string keeps the normalised text); an
        object with ``many(texts) -> [(text or None, reason), ...]`` is called once for all
        queries (:class:`LLMRewriter`).

    Returns
    -------
    DataFrame
        ``query_id``, ``original`` (the text as given), ``normalised`` (NFC, outer white space
        stripped), ``text`` (what retrieval uses: the rewrite, else ``normalised``),
        ``rewritten`` (bool), ``rewrite_reason`` (why the rewrite was not used, "" otherwise).

    Examples
    --------
    >>> q = pd.DataFrame({"query_id": ["q1"], "text": ["cafe\\u0301 "]})
    >>> normalise_queries(q, str.upper)[["normalised", "text", "rewritten"]].values.tolist()
    [['café', 'CAFÉ', True]]
    """
    for col in ("query_id", "text"):
        if col not in queries.columns:
            raise InputError(f"queries lack the column {col!r}", column=col)
    original = queries["text"].astype(str).tolist()
    normalised = [unicodedata.normalize("NFC", t).strip() for t in original]
    results: list[tuple[str | None, str]]
    if rewrite is None:
        results = [(None, "") for _ in normalised]
    elif callable(getattr(rewrite, "many", None)):
        results = list(rewrite.many(normalised))  # type: ignore[attr-defined]
    else:
        results = [(rewrite(t), "") for t in normalised]
    texts, flags, reasons = [], [], []
    for norm, (new, reason) in zip(normalised, results, strict=True):
        new_text = unicodedata.normalize("NFC", new).strip() if isinstance(new, str) else ""
        texts.append(new_text or norm)
        flags.append(bool(new_text))
        if new_text or rewrite is None:
            reasons.append("")
        else:
            reasons.append(reason or "the rewriter returned nothing")
    return pd.DataFrame(
        {
            "query_id": queries["query_id"].astype(str).to_numpy(dtype=object),
            "original": pd.Series(original, dtype=object),
            "normalised": pd.Series(normalised, dtype=object),
            "text": pd.Series(texts, dtype=object),
            "rewritten": pd.Series(flags, dtype=bool),
            "rewrite_reason": pd.Series(reasons, dtype=object),
        }
    )


# ----------------------------------------------------------------------------- S2, S3


def make_pool_retriever(
    name: str,
    *,
    embedder: str = DEFAULT_MODEL,
    rrf_k: int = 60,
    depth: int = 100,
    cache: Any = None,
    progress: bool = False,
) -> Retriever:
    """A pool system by name (see :data:`POOL_RETRIEVERS`); ``"bm25-plain"`` is BM25 without
    stemming or stop words, a second lexical system."""
    from ragnb.retrieve import make_retriever

    if name == "bm25-plain":
        return BM25Retriever(stemmer=None, stopwords=None, name="bm25-plain")
    if name not in POOL_RETRIEVERS:
        raise InputError(f"unknown pool system {name!r}; use one of {list(POOL_RETRIEVERS)}")
    return make_retriever(
        name, model=embedder, rrf_k=rrf_k, depth=depth, cache=cache, progress=progress
    )


def _top_of(run: pd.DataFrame, qids: Sequence[str], depth: int) -> pd.DataFrame:
    keep = run[run["query_id"].astype(str).isin(set(qids))]
    ranked = sort_run(keep[["query_id", "doc_id", "score"]], warn=False).run
    return ranked[ranked["rank"] <= depth].reset_index(drop=True)


def pool_candidates(
    queries: pd.DataFrame,
    systems: Mapping[str, Retriever | pd.DataFrame],
    depth: int,
) -> pd.DataFrame:
    """S2: each system's top ``depth`` per query, with provenance.

    Parameters
    ----------
    queries : DataFrame
        S1's frame (``query_id``, ``text``).
    systems : mapping of str to Retriever or run
        Indexed retrievers (called with the S1 text) or precomputed run frames (cut to the
        queries and ``depth``).
    depth : int >= 1

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id`` (str), ``system`` (str), ``rank`` (int, 1-based, trec_eval
        order), ``score`` (float, the system's own): one row per (system, retrieved document).
    """
    if not systems:
        raise InputError("the pool needs at least one system")
    qids = queries["query_id"].astype(str).tolist()
    parts = []
    for name, system in systems.items():
        if isinstance(system, pd.DataFrame):
            run = system
        else:
            run = system.retrieve(queries[["query_id", "text"]], k=depth)
        top = _top_of(run, qids, depth)
        parts.append(
            pd.DataFrame(
                {
                    "query_id": top["query_id"].astype(str).to_numpy(dtype=object),
                    "doc_id": top["doc_id"].astype(str).to_numpy(dtype=object),
                    "system": str(name),
                    "rank": top["rank"].to_numpy(dtype=np.int64),
                    "score": top["score"].to_numpy(dtype=np.float64),
                }
            )
        )
    out = pd.concat(parts, ignore_index=True)
    return out.astype({"system": object})


def merge_pools(pools: pd.DataFrame, rrf_k: int = 60) -> pd.DataFrame:
    """S3: reciprocal rank fusion of the pools into one candidate list per query.

    ``rrf_score(d) = sum over systems s returning d of 1 / (rrf_k + rank_s(d))``.

    Parameters
    ----------
    pools : DataFrame
        S2's frame.
    rrf_k : int, default 60

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id``, ``rrf_score`` (float), ``rrf_rank`` (int, 1-based, per query),
        ``n_systems`` (int), ``systems`` (comma-separated, best rank first), ``best_rank`` (int);
        sorted by query then ``rrf_rank``.

    Examples
    --------
    >>> pools = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["x", "y", "y"],
    ...                       "system": ["a", "a", "b"], "rank": [1, 2, 1],
    ...                       "score": [2.0, 1.0, 5.0]})
    >>> merge_pools(pools)[["doc_id", "rrf_rank", "systems"]].values.tolist()
    [['y', 1, 'b,a'], ['x', 2, 'a']]
    """
    runs = [
        g[["query_id", "doc_id"]].assign(score=-g["rank"].to_numpy(dtype=np.float64))
        for _, g in pools.groupby("system", sort=False)
    ]
    fused = rrf(runs, rrf_k=rrf_k)
    prov = pools.sort_values(["query_id", "doc_id", "rank", "system"], kind="stable")
    agg = prov.groupby(["query_id", "doc_id"], sort=False).agg(
        n_systems=("system", "size"),
        systems=("system", lambda s: ",".join(s)),
        best_rank=("rank", "min"),
    )
    out = fused.rename(columns={"score": "rrf_score", "rank": "rrf_rank"}).merge(
        agg.reset_index(), on=["query_id", "doc_id"], how="left"
    )
    out = out.astype({"rrf_rank": np.int64, "n_systems": np.int64, "best_rank": np.int64})
    out["query_id"] = out["query_id"].astype(object)
    out["doc_id"] = out["doc_id"].astype(object)
    out["systems"] = out["systems"].astype(object)
    return out.sort_values(["query_id", "rrf_rank"], kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- S4, S5, S6


def _texts(corpus: pd.DataFrame) -> dict[str, str]:
    return dict(zip(corpus["doc_id"].astype(str), doc_texts(corpus), strict=True))


def _items(pairs: pd.DataFrame, queries: pd.DataFrame, texts: Mapping[str, str]) -> pd.DataFrame:
    qtext = dict(zip(queries["query_id"], queries["normalised"], strict=True))
    missing = sorted(set(pairs["doc_id"]) - set(texts))
    if missing:
        raise InputError(f"{len(missing)} candidates are not in the corpus, e.g. {missing[0]!r}")
    return pd.DataFrame(
        {
            "query_id": pairs["query_id"].to_numpy(dtype=object),
            "doc_id": pairs["doc_id"].to_numpy(dtype=object),
            "query": [qtext[q] for q in pairs["query_id"]],
            "passage": [texts[d] for d in pairs["doc_id"]],
        }
    )


def grade_candidates(
    candidates: pd.DataFrame,
    queries: pd.DataFrame,
    corpus: pd.DataFrame,
    judge: Judge,
    *,
    stage: str = LEDGER_STAGES["s4"],
) -> pd.DataFrame:
    """S4: the judge grades every candidate (normalised original query, ``title + text``).

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id``, ``rrf_rank``, then the judge's columns from ``grade`` on
        (:meth:`ragnb.judge.Judge.grade_many`: ``grade`` Int64, ``valid``, ``status``, ``reason``,
        ``raw``, ``first_raw``, ``attempts``, ``reminded``, ``input_tokens``, ``output_tokens``,
        ``cached``, ``repeated``, ``judge_id``, ``prompt``); candidate order.
    """
    items = _items(candidates, queries, _texts(corpus))
    graded = judge.grade_many(items, stage=stage)
    out = graded.drop(columns=["query_id", "doc_id"])
    out.insert(0, "rrf_rank", candidates["rrf_rank"].to_numpy(dtype=np.int64))
    out.insert(0, "doc_id", candidates["doc_id"].to_numpy(dtype=object))
    out.insert(0, "query_id", candidates["query_id"].to_numpy(dtype=object))
    return out


def default_keep_grade(scale: tuple[int, int]) -> int:
    """The lowest grade above the middle of ``scale``: 4 on (1, 5), 1 on (0, 1), 2 on (0, 2).

    Examples
    --------
    >>> [default_keep_grade(s) for s in [(1, 5), (0, 1), (0, 2), (0, 3)]]
    [4, 1, 2, 2]
    """
    lo, hi = scale
    return int(math.floor((lo + hi) / 2)) + 1


def prune_pool(grades: pd.DataFrame, min_pool: int, keep_grade: int) -> pd.DataFrame:
    """S5: a grade-bucketed pool per query (see the module's "S5 rule").

    Parameters
    ----------
    grades : DataFrame
        S4's frame (``query_id``, ``doc_id``, ``rrf_rank``, ``grade``, ``valid``).
    min_pool : int >= 1
    keep_grade : int
        Valid grades ``>= keep_grade`` are all kept.

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id``, ``grade`` (Int64, <NA> when not valid), ``rrf_rank``,
        ``pool_rank`` (int, 1-based: grade bucket first, then RRF order), ``kept`` ("grade" for a
        grade >= keep_grade, "fill" otherwise); only the kept documents.

    Examples
    --------
    >>> g = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": list("abcd"),
    ...                   "rrf_rank": [1, 2, 3, 4], "grade": pd.array([1, 3, 2, 3], "Int64"),
    ...                   "valid": [True] * 4})

    b and d (grade 3) are kept; the third place goes to the next bucket, c (grade 2), not to a,
    although a comes first in RRF order:

    >>> prune_pool(g, min_pool=3, keep_grade=3)[["doc_id", "kept"]].values.tolist()
    [['b', 'grade'], ['d', 'grade'], ['c', 'fill']]
    """
    if isinstance(min_pool, bool) or not isinstance(min_pool, int) or min_pool < 1:
        raise InputError(f"min_pool must be an integer >= 1, got {min_pool!r}")
    valid = grades["valid"].to_numpy(dtype=bool)
    g = pd.to_numeric(grades["grade"], errors="coerce").to_numpy(dtype=np.float64)
    bucket = np.where(valid & ~np.isnan(g), g, -np.inf)
    work = pd.DataFrame(
        {
            "query_id": grades["query_id"].to_numpy(dtype=object),
            "doc_id": grades["doc_id"].to_numpy(dtype=object),
            "grade": pd.array(np.where(np.isfinite(bucket), bucket, np.nan), dtype="Float64")
            .round()
            .astype("Int64"),
            "rrf_rank": grades["rrf_rank"].to_numpy(dtype=np.int64),
            "_bucket": bucket,
        }
    )
    work = work.sort_values(["query_id", "_bucket", "rrf_rank"], ascending=[True, False, True])
    work["pool_rank"] = work.groupby("query_id", sort=False).cumcount().to_numpy() + 1
    high = work["_bucket"].to_numpy() >= keep_grade
    keep = high | (work["pool_rank"].to_numpy() <= min_pool)
    out = work[keep].copy()
    out["kept"] = np.where(high[keep], "grade", "fill").astype(object)
    out["pool_rank"] = out["pool_rank"].astype(np.int64)
    return out.drop(columns="_bucket").reset_index(drop=True)


def refine_pools(
    pool: pd.DataFrame,
    queries: pd.DataFrame,
    corpus: pd.DataFrame,
    judge: Judge,
    *,
    config: RefineConfig,
    seed: int = 0,
    stage: str = LEDGER_STAGES["s6"],
    progress: Callable[[str], None] | None = None,
) -> dict[str, pd.DataFrame]:
    """S6: listwise refinement of each query's pruned pool (:func:`ragnb.golden.refine.refine`).

    Parameters
    ----------
    pool : DataFrame
        S5's frame.
    queries, corpus : DataFrame
        S1's frame (``normalised`` is the query text shown) and the corpus.
    judge : Judge
        Its :meth:`~ragnb.judge.Judge.rank` orders each batch.
    config : RefineConfig
        ``top_n`` is the stable list's length; ``seed`` is replaced per query.
    seed : int
        Each query's refinement seed is derived from it and the query id.

    Returns
    -------
    dict of str to DataFrame
        ``order``: ``query_id``, ``doc_id``, ``rank`` (1-based), ``score``, ``sigma``,
        ``exposures``, ``grade`` (S4), ``in_top`` (rank <= top_n). ``history``: ``query_id``
        then :data:`ragnb.golden.refine.HISTORY_COLUMNS`. ``summary``: ``query_id``, ``pool_size``,
        ``stop_reason``, ``calls``, ``invalid`` (answers that did not parse or failed),
        ``cached`` (answers from the cache), ``n_locks``, ``tokens`` (reported by the judge).
    """
    texts = _texts(corpus)
    qtext = dict(zip(queries["query_id"], queries["normalised"], strict=True))
    orders, histories, summaries = [], [], []
    for qid, g in pool.groupby("query_id", sort=True):
        qid = str(qid)
        g = g.sort_values("pool_rank")
        ids = [str(d) for d in g["doc_id"]]
        grades = pd.to_numeric(g["grade"], errors="coerce").astype("Float64")
        floor = float(grades.min()) if grades.notna().any() else 0.0
        initial = initial_scores_from_grades(grades.fillna(floor).to_numpy(dtype=np.float64))
        ranker = _RecordingRanker(judge, stage)
        res = refine(
            qtext[qid],
            {d: texts[d] for d in ids},
            ranker.rank,
            config=replace(config, seed=_query_seed(seed, qid)),
            initial_scores=initial,
            query_id=qid,
        )
        items = res.items_frame()
        orders.append(
            pd.DataFrame(
                {
                    "query_id": qid,
                    "doc_id": items["item"].astype(str).to_numpy(dtype=object),
                    "rank": items["rank"].to_numpy(dtype=np.int64),
                    "score": items["score"].to_numpy(dtype=np.float64),
                    "sigma": items["sigma"].to_numpy(dtype=np.float64),
                    "exposures": items["exposures"].to_numpy(dtype=np.int64),
                }
            )
        )
        hist = res.history.copy()
        hist.insert(0, "query_id", qid)
        histories.append(hist)
        summaries.append(
            (
                qid,
                len(ids),
                res.stop_reason,
                res.calls,
                sum(1 for a in ranker.answers if not getattr(a, "valid", True)),
                sum(1 for a in ranker.answers if getattr(a, "cached", False)),
                len(res.locks),
                res.tokens if res.tokens is not None else 0,
            )
        )
        if progress is not None:
            progress(qid)
    order = pd.concat(orders, ignore_index=True) if orders else _empty_order()
    grade_of = pool.set_index(["query_id", "doc_id"])["grade"]
    order["grade"] = pd.array(
        [
            grade_of.get((q, d), pd.NA)
            for q, d in zip(order["query_id"], order["doc_id"], strict=True)
        ],
        dtype="Int64",
    )
    order["in_top"] = order["rank"].to_numpy() <= config.top_n
    history = (
        pd.concat(histories, ignore_index=True)
        if histories
        else pd.DataFrame(columns=["query_id", *HISTORY_COLUMNS])
    )
    history["tokens"] = pd.to_numeric(history["tokens"]).astype("Int64")
    summary = pd.DataFrame(
        summaries,
        columns=[
            "query_id",
            "pool_size",
            "stop_reason",
            "calls",
            "invalid",
            "cached",
            "n_locks",
            "tokens",
        ],
    )
    return {"order": order, "history": history, "summary": summary}


class _RecordingRanker:
    """``judge.rank`` under a ledger stage, keeping every answer (for the S6 counts)."""

    def __init__(self, judge: Judge, stage: str) -> None:
        self.judge, self.stage = judge, stage
        self.answers: list[Any] = []

    def rank(
        self, query: str, passages: Sequence[str], *, query_id: str, doc_ids: Sequence[str]
    ) -> Any:
        result = self.judge.rank(
            query, list(passages), query_id=query_id, doc_ids=doc_ids, stage=self.stage
        )
        self.answers.append(result)
        return result


def _empty_order() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": pd.Series(dtype=object),
            "doc_id": pd.Series(dtype=object),
            "rank": pd.Series(dtype=np.int64),
            "score": pd.Series(dtype=np.float64),
            "sigma": pd.Series(dtype=np.float64),
            "exposures": pd.Series(dtype=np.int64),
        }
    )


# ----------------------------------------------------------------------------- analysis


def judged_table(
    qrels: pd.DataFrame, runs: Mapping[str, pd.DataFrame], cutoffs: Sequence[int]
) -> pd.DataFrame:
    """Judged@K of each run on ``qrels`` (share of the top K that has a judgement).

    Returns
    -------
    DataFrame
        ``system``, ``k``, ``judged`` (float in [0, 1], macro mean over the qrels' queries),
        ``n_queries``.
    """
    from ragnb.evaluate import evaluate

    ks = sorted({int(k) for k in cutoffs})
    rows = []
    for name, run in runs.items():
        agg = evaluate(qrels, run, [f"Judged@{k}" for k in ks]).aggregate
        for k, v, n in zip(ks, agg["value"], agg["n_queries"], strict=True):
            rows.append((str(name), k, float(v), int(n)))
    return pd.DataFrame(rows, columns=["system", "k", "judged", "n_queries"])


def pool_overlap(pools: pd.DataFrame) -> pd.DataFrame:
    """Share of each system's candidates that each other system also returned.

    Parameters
    ----------
    pools : DataFrame
        S2's frame.

    Returns
    -------
    DataFrame
        One row per ordered pair of systems (the diagonal included): ``system_a``, ``system_b``,
        ``common`` (int, (query, document) pairs both returned), ``n_a`` (pairs ``system_a``
        returned), ``share`` (``common / n_a``: not symmetric when the systems return different
        numbers of documents).
    """
    sets = {
        name: set(zip(g["query_id"], g["doc_id"], strict=True))
        for name, g in pools.groupby("system", sort=False)
    }
    rows = []
    for a, sa in sets.items():
        for b, sb in sets.items():
            common = len(sa & sb)
            rows.append((a, b, common, len(sa), common / len(sa) if sa else math.nan))
    return pd.DataFrame(rows, columns=["system_a", "system_b", "common", "n_a", "share"])


def grade_distribution(
    grades: pd.DataFrame, pool: pd.DataFrame, order: pd.DataFrame
) -> pd.DataFrame:
    """Grades of the candidates (S4), the pruned pool (S5) and the refined top (S6).

    Returns
    -------
    DataFrame
        ``set`` ("candidates", "pruned pool", "refined top"), ``grade`` (str: the grade, or
        "invalid"), ``count`` (int), ``share`` (float, of the set).
    """
    sets = [
        ("candidates", grades["grade"].where(grades["valid"])),
        ("pruned pool", pool["grade"]),
        ("refined top", order.loc[order["in_top"], "grade"]),
    ]
    rows = []
    for order, (name, g) in enumerate(sets):
        values = pd.to_numeric(g, errors="coerce").astype("Float64")
        for v, n in values.value_counts(dropna=False).items():
            label = "invalid" if pd.isna(v) else str(int(v))
            key = math.inf if pd.isna(v) else float(v)
            rows.append((order, key, name, label, int(n), n / len(values)))
    out = pd.DataFrame(rows, columns=["_o", "_k", "set", "grade", "count", "share"])
    out = out.sort_values(["_o", "_k"], kind="stable").drop(columns=["_o", "_k"])
    return out.reset_index(drop=True)


def simulation_table(summary: pd.DataFrame, metric: str = "overlap") -> pd.DataFrame:
    """One metric of :func:`ragnb.golden.simulation.summarise`, wide, for reading: rows (noise sd,
    budget) written with ``:g``, columns the methods' means, then their 95% intervals as
    ``<method> low`` / ``<method> high``."""
    rows = summary[summary["metric"] == metric]
    mean = rows.pivot_table(index=["noise_sd", "budget"], columns="method", values="mean")
    parts = [mean]
    for bound in ("low", "high"):
        b = rows.pivot_table(index=["noise_sd", "budget"], columns="method", values=bound)
        parts.append(b.rename(columns=lambda c, s=bound: f"{c} {s}"))
    out = pd.concat(parts, axis=1)
    out.columns.name = metric
    out.index = out.index.set_levels([lvl.map("{:g}".format) for lvl in out.index.levels])
    return out


def estimate_markdown(estimate: Any, budget_usd: float | None) -> str:
    """Markdown stating a :class:`~ragnb.ledger.CostEstimate` against the budget."""
    s = estimate.summary()
    if s["calls"] == 0 and s["cached_calls"] == 0:
        return "**Cost estimate:** no LLM call is planned (offline judge, or every stage done)."
    total = "unknown (unpriced model)" if s["total_usd"] is None else f"${s['total_usd']:.4f}"
    lines = [
        f"**Cost estimate:** {s['calls']} calls ({s['cached_calls']} more answered by the cache), "
        f"{s['input_tokens']} input + {s['output_tokens']} assumed output tokens: **{total}**"
        + ("" if budget_usd is None else f" against a budget of ${budget_usd:.2f}")
        + f"; prices as of {s['prices'].get('as_of')}."
    ]
    lines += [f"- {n}" for n in s["notes"]]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- judges


def human_labels(config: GoldenSetConfig, qrels: pd.DataFrame) -> tuple[pd.DataFrame, Any]:
    """The dataset's labels mapped by ``config.grade_map``, and the map ``(name, dict)`` or
    None."""
    from ragnb.measures import map_grades, resolve_grade_map

    gm = resolve_grade_map(config.grade_map, qrels)
    labels = qrels[["query_id", "doc_id", "relevance"]].copy()
    if gm is not None:
        labels = map_grades(labels, gm[1])
    return labels, gm


def make_judge(
    config: GoldenSetConfig,
    qrels: pd.DataFrame,
    *,
    cache: Any = None,
    ledger: Any = None,
) -> Judge:
    """The judge named by ``config.judge``.

    Offline judges read the dataset's labels (mapped by ``grade_map``); a pair without a label
    counts as not relevant: grade 0, or the mapped grade of 0 (trec_eval's convention for
    unjudged documents). ``"openai"`` builds an :class:`~ragnb.judge.OpenAIJudge` whose key comes
    from ``$OPENAI_API_KEY`` only.
    """
    from ragnb.judge import NoisyJudge, OpenAIJudge, QrelsJudge

    if config.judge == "openai":
        return OpenAIJudge(
            config.model,
            prompt=config.prompt,
            base_url=config.base_url or None,
            cache=cache,
            ledger=ledger,
            progress=False,
        )
    labels, gm = human_labels(config, qrels)
    unjudged = 0 if gm is None else int(gm[1].get(0, min(gm[1].values())))
    lo = min(unjudged, int(labels["relevance"].min()))
    hi = max(int(labels["relevance"].max()), lo + 1)
    if config.judge == "qrels":
        return QrelsJudge(labels, scale=(lo, hi), missing=unjudged)
    return NoisyJudge(
        labels, sd=float(config.judge_sd), seed=config.seed, scale=(lo, hi), missing=unjudged
    )


# ----------------------------------------------------------------------------- the pipeline


@dataclass
class StageRecord:
    """How a stage's output came to be, as the manifest records it.

    Attributes
    ----------
    stage : str
        ``"s1"`` ... ``"s6"``.
    input_hash : str
        SHA-256 of the stage's inputs (parameters, upstream outputs, data, judge identity).
    output_hash : str
        SHA-256 of the stage's frames (what downstream stages hash).
    reused : bool
        Loaded from the run folder in this run (no computation, no judge call).
    seconds : float
        Time to compute (when it was computed) or to load.
    counts : dict
        Rows and stage-specific counts (graded, valid, calls, ...).
    files : list of str
        Its files in the run folder.
    finished : str
        ISO 8601 UTC time the stage was computed.
    """

    stage: str
    input_hash: str
    output_hash: str
    reused: bool
    seconds: float
    counts: dict[str, Any]
    files: list[str]
    finished: str

    def to_dict(self) -> dict[str, Any]:
        return {"title": STAGES[self.stage][0], **asdict(self)}


class GoldenPipeline:
    """Build a golden set: S1-S6 over DataFrames, each stage resumable from a run folder.

    Parameters
    ----------
    corpus : DataFrame
        ``doc_id``, ``title``, ``text``.
    queries : DataFrame
        ``query_id``, ``text``: the queries of the golden set.
    judge : Judge
    systems : mapping of str to Retriever or run frame
        The pool systems (S2). Retrievers are indexed on ``corpus`` only when S2 runs.
    depth : int, default 30
    rrf_k : int, default 60
    min_pool : int, default 30
    keep_grade : int, optional
        Default :func:`default_keep_grade` of the judge's scale.
    top_n : int, default 20
    refine_config : RefineConfig, optional
        Default ``RefineConfig(top_n=top_n, max_iterations=60)``; its ``top_n`` is set to
        ``top_n``.
    seed : int, default 0
    rewrite : callable, optional
        S1 rewriter (see :func:`normalise_queries`).
    run_dir : str or PathLike, optional
        The run folder; None: in memory, nothing reused.
    new_systems : mapping of str to Retriever or run, optional
        Judged incrementally by :meth:`run` after S6 (:meth:`GoldenSet.extend`).
    incremental_k : int, default 10
    budget_usd : float, optional
        :meth:`run` refuses to start S4 when the estimate exceeds it (None: no check).
    cutoffs : sequence of int, default (5, 10, 20)
        Judged@K cutoffs.
    config : GoldenSetConfig, optional
        Recorded in the manifest (set by :meth:`from_config`).
    dataset_info : dict, optional
        Recorded in the manifest (e.g. :meth:`ragnb.io.BeirDataset.summary`).
    ledger : Ledger, optional
        Where the judge's LLM calls are recorded (default: the judge's ``ledger``), for costs.
    progress : bool, default False
        Print a line per stage.
    """

    def __init__(
        self,
        corpus: pd.DataFrame,
        queries: pd.DataFrame,
        judge: Judge,
        systems: Mapping[str, Retriever | pd.DataFrame],
        *,
        depth: int = 30,
        rrf_k: int = 60,
        min_pool: int = 30,
        keep_grade: int | None = None,
        top_n: int = 20,
        refine_config: RefineConfig | None = None,
        seed: int = 0,
        rewrite: Callable[[str], str | None] | None = None,
        run_dir: str | os.PathLike[str] | None = None,
        new_systems: Mapping[str, Retriever | pd.DataFrame] | None = None,
        incremental_k: int = 10,
        budget_usd: float | None = None,
        cutoffs: Sequence[int] = (5, 10, 20),
        config: GoldenSetConfig | None = None,
        dataset_info: Mapping[str, Any] | None = None,
        ledger: Any = None,
        progress: bool = False,
    ) -> None:
        if not systems:
            raise InputError("a golden set needs at least one pool system")
        for name, v, low in (("depth", depth, 1), ("top_n", top_n, 1), ("rrf_k", rrf_k, 0)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InputError(f"{name} must be an integer >= {low}, got {v!r}")
        self.corpus = corpus
        self.queries_in = queries.reset_index(drop=True)
        self.judge = judge
        self.systems = dict(systems)
        self.depth, self.rrf_k, self.min_pool, self.top_n = depth, rrf_k, min_pool, top_n
        scale = judge.scale or (0, 1)
        self.keep_grade = default_keep_grade(scale) if keep_grade is None else int(keep_grade)
        base = refine_config if refine_config is not None else RefineConfig(max_iterations=60)
        self.refine_config = replace(base, top_n=top_n)
        self.seed = seed
        self.rewrite = rewrite
        self.run_dir = None if run_dir is None else Path(run_dir)
        self.new_systems = dict(new_systems or {})
        self.incremental_k = incremental_k
        self.budget_usd = budget_usd
        self.cutoffs = [int(k) for k in cutoffs]
        self.config = config
        self.dataset_info = dict(dataset_info or {})
        self.ledger = ledger if ledger is not None else getattr(judge, "ledger", None)
        self.progress = progress
        self._frames: dict[str, dict[str, pd.DataFrame]] = {}
        self._records: dict[str, StageRecord] = {}
        self._indexed: set[int] = set()
        self.dataset: Any = None
        self._data_hash: str | None = None
        self._estimate: Any = None

    # -- construction from the notebook's parameters

    @classmethod
    def from_config(cls, config: GoldenSetConfig, *, progress: bool = False) -> GoldenPipeline:
        """Everything ``config`` names: dataset, judge (with a cache and, for an LLM, a ledger in
        the run folder), pool and new systems, and the run folder."""
        from ragnb.cache import Cache
        from ragnb.io import read_beir
        from ragnb.ledger import Ledger

        data = read_beir(config.dataset_path(), split=config.split)
        queries = data.judged_queries
        if config.max_queries:
            queries = queries.head(config.max_queries)
        run_dir = resolve_path(config.export_dir) if config.export_dir else None
        cache = Cache(config.cache_dir or None)
        ledger = None
        if config.judge == "openai":
            ledger = Ledger(None if run_dir is None else run_dir / "ledger.jsonl")
        judge = make_judge(config, data.qrels, cache=cache, ledger=ledger)
        built: dict[str, Retriever] = {}

        def system(name: str) -> Retriever:
            if name not in built:
                built[name] = make_pool_retriever(
                    name,
                    embedder=config.embedder,
                    rrf_k=config.rrf_k,
                    depth=max(config.depth, config.incremental_k),
                    cache=cache,
                )
            return built[name]

        pool = {name: system(name) for name in config.retrievers}
        new = {name: system(name) for name in config.new_systems if name not in pool}
        rewrite = LLMRewriter(judge) if config.rewrite else None
        pipeline = cls(
            data.corpus,
            queries,
            judge,
            pool,
            depth=config.depth,
            rrf_k=config.rrf_k,
            min_pool=config.min_pool,
            keep_grade=None if config.keep_grade < 0 else config.keep_grade,
            top_n=config.top_n,
            refine_config=RefineConfig(
                m=config.refine_batch, max_iterations=config.refine_max_iterations
            ),
            seed=config.seed,
            rewrite=rewrite,
            run_dir=run_dir,
            new_systems=new,
            incremental_k=config.incremental_k,
            budget_usd=config.budget_usd,
            cutoffs=config.cutoffs,
            config=config,
            dataset_info=data.summary(),
            ledger=ledger,
            progress=progress,
        )
        pipeline.dataset = data
        return pipeline

    # -- what the judge is, in words

    def banner(self) -> str:
        """One markdown line saying which judge grades, and whether it is an LLM."""
        return judge_banner(self.judge)

    # -- the stages

    def queries(self) -> pd.DataFrame:
        """S1's frame (:func:`normalise_queries`)."""
        return self._stage("s1")["queries"]

    def pools(self) -> pd.DataFrame:
        """S2's frame (:func:`pool_candidates`)."""
        return self._stage("s2")["pools"]

    def candidates(self) -> pd.DataFrame:
        """S3's frame (:func:`merge_pools`)."""
        return self._stage("s3")["candidates"]

    def grades(self) -> pd.DataFrame:
        """S4's frame (:func:`grade_candidates`)."""
        return self._stage("s4")["grades"]

    def pool(self) -> pd.DataFrame:
        """S5's frame (:func:`prune_pool`)."""
        return self._stage("s5")["pool"]

    def refined(self) -> dict[str, pd.DataFrame]:
        """S6's frames (:func:`refine_pools`): ``order``, ``history``, ``summary``."""
        return self._stage("s6")

    def _params(self, stage: str) -> dict[str, Any]:
        if stage == "s1":
            rw = self.rewrite
            rid = None
            if rw is not None:
                name = getattr(rw, "__qualname__", type(rw).__name__)
                rid = getattr(rw, "rewriter_id", None) or f"{getattr(rw, '__module__', '')}.{name}"
            return {"rewrite": rid, "queries": self.queries_in["query_id"].astype(str).tolist()}
        if stage == "s2":
            return {
                "depth": self.depth,
                "systems": {n: _system_fingerprint(s) for n, s in self.systems.items()},
            }
        if stage == "s3":
            return {"rrf_k": self.rrf_k}
        if stage == "s4":
            return {"judge": judge_fingerprint(self.judge)}
        if stage == "s5":
            return {"min_pool": self.min_pool, "keep_grade": self.keep_grade}
        return {
            "judge": judge_fingerprint(self.judge),
            "refine": asdict(self.refine_config),
            "seed": self.seed,
        }

    def _data(self) -> str:
        if self._data_hash is None:
            h = hashlib.sha256()
            for col in ("doc_id", "title", "text"):
                h.update("\x1f".join(self.corpus[col].fillna("").astype(str)).encode("utf-8"))
                h.update(b"\x1e")
            h.update("\x1f".join(self.queries_in["query_id"].astype(str)).encode("utf-8"))
            h.update("\x1f".join(self.queries_in["text"].astype(str)).encode("utf-8"))
            self._data_hash = h.hexdigest()
        return self._data_hash

    def _key(self, stage: str) -> str:
        upstream = {u: self._record(u).output_hash for u in STAGES[stage][2]}
        return _sha256(
            {
                "stage": stage,
                "params": self._params(stage),
                "upstream": upstream,
                "data": self._data(),
                "code": _code_sha256(STAGE_CODE[stage]),
            }
        )

    def _record(self, stage: str) -> StageRecord:
        self._stage(stage)
        return self._records[stage]

    def _paths(self, stage: str) -> tuple[Path, dict[str, Path]]:
        assert self.run_dir is not None
        folder = self.run_dir / "stages"
        files = {name: folder / f"{stem}.parquet" for name, stem in _FILES[stage].items()}
        return folder / f"{stage}.done.json", files

    def _load(self, stage: str, key: str) -> tuple[dict[str, pd.DataFrame], dict[str, Any]] | None:
        if self.run_dir is None:
            return None
        from ragnb.io import read_json

        marker, files = self._paths(stage)
        if not marker.exists():
            return None
        try:
            info = read_json(marker)
        except InputError:
            return None
        if info.get("input_hash") != key:
            return None
        sums = info.get("files_sha256", {})
        for path in files.values():
            if not path.exists() or sums.get(path.name) != _file_hash(path):
                return None
        frames = {name: _as_objects(pd.read_parquet(path)) for name, path in files.items()}
        return frames, info

    def _write(self, stage: str, frames: dict[str, pd.DataFrame], info: dict[str, Any]) -> None:
        from ragnb.io import atomic_write, write_json

        marker, files = self._paths(stage)
        if marker.exists():
            marker.unlink()  # the old marker must not vouch for new files
        sums = {}
        for name, path in files.items():
            with atomic_write(path, "wb") as f:
                frames[name].to_parquet(f, index=False)
            sums[path.name] = _file_hash(path)
        write_json({**info, "files_sha256": sums}, marker)

    def _try_load(self, stage: str, key: str) -> bool:
        """Load a finished stage from the run folder into memory; False when it is not there."""
        start = time.perf_counter()
        loaded = self._load(stage, key)
        if loaded is None:
            return False
        frames, info = loaded
        self._frames[stage] = frames
        self._records[stage] = StageRecord(
            stage,
            key,
            info["output_hash"],
            True,
            time.perf_counter() - start,
            info.get("counts", {}),
            sorted(info.get("files_sha256", {})),
            info.get("finished", ""),
        )
        self._say(f"{STAGES[stage][0]}: loaded from {self.run_dir}")
        return True

    def _stage(self, stage: str) -> dict[str, pd.DataFrame]:
        if stage in self._frames:
            return self._frames[stage]
        key = self._key(stage)
        if self._try_load(stage, key):
            return self._frames[stage]
        start = time.perf_counter()
        frames = {name: _as_objects(f) for name, f in self._compute(stage).items()}
        counts = self._counts(stage, frames)
        seconds = time.perf_counter() - start
        output_hash = _sha256({n: _frame_hash(f) for n, f in sorted(frames.items())})
        files = [f"{stem}.parquet" for stem in _FILES[stage].values()]
        record = StageRecord(stage, key, output_hash, False, seconds, counts, files, _now())
        if self.run_dir is not None:
            info = {
                "stage": stage,
                "title": STAGES[stage][0],
                "input_hash": key,
                "output_hash": output_hash,
                "counts": counts,
                "seconds": seconds,
                "finished": record.finished,
            }
            self._write(stage, frames, info)
        self._say(f"{STAGES[stage][0]}: computed in {seconds:.1f} s")
        self._frames[stage] = frames
        self._records[stage] = record
        return frames

    def _say(self, text: str) -> None:
        if self.progress:
            print(text, flush=True)

    def _ensure_indexed(self, systems: Mapping[str, Retriever | pd.DataFrame]) -> None:
        for s in systems.values():
            if isinstance(s, Retriever) and id(s) not in self._indexed:
                s.index(self.corpus)
                self._indexed.add(id(s))

    def _compute(self, stage: str) -> dict[str, pd.DataFrame]:
        if stage == "s1":
            return {"queries": normalise_queries(self.queries_in, self.rewrite)}
        if stage == "s2":
            self._ensure_indexed(self.systems)
            return {"pools": pool_candidates(self.queries(), self.systems, self.depth)}
        if stage == "s3":
            return {"candidates": merge_pools(self.pools(), self.rrf_k)}
        if stage == "s4":
            return {
                "grades": grade_candidates(
                    self.candidates(), self.queries(), self.corpus, self.judge
                )
            }
        if stage == "s5":
            return {"pool": prune_pool(self.grades(), self.min_pool, self.keep_grade)}
        return refine_pools(
            self.pool(),
            self.queries(),
            self.corpus,
            self.judge,
            config=self.refine_config,
            seed=self.seed,
        )

    @staticmethod
    def _counts(stage: str, frames: dict[str, pd.DataFrame]) -> dict[str, Any]:
        if stage == "s1":
            q = frames["queries"]
            return {"queries": len(q), "rewritten": int(q["rewritten"].sum())}
        if stage == "s2":
            p = frames["pools"]
            return {
                "pairs": len(p),
                "per_system": {str(k): int(v) for k, v in p.groupby("system").size().items()},
            }
        if stage == "s3":
            c = frames["candidates"]
            return {"candidates": len(c), "queries": int(c["query_id"].nunique())}
        if stage == "s4":
            g = frames["grades"]
            return {
                "graded": len(g),
                "valid": int(g["valid"].sum()),
                "invalid": int((g["status"] == "invalid").sum()),
                "failed": int((g["status"] == "failed").sum()),
                "cached": int(g["cached"].sum()),
                "reminded": int(g["reminded"].sum()),
                "attempts": int(g["attempts"].sum()),
                "input_tokens": int(g["input_tokens"].sum()),
                "output_tokens": int(g["output_tokens"].sum()),
            }
        if stage == "s5":
            p = frames["pool"]
            return {
                "pool": len(p),
                "kept_for_grade": int((p["kept"] == "grade").sum()),
                "filled": int((p["kept"] == "fill").sum()),
            }
        s = frames["summary"]
        return {
            "queries": len(s),
            "calls": int(s["calls"].sum()),
            "invalid": int(s["invalid"].sum()),
            "cached": int(s["cached"].sum()),
            "stop_reasons": {str(k): int(v) for k, v in s["stop_reason"].value_counts().items()},
        }

    def _done(self, stage: str) -> bool:
        """The stage's output is in memory or intact in the run folder (then loaded). Its
        upstream stages are computed or loaded to check: call it only when they call no judge."""
        return stage in self._frames or self._try_load(stage, self._key(stage))

    # -- cost before spending

    def estimate(self) -> Any:
        """Price the LLM calls still to make (S1-S3 run first: they call no judge).

        S4 is priced exactly (one call per uncached candidate). S6 is priced as an upper bound:
        ``refine_max_iterations`` calls per query, each a batch of ``m`` passages (the first
        ``m`` of the pool, or of the RRF order when S4 has not run). A stage already complete in
        the run folder costs nothing. Offline judges plan no call.

        Returns
        -------
        CostEstimate
        """
        from ragnb.ledger import PriceTable, estimate_calls

        candidates = self.candidates()
        planned: list[Any] = []
        notes = []
        s4_done = self._done("s4")
        if not s4_done:
            items = _items(candidates, self.queries(), _texts(self.corpus))
            planned += self.judge.plan(items, kind="grade", stage=LEDGER_STAGES["s4"])
            head = candidates.rename(columns={"rrf_rank": "pool_rank"})
        else:
            head = self.pool()
        if not (s4_done and self._done("s6")):
            m = self.refine_config.m
            batches = []
            texts = _texts(self.corpus)
            qtext = dict(zip(self.queries()["query_id"], self.queries()["normalised"], strict=True))
            for qid, g in head.sort_values("pool_rank").groupby("query_id", sort=True):
                ids = [str(d) for d in g["doc_id"].head(m)]
                if len(ids) >= 2:
                    batches.append(
                        {
                            "query_id": qid,
                            "query": qtext[qid],
                            "doc_ids": ids,
                            "passages": [texts[d] for d in ids],
                        }
                    )
            if batches:
                bound = self.judge.plan(batches, kind="rank", stage=LEDGER_STAGES["s6"])
                n = self.refine_config.max_iterations
                planned += [
                    replace(c, item=f"{c.item}#{i}", cached=False) for c in bound for i in range(n)
                ]
                if bound:
                    notes.append(
                        f"S6 is priced as an upper bound: {n} listwise calls per query "
                        f"(refine_max_iterations) of {m} passages; refinement usually stops "
                        "earlier"
                    )
        ledger = self.ledger
        prices = ledger.prices if ledger is not None else PriceTable.load()
        self._estimate = estimate_calls(planned, prices=prices, notes=notes)
        return self._estimate

    # -- the whole run

    def run(self) -> GoldenSet:
        """Run (or resume) S1-S6, judge the new systems incrementally, export.

        Raises
        ------
        BudgetExceededError
            When ``budget_usd`` is set and the estimate exceeds it (before any S4 call).
        """
        from ragnb.ledger import check_budget

        est = self.estimate()
        if self.budget_usd is not None and est.calls:
            check_budget(est, self.budget_usd)
        refined = self.refined()
        golden = GoldenSet(
            pipeline=self,
            queries=self.queries(),
            pools=self.pools(),
            candidates=self.candidates(),
            grades=self.grades(),
            pool=self.pool(),
            order=refined["order"],
            history=refined["history"],
            refine_summary=refined["summary"],
            estimate=est,
        )
        golden._load_increments()
        if self.new_systems:
            self._ensure_indexed(self.new_systems)
            for name, system in self.new_systems.items():
                run = (
                    system
                    if isinstance(system, pd.DataFrame)
                    else system.retrieve(self.queries()[["query_id", "text"]], k=self.incremental_k)
                )
                golden.extend(run, name, k=self.incremental_k, export=False)
        if self.run_dir is not None:
            golden.export()
        return golden


def public_judge_info(judge: Judge) -> dict[str, Any]:
    """:meth:`Judge.describe` for manifests: ``base_url`` only when it holds no credentials
    (else None, with ``base_url_withheld`` saying why).

    Examples
    --------
    >>> from ragnb.judge import OpenAIJudge
    >>> j = OpenAIJudge(base_url="http://user:pw@127.0.0.1:9/v1")  # doctest: +SKIP
    >>> public_judge_info(j)["base_url"] is None  # doctest: +SKIP
    True
    """
    info = dict(judge.describe())
    url, withheld = _public_url(getattr(judge, "base_url", None))
    if "base_url" in info or withheld:
        info["base_url"] = url
        if withheld:
            info["base_url_withheld"] = "the URL holds credentials or a query string"
    return _scrub(info, _secrets())


def judge_banner(judge: Judge) -> str:
    """Markdown naming the judge; offline judges say they are not an LLM."""
    jid = judge.judge_id
    if jid.startswith("noisy-judge"):
        return f"**Judge: {jid} — simulated from the dataset's labels, not an LLM.**"
    if jid.startswith("qrels-judge"):
        return f"**Judge: {jid} — the dataset's own labels, not an LLM.**"
    url, withheld = _public_url(getattr(judge, "base_url", None))
    where = url or ("a server whose URL is withheld" if withheld else "$OPENAI_BASE_URL or OpenAI")
    return f"**Judge: {jid} — an LLM, at {where}.**"


# ----------------------------------------------------------------------------- the result


@dataclass
class Increment:
    """One incremental judging of a new system (:meth:`GoldenSet.extend`).

    Attributes
    ----------
    system : str
    k : int
        Depth judged.
    frame : DataFrame
        The pairs of the system's top ``k`` that had no judgement: ``query_id``, ``doc_id``,
        ``rank``, ``grade`` (Int64), ``valid``, ``status``, ``reason``, ``cached``, ``system``.
    top_pairs : int
        Pairs in the system's top ``k`` (golden queries only).
    judged_before, judged_after : float
        Judged@k of the system on the golden qrels before and after.
    calls : int
        Items sent to the judge (the unjudged pairs; cached answers cost nothing).
    """

    system: str
    k: int
    frame: pd.DataFrame
    top_pairs: int
    judged_before: float
    judged_after: float
    calls: int

    @property
    def new_judgements(self) -> int:
        return int(self.frame["valid"].sum())

    def summary(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "k": self.k,
            "top_pairs": self.top_pairs,
            "judged_now": self.calls,
            "new_judgements": self.new_judgements,
            "invalid": int((~self.frame["valid"]).sum()),
            "judged_before": self.judged_before,
            "judged_after": self.judged_after,
        }


@dataclass(eq=False)
class GoldenSet:
    """A built golden set: every stage's frame, the judgements with their provenance, exports.

    Attributes
    ----------
    pipeline : GoldenPipeline
    queries, pools, candidates, grades, pool : DataFrame
        S1 to S5 (see the stage functions).
    order, history, refine_summary : DataFrame
        S6's frames.
    estimate : CostEstimate
        What the run was priced at before S4.
    judgements : DataFrame
        Every valid grade: ``query_id``, ``doc_id``, ``grade`` (int), ``source`` ("pool" or
        "incremental"), ``systems`` (who brought it: S3's systems for the pool, the new system
        for an increment).
    increments : list of Increment
    """

    pipeline: GoldenPipeline
    queries: pd.DataFrame
    pools: pd.DataFrame
    candidates: pd.DataFrame
    grades: pd.DataFrame
    pool: pd.DataFrame
    order: pd.DataFrame
    history: pd.DataFrame
    refine_summary: pd.DataFrame
    estimate: Any = None
    judgements: pd.DataFrame = field(default_factory=pd.DataFrame)
    increments: list[Increment] = field(default_factory=list)
    new_runs: dict[str, pd.DataFrame] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.judgements.empty:
            valid = self.grades[self.grades["valid"]]
            systems = self.candidates.set_index(["query_id", "doc_id"])["systems"]
            self.judgements = pd.DataFrame(
                {
                    "query_id": valid["query_id"].to_numpy(dtype=object),
                    "doc_id": valid["doc_id"].to_numpy(dtype=object),
                    "grade": valid["grade"].astype(np.int64).to_numpy(),
                    "source": "pool",
                    "systems": [
                        systems.get((q, d), "")
                        for q, d in zip(valid["query_id"], valid["doc_id"], strict=True)
                    ],
                }
            ).astype({"source": object, "systems": object})

    # -- views

    @property
    def judge(self) -> Judge:
        return self.pipeline.judge

    @property
    def run_dir(self) -> Path | None:
        return self.pipeline.run_dir

    @property
    def qrels(self) -> pd.DataFrame:
        """The golden qrels: ``query_id``, ``doc_id``, ``relevance`` (the judge's grades)."""
        q = self.judgements[["query_id", "doc_id", "grade"]].rename(columns={"grade": "relevance"})
        return q.astype({"relevance": np.int64}).reset_index(drop=True)

    @property
    def runs(self) -> dict[str, pd.DataFrame]:
        """Each pool system's top ``depth`` as a run frame."""
        return {
            str(name): g[["query_id", "doc_id", "score", "rank"]].reset_index(drop=True)
            for name, g in self.pools.groupby("system", sort=False)
        }

    @property
    def fused_run(self) -> pd.DataFrame:
        """S3's RRF fusion of the pool systems as a run frame."""
        c = self.candidates
        return pd.DataFrame(
            {"query_id": c["query_id"], "doc_id": c["doc_id"], "score": c["rrf_score"]}
        )

    @property
    def refined_run(self) -> pd.DataFrame:
        """S6's order as a run frame (score = pool size - rank + 1)."""
        o = self.order
        size = o.groupby("query_id")["rank"].transform("max")
        return pd.DataFrame(
            {
                "query_id": o["query_id"],
                "doc_id": o["doc_id"],
                "score": (size - o["rank"] + 1).astype(np.float64),
            }
        )

    def top(self) -> pd.DataFrame:
        """The refined top ``top_n`` per query: ``query_id``, ``rank``, ``doc_id``, ``grade``,
        ``score``, ``sigma``, ``exposures``."""
        t = self.order[self.order["in_top"]]
        return t[
            ["query_id", "rank", "doc_id", "grade", "score", "sigma", "exposures"]
        ].reset_index(drop=True)

    def banner(self) -> str:
        return judge_banner(self.judge)

    def judged_at_k(self, cutoffs: Sequence[int] | None = None) -> pd.DataFrame:
        """Judged@K per system on the golden qrels: pool systems, new systems (after their
        increment, with ``judged_before``).

        Returns
        -------
        DataFrame
            ``system``, ``role`` ("pool" or "new"), ``k``, ``judged``, ``n_queries``,
            ``judged_before`` (new systems at their increment's k: before judging; NaN
            otherwise).
        """
        ks = list(cutoffs) if cutoffs is not None else self.pipeline.cutoffs
        pool = judged_table(self.qrels, self.runs, ks).assign(role="pool")
        parts = [pool]
        if self.new_runs:
            new = judged_table(self.qrels, self.new_runs, ks).assign(role="new")
            parts.append(new)
        out = pd.concat(parts, ignore_index=True)
        out["judged_before"] = np.nan
        for inc in self.increments:
            hit = (out["system"] == inc.system) & (out["k"] == inc.k) & (out["role"] == "new")
            out.loc[hit, "judged_before"] = inc.judged_before
        return out[["system", "role", "k", "judged", "n_queries", "judged_before"]]

    def pool_overlap(self) -> pd.DataFrame:
        """:func:`pool_overlap` of S2."""
        return pool_overlap(self.pools)

    def grade_distribution(self) -> pd.DataFrame:
        """:func:`grade_distribution` of S4, S5 and the refined top."""
        return grade_distribution(self.grades, self.pool, self.order)

    def convergence(self, max_traces: int = 20) -> pd.DataFrame:
        """S6's history, long, for the convergence chart.

        Parameters
        ----------
        max_traces : int, default 20
            Queries whose own traces are kept (the first ones); the mean covers every query.

        Returns
        -------
        DataFrame
            ``query_id`` (a query, or ``"(mean)"``), ``iteration`` (judge calls so far),
            ``metric`` (``n_locks``, ``mean_sigma``, ``stable_for``), ``value`` (float). The mean
            at an iteration is over every query, a query that stopped earlier counting with its
            final state.
        """
        metrics = ["n_locks", "mean_sigma", "stable_for"]
        h = self.history
        if h.empty:
            return pd.DataFrame(columns=["query_id", "iteration", "metric", "value"])
        keep = list(dict.fromkeys(h["query_id"]))[:max_traces]
        traces = h[h["query_id"].isin(keep)].melt(
            id_vars=["query_id", "iteration"], value_vars=metrics, var_name="metric"
        )
        means = []
        for metric in metrics:
            wide = h.pivot(index="iteration", columns="query_id", values=metric).astype(float)
            mean = wide.ffill().mean(axis=1)
            means.append(
                pd.DataFrame(
                    {"query_id": "(mean)", "iteration": mean.index, "metric": metric}
                ).assign(value=mean.to_numpy())
            )
        out = pd.concat([traces, *means], ignore_index=True)
        return out.astype({"query_id": object, "value": np.float64})

    def stop_reasons(self) -> pd.DataFrame:
        """Queries per S6 stop reason, with mean calls: ``stop_reason``, ``queries``,
        ``mean_calls``."""
        s = self.refine_summary
        out = s.groupby("stop_reason").agg(
            queries=("query_id", "size"), mean_calls=("calls", "mean")
        )
        return out.reset_index()

    def increments_table(self) -> pd.DataFrame:
        """One row per increment (:meth:`Increment.summary`): ``system``, ``k``, ``top_pairs``,
        ``judged_now``, ``new_judgements``, ``invalid``, ``judged_before``, ``judged_after``."""
        return pd.DataFrame([inc.summary() for inc in self.increments])

    def ledger_totals(self) -> pd.DataFrame:
        """LLM requests, tokens and US dollars per ledger stage (empty for offline judges)."""
        ledger = self.pipeline.ledger
        if ledger is None:
            return pd.DataFrame(
                columns=["stage", "requests", "answered", "failed", "cached", "cost_usd"]
            )
        return ledger.totals(by="stage")

    def stages(self) -> pd.DataFrame:
        """One row per stage: ``stage``, ``title``, ``reused``, ``seconds``, ``input_hash``
        (first 12 hex digits), ``counts`` (JSON)."""
        rows = []
        for sid, rec in self.pipeline._records.items():
            rows.append(
                (sid, STAGES[sid][0], rec.reused, rec.seconds, rec.input_hash[:12])
                + (json.dumps(rec.counts),)
            )
        return pd.DataFrame(
            rows, columns=["stage", "title", "reused", "seconds", "input_hash", "counts"]
        )

    # -- incremental judging

    def extend(
        self, run: pd.DataFrame, system: str, *, k: int = 10, export: bool = True
    ) -> Increment:
        """Judge only the unjudged part of a new system's top ``k`` and add it to the qrels.

        Parameters
        ----------
        run : DataFrame
            The new system's run (``query_id``, ``doc_id``, ``score``); queries outside the
            golden set are ignored.
        system : str
            Its name, recorded with every judgement it brings (``source="incremental"``).
        k : int, default 10
        export : bool, default True
            Rewrite the run folder's products (qrels, judgements, manifest) at once; the
            increment itself (``increments/<system>.parquet``) is always written when there is a
            run folder.

        Returns
        -------
        Increment
            A second call with the same run judges nothing (every pair is judged).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}")
        qids = self.queries["query_id"].tolist()
        top = _top_of(run, qids, k)
        top = top.assign(query_id=top["query_id"].astype(str), doc_id=top["doc_id"].astype(str))
        before_qrels = self.qrels
        judged_before = judged_table(before_qrels, {system: top}, [k])["judged"].iloc[0]
        have = set(zip(self.judgements["query_id"], self.judgements["doc_id"], strict=True))
        todo = top[
            [(q, d) not in have for q, d in zip(top["query_id"], top["doc_id"], strict=True)]
        ].reset_index(drop=True)
        cols = ["query_id", "doc_id", "rank", "grade", "valid", "status", "reason", "cached"]
        if len(todo):
            items = _items(todo, self.queries, _texts(self.pipeline.corpus))
            g = self.judge.grade_many(items, stage=INCREMENTAL_STAGE)
            frame = pd.DataFrame(
                {
                    "query_id": todo["query_id"].to_numpy(dtype=object),
                    "doc_id": todo["doc_id"].to_numpy(dtype=object),
                    "rank": todo["rank"].to_numpy(dtype=np.int64),
                    "grade": g["grade"].to_numpy(),
                    "valid": g["valid"].to_numpy(dtype=bool),
                    "status": g["status"].to_numpy(dtype=object),
                    "reason": g["reason"].to_numpy(dtype=object),
                    "cached": g["cached"].to_numpy(dtype=bool),
                }
            )
            frame["grade"] = frame["grade"].astype("Int64")
        else:
            frame = pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
            frame = frame.astype(
                {"rank": np.int64, "grade": "Int64", "valid": bool, "cached": bool}
            )
        frame["system"] = system
        frame = frame.astype({"system": object})
        self._add(frame)
        self.new_runs[system] = top
        inc = Increment(
            system,
            k,
            frame,
            len(top),
            float(judged_before),
            float(judged_table(self.qrels, {system: top}, [k])["judged"].iloc[0]),
            len(todo),
        )
        self.increments.append(inc)
        if self.run_dir is not None:
            self._write_increment(inc)
            if export:
                self.export()
        return inc

    def _add(self, frame: pd.DataFrame) -> None:
        valid = frame[frame["valid"].astype(bool)]
        if valid.empty:
            return
        new = pd.DataFrame(
            {
                "query_id": valid["query_id"].to_numpy(dtype=object),
                "doc_id": valid["doc_id"].to_numpy(dtype=object),
                "grade": valid["grade"].astype(np.int64).to_numpy(),
                "source": "incremental",
                "systems": valid["system"].to_numpy(dtype=object),
            }
        ).astype({"source": object})
        both = pd.concat([self.judgements, new], ignore_index=True)
        self.judgements = both.drop_duplicates(["query_id", "doc_id"], keep="first").reset_index(
            drop=True
        )

    def _increment_key(self) -> str:
        return _sha256(
            {"judge": judge_fingerprint(self.judge), "s4": self.pipeline._records["s4"].output_hash}
        )

    def _write_increment(self, inc: Increment) -> None:
        from ragnb.io import atomic_write, read_json, write_json

        assert self.run_dir is not None
        folder = self.run_dir / "increments"
        path = folder / f"{inc.system}.parquet"
        marker = folder / f"{inc.system}.done.json"
        frame = inc.frame
        if (
            path.exists()
            and marker.exists()
            and read_json(marker).get("key") == self._increment_key()
        ):
            old = pd.read_parquet(path)
            frame = pd.concat([old, frame], ignore_index=True)
            # a pair judged again (an invalid answer retried) keeps its latest judgement
            frame = frame.drop_duplicates(["query_id", "doc_id"], keep="last")
        with atomic_write(path, "wb") as f:
            frame.to_parquet(f, index=False)
        write_json(
            {"system": inc.system, "key": self._increment_key(), "k": inc.k, "updated": _now()},
            marker,
        )

    def _load_increments(self) -> None:
        """Judgements of earlier increments whose judge and S4 match this run's."""
        if self.run_dir is None:
            return
        from ragnb.io import read_json

        folder = self.run_dir / "increments"
        if not folder.is_dir():
            return
        key = self._increment_key()
        qids = set(self.queries["query_id"])
        for marker in sorted(folder.glob("*.done.json")):
            info = read_json(marker)
            path = folder / f"{info.get('system')}.parquet"
            if info.get("key") != key or not path.exists():
                continue
            frame = pd.read_parquet(path)
            self._add(frame[frame["query_id"].isin(qids)])

    # -- exports

    def manifest(self) -> dict[str, Any]:
        """What produced the golden set, JSON-safe and free of secrets.

        Keys: ``format``, ``written``, ``judge_id``, ``judge`` (describe, ``base_url`` only when
        it holds no credentials), ``config`` (the notebook parameters, when built from them),
        ``parameters`` (the stages'), ``dataset``, ``data_sha256``, ``systems`` (each pool and
        new system's configuration), ``rewriter``, ``seeds``, ``stages`` (per stage: input and
        output hashes, reused, seconds, counts, files), ``counts``, ``cache`` (hits and misses
        of the judge's cache; cached answers per stage), ``costs`` (the ledger's totals per
        stage and overall; None for offline judges), ``estimate``, ``increments``, ``versions``,
        ``files``.
        """
        from ragnb.provenance import versions

        p = self.pipeline
        judge_info = public_judge_info(p.judge)
        systems: dict[str, Any] = {}
        for role, group in (("pool", p.systems), ("new", p.new_systems)):
            for name, s in group.items():
                info = (
                    {"run": "given as a frame", **_system_fingerprint(s)}
                    if isinstance(s, pd.DataFrame)
                    else s.describe()
                )
                systems[name] = {"role": role, **info}
        cache = getattr(p.judge, "cache", None)
        g = self.grades
        costs = None if p.ledger is None else p.ledger.summary()
        m = {
            "format": FORMAT,
            "written": _now(),
            "judge_id": p.judge.judge_id,
            "judge": judge_info,
            "config": None if p.config is None else asdict(p.config),
            "parameters": {
                "depth": p.depth,
                "rrf_k": p.rrf_k,
                "min_pool": p.min_pool,
                "keep_grade": p.keep_grade,
                "top_n": p.top_n,
                "refine": asdict(p.refine_config),
                "incremental_k": p.incremental_k,
                "cutoffs": p.cutoffs,
                "budget_usd": p.budget_usd,
            },
            "dataset": p.dataset_info,
            "data_sha256": p._data(),
            "systems": systems,
            "rewriter": p._params("s1")["rewrite"],
            "seeds": {
                "pipeline": p.seed,
                "refine": "per query: first 8 bytes of sha256('<seed>:<query_id>'), little-endian",
                "judge": getattr(p.judge, "seed", None),
            },
            "stages": {sid: rec.to_dict() for sid, rec in p._records.items()},
            "counts": {
                "queries": len(self.queries),
                "rewritten": int(self.queries["rewritten"].sum()),
                "pool_pairs": len(self.pools),
                "candidates": len(self.candidates),
                "graded": len(g),
                "valid": int(g["valid"].sum()),
                "invalid": int((g["status"] == "invalid").sum()),
                "failed": int((g["status"] == "failed").sum()),
                "pruned_pool": len(self.pool),
                "refined_queries": len(self.refine_summary),
                "refine_calls": int(self.refine_summary["calls"].sum()),
                "qrels": len(self.judgements),
                "qrels_from_increments": int((self.judgements["source"] == "incremental").sum()),
            },
            "cache": {
                "judge_cache": None if cache is None else cache.summary(),
                "cached_answers": {
                    "s4": int(g["cached"].sum()),
                    "s6": int(self.refine_summary["cached"].sum()),
                },
            },
            "costs": costs,
            "estimate": None if self.estimate is None else self.estimate.summary(),
            "increments": [inc.summary() for inc in self.increments],
            "versions": versions(),
            "files": _FILE_LIST,
        }
        return _scrub(m, _secrets())

    def export(self, folder: str | os.PathLike[str] | None = None) -> Path:
        """Write the golden set's products (see the module's table) and the manifest.

        Parameters
        ----------
        folder : str or PathLike, optional
            Default: the run folder.

        Returns
        -------
        Path
        """
        from ragnb.io import atomic_write, write_json, write_qrels, write_run

        out = Path(folder) if folder is not None else self.run_dir
        if out is None:
            raise InputError("no run folder: pass a folder or build with run_dir/export_dir")
        write_qrels(self.qrels, out / "golden.qrels")
        if len(self.order):
            write_run(self.refined_run, out / "refined.trec", tag="golden-refined")
        for name, run in self.runs.items():
            write_run(run[["query_id", "doc_id", "score"]], out / "runs" / f"{name}.trec", tag=name)
        for stem, frame in (
            ("judgements", self.judgements),
            ("refined_top", self.top()),
            ("pool_provenance", self.pools),
            ("judged_at_k", self.judged_at_k()),
        ):
            with atomic_write(out / f"{stem}.csv") as f:
                frame.to_csv(f, index=False)
        write_json(self.manifest(), out / "manifest.json")
        return out

    def summary_markdown(self) -> str:
        """A short markdown account of the run: stages computed or reused, counts, costs."""
        m = self.manifest()
        c = m["counts"]
        lines = [
            self.banner(),
            "",
            f"{c['queries']} queries ({c['rewritten']} rewritten); {c['pool_pairs']} pooled "
            f"(system, document) pairs from {len(self.runs)} systems, {c['candidates']} "
            f"candidates after RRF; {c['valid']} valid grades, {c['invalid']} invalid, "
            f"{c['failed']} failed; pruned pool {c['pruned_pool']}; S6 made {c['refine_calls']} "
            f"listwise calls; {c['qrels']} judgements in the golden qrels "
            f"({c['qrels_from_increments']} from incremental judging).",
            "",
            "| stage | computed or reused | seconds |",
            "|---|---|---|",
        ]
        for rec in m["stages"].values():
            lines.append(
                f"| {rec['title']} | {'reused' if rec['reused'] else 'computed'} | "
                f"{rec['seconds']:.2f} |"
            )
        if self.run_dir is not None:
            lines += ["", f"Run folder: `{self.run_dir}` (manifest.json, golden.qrels, stages/)."]
        return "\n".join(lines)

    # -- analyses the notebook shows

    def calibrate(self, human: pd.DataFrame | None = None, *, measure: str | None = None) -> Any:
        """The judge against human labels (:func:`ragnb.golden.calibration.calibrate`).

        Parameters
        ----------
        human : DataFrame, optional
            Human labels as qrels on the judge's scale; default the dataset's own labels mapped
            by ``grade_map`` (offline: the "human" labels the noisy judge was simulated from).
        measure : str, optional
            Default the config's ``calibration_measure`` (``nDCG@10``).

        Returns
        -------
        Calibration
            Systems: the pool systems, their RRF fusion and the new systems. Exported to
            ``<run folder>/calibration/`` when there is a run folder.
        """
        from ragnb.golden.calibration import calibrate

        p = self.pipeline
        if human is None:
            data = getattr(p, "dataset", None)
            if data is None or p.config is None:
                raise InputError("pass human labels: this golden set was not built from a config")
            human, _ = human_labels(p.config, data.qrels)
        if measure is None:
            measure = p.config.calibration_measure if p.config is not None else "nDCG@10"
        runs: dict[str, pd.DataFrame] = {**self.runs, "rrf": self.fused_run, **self.new_runs}
        scale = self.judge.scale
        labels = None if scale is None else list(range(scale[0], scale[1] + 1))
        cal = calibrate(human, self.qrels, runs, measure=measure, labels=labels)
        if self.run_dir is not None:
            cal.export(self.run_dir / "calibration")
        return cal

    def spear(self, k: int | None = None) -> Any:
        """SPEAR's relative evaluation of the pool systems on the golden grades
        (:func:`~.calibration.spear_evaluate`), at ``k`` (default ``depth``); relevant means
        a grade >= ``keep_grade``."""
        from ragnb.golden.calibration import spear_evaluate

        p = self.pipeline
        return spear_evaluate(self.qrels, self.runs, k or p.depth, rel=p.keep_grade)

    def simulate(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The refinement vs one-shot simulation (:mod:`.simulation`) on the golden grades,
        with the config's ``sim_*`` settings.

        Returns
        -------
        frame, summary : DataFrame
            :func:`~.simulation.simulate` and :func:`~.simulation.summarise` (written to
            ``simulation.csv`` and ``simulation_summary.csv`` in the run folder).
        """
        from ragnb.golden.simulation import simulate, summarise
        from ragnb.io import atomic_write

        p = self.pipeline
        cfg = p.config if p.config is not None else GoldenSetConfig()
        qids = list(dict.fromkeys(self.qrels["query_id"]))
        if cfg.sim_queries:
            qids = qids[: cfg.sim_queries]
        frame = simulate(
            self.qrels,
            pool_size=cfg.sim_pool_size,
            noise_levels=cfg.sim_noise_levels,
            budgets=cfg.sim_budgets,
            replicates=cfg.sim_replicates,
            seed=cfg.seed,
            top_n=p.top_n,
            config=RefineConfig(m=p.refine_config.m),
            dataset=str(p.dataset_info.get("dataset", "")),
            queries=qids,
        )
        summary = summarise(frame, n_resamples=1000, seed=cfg.seed)
        if self.run_dir is not None:
            for stem, f in (("simulation", frame), ("simulation_summary", summary)):
                with atomic_write(self.run_dir / f"{stem}.csv") as fh:
                    f.to_csv(fh, index=False)
        return frame, summary


_FILE_LIST = [
    "manifest.json",
    "golden.qrels",
    "judgements.csv",
    "refined.trec",
    "refined_top.csv",
    "pool_provenance.csv",
    "judged_at_k.csv",
    "runs/<system>.trec",
    "stages/s<n>.done.json and stages/s<n>_*.parquet",
    "increments/<system>.parquet",
    "ledger.jsonl (LLM judges)",
]
