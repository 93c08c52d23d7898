"""The golden-set pipeline behind notebook 02: S1-S6 (:mod:`ragnb.studies.golden.stages`) in order,
each stage resumable from a run folder.

The run folder
--------------
With ``run_dir`` set, each stage writes its frames (Parquet) and then a marker
``stages/s<n>.done.json`` holding the SHA-256 of its inputs: the stage's parameters, the output
hashes of the stages it reads, the data (corpus and query texts), the source of the modules it runs
(:data:`~ragnb.studies.golden.config.STAGE_CODE`) and, for judged stages, the judge's identity
(:func:`~ragnb.studies.golden.fingerprints.judge_fingerprint`: model, prompt hash, parameters, or
the labels of an offline judge; never the key, the URL or cache paths). Re-running a stage whose
marker matches and whose files are intact loads them instead: no retrieval, no judge call. Every
file is written atomically (:mod:`ragnb.studies.golden.store` through :mod:`ragnb.io.files`: a
temporary file renamed over the target), the marker last, so a crash mid-stage leaves the previous
state and the stage is simply run again. After S6, :meth:`GoldenSet.export
<ragnb.studies.golden.GoldenSet.export>` writes the products beside the stages.

Failed judgements
-----------------
A judgement that got no answer (``status == "failed"``: the server erred after every retry) is never
a finished judgement. S4 with failures writes its frames and ``stages/s4.partial.json`` (the
failures' count and most common cause) but no done marker, and a failed answer is never cached: the
next run recomputes S4 through the cache, so only the failed items reach the server. When more than
``max_failed_share`` of S4's judgements failed (default 0: any), the run stops before S5 with
:class:`~ragnb.errors.JudgeFailures` naming the count, the cause (HTTP status and the server's
message) and how to resume; below it the run goes on and :meth:`GoldenPipeline.banner` and
:meth:`GoldenSet.summary_markdown <ragnb.studies.golden.GoldenSet.summary_markdown>` say how many
failed. A judge that cannot answer at all (a 401, 403 or 404, or a server that does not answer)
stops the run at once with :class:`~ragnb.errors.JudgeUnavailable`.

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Section 3.4 (rag-gs, S1-S6).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

import ragnb.studies.golden.store as store
from ragnb.core.paths import resolve_path
from ragnb.core.provenance import sha256_json, utc_now
from ragnb.core.validation import check_int_at_least, check_positive_int, check_positive_ints
from ragnb.errors import InputError, JudgeFailures, JudgeUnavailable
from ragnb.io.files import read_json, remove_stale_temporaries, write_json, write_parquet
from ragnb.judge.base import Judge
from ragnb.judge.degenerate import CheckThresholds
from ragnb.retrievers.retrieve import Retriever
from ragnb.studies.golden.analysis import judged_table
from ragnb.studies.golden.config import (
    FILES,
    INCREMENTAL_STAGE,
    LEDGER_STAGES,
    STAGE_CODE,
    STAGES,
    GoldenSetConfig,
)
from ragnb.studies.golden.fingerprints import (
    as_objects,
    code_sha256,
    data_hash,
    frame_hash,
    judge_fingerprint,
    system_fingerprint,
)
from ragnb.studies.golden.goldenset import BuildRecord, GoldenSet, Increment, add_judgements
from ragnb.studies.golden.judging import failure_cause, judge_banner, make_judge
from ragnb.studies.golden.refine import RefineConfig
from ragnb.studies.golden.stages import (
    default_keep_grade,
    grade_candidates,
    grading_items,
    make_pool_retriever,
    merge_pools,
    normalise_queries,
    passages_by_id,
    pool_candidates,
    prune_pool,
    refine_pools,
    top_of_run,
)
from ragnb.studies.golden.store import StageRecord

__all__ = ["GoldenPipeline", "build_pipeline", "read_dataset", "select_queries"]

log = logging.getLogger("ragnb.studies.golden")


@contextmanager
def _one_bar(judge: Judge, total: int, desc: str, show: bool) -> Iterator[Any]:
    """A tqdm bar of ``total`` steps on stderr while the judge's client draws none of its own
    (one bar for a stage of many small calls, not a bar per call)."""
    from tqdm import tqdm

    client = getattr(judge, "client", None)
    own = bool(getattr(client, "progress", False))
    if own:
        client.progress = False  # type: ignore[union-attr]
    bar = tqdm(total=total, desc=desc, unit="query", disable=not show)
    try:
        yield bar
    finally:
        bar.close()
        if own:
            client.progress = True  # type: ignore[union-attr]


def read_dataset(config: GoldenSetConfig) -> Any:
    """The dataset of ``config`` (:func:`ragnb.io.files.read_beir`, qrels optional): with a
    query file or a trace file as the query source, ``queries.jsonl`` is optional too (a
    folder holding only ``corpus.jsonl`` is enough)."""
    from ragnb.io.files import read_beir

    own_queries = bool(config.queries or config.traces)
    return read_beir(
        config.dataset_path(),
        split=config.split,
        qrels="optional",
        queries="optional" if own_queries else "required",
    )


def select_queries(config: GoldenSetConfig, data: Any) -> tuple[pd.DataFrame, str]:
    """The golden set's queries and, in words, where they come from.

    ``config.queries`` (a ``.txt``, ``.csv`` or ``.jsonl`` file,
    :func:`ragnb.io.readers.read_query_file`) overrides the dataset's; else the queries of the
    qrels split, or every query of ``queries.jsonl`` when the dataset has no qrels (queries
    alone). The first ``max_queries`` are kept (0: all).

    Raises
    ------
    InputError
        A malformed query file (named, with the line); no query left.
    """
    from ragnb.core.paths import display_path
    from ragnb.io.readers import read_query_file

    if config.queries:
        path = resolve_path(config.queries)
        queries = read_query_file(path)
        source = f"the query file {display_path(path)}"
    elif data.has_qrels:
        queries = data.judged_queries
        source = f"the judged queries of qrels/{config.split}.tsv"
    else:
        queries = data.queries.reset_index(drop=True)
        source = f"queries.jsonl (no qrels/{config.split}.tsv: queries alone)"
    total = len(queries)
    if config.max_queries:
        queries = queries.head(config.max_queries)
    if queries.empty:
        raise InputError(f"no query to build a golden set from ({source})", column="queries")
    return queries, f"{len(queries)} of the {total} queries of {source}"


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
        Judged incrementally by :meth:`run` after S6 (:meth:`extend`).
    incremental_k : int, default 10
    budget_usd : float, optional
        :meth:`run` refuses to start S4 when the estimate exceeds it (None: no check).
    cutoffs : sequence of int, default (5, 10, 20)
        Judged@K cutoffs.
    config : GoldenSetConfig, optional
        Recorded in the manifest (set by :func:`build_pipeline`).
    dataset_info : dict, optional
        Recorded in the manifest (e.g. :meth:`ragnb.io.files.BeirDataset.summary`).
    dataset : BeirDataset, optional
        The dataset the corpus and queries come from; its qrels (when it has them) are the
        human labels the golden set's calibration reads by default.
    ledger : Ledger, optional
        Where the judge's LLM calls are recorded (default: the judge's ``ledger``), for costs.
    progress : bool, default False
        Print a line per stage.
    max_failed_share : float in [0, 1], default 0.0
        Share of S4's judgements that may fail (no answer after every retry) before the run
        stops ahead of S5 with :class:`~ragnb.errors.JudgeFailures`. 0: any failure stops it
        (a golden set with holes is not a golden set; the next run re-sends only the failed
        judgements). Below it the run goes on and says how many failed.
    check_thresholds : CheckThresholds, optional
        When the degenerate-judge checks of the golden set's grades report a finding
        (:mod:`ragnb.judge.degenerate`; default ``CheckThresholds()``).
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
        dataset: Any = None,
        ledger: Any = None,
        progress: bool = False,
        max_failed_share: float = 0.0,
        check_thresholds: CheckThresholds | None = None,
    ) -> None:
        if not systems:
            raise InputError("a golden set needs at least one pool system")
        for name, v, low in (("depth", depth, 1), ("top_n", top_n, 1), ("rrf_k", rrf_k, 0)):
            check_int_at_least(v, name, low)
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
        if self.run_dir is not None:  # a run killed mid-write left temporary files: not kept
            remove_stale_temporaries(self.run_dir, recursive=True)
        self.new_systems = dict(new_systems or {})
        self.incremental_k = incremental_k
        self.budget_usd = budget_usd
        self.cutoffs = check_positive_ints(cutoffs, "cutoffs")
        self.config = config
        self.dataset_info = dict(dataset_info or {})
        self.ledger = ledger if ledger is not None else getattr(judge, "ledger", None)
        self.progress = progress
        if isinstance(max_failed_share, bool) or not 0.0 <= float(max_failed_share) <= 1.0:
            raise InputError(f"max_failed_share must be in [0, 1], got {max_failed_share!r}")
        self.max_failed_share = float(max_failed_share)
        self.check_thresholds = check_thresholds or CheckThresholds()
        self._frames: dict[str, dict[str, pd.DataFrame]] = {}
        self._records: dict[str, StageRecord] = {}
        self._indexed: set[int] = set()
        self.dataset = dataset
        self._data_hash: str | None = None
        self._estimate: Any = None

    # -- what the judge is, in words

    def banner(self) -> str:
        """Markdown saying which judge grades, whether it is an LLM, and how many judgements an
        earlier run in the run folder left failed (only those are sent again)."""
        text = judge_banner(self.judge)
        partial = self._partial_info()
        if partial:
            text += (
                f"\n\n**{partial['failed']} of {partial['graded']} judgements failed** in an "
                f"earlier run ({partial['finished']}; most common cause: {partial['cause']}). "
                f"This run re-sends only those {partial['failed']}."
            )
        return text

    def _partial_info(self) -> dict[str, Any] | None:
        """``stages/s4.partial.json`` of the run folder, if S4 last ended with failures."""
        if self.run_dir is None:
            return None
        path = self.run_dir / "stages" / "s4.partial.json"
        if not path.exists():
            return None
        try:
            info = read_json(path)
        except InputError:
            return None
        return info if isinstance(info, dict) and info.get("failed") else None

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

    @property
    def stage_records(self) -> Mapping[str, StageRecord]:
        """The record of each stage run or loaded so far (hashes, reuse, seconds, counts), by
        stage id, in run order; read-only."""
        return MappingProxyType(self._records)

    def stage_params(self, stage: str) -> dict[str, Any]:
        """The parameters of ``stage`` ("s1" to "s6") that enter its input hash, JSON-safe:
        S1 the rewriter's id and the query ids, S2 the depth and each system's fingerprint,
        S3 ``rrf_k``, S4 the judge's fingerprint, S5 ``min_pool`` and ``keep_grade``, S6 the
        judge, the refinement settings and the random seed."""
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
                "systems": {n: system_fingerprint(s) for n, s in self.systems.items()},
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

    def data_sha256(self) -> str:
        """SHA-256 of the corpus and the queries the pipeline read (part of every stage's input
        hash), computed once."""
        if self._data_hash is None:
            self._data_hash = data_hash(self.corpus, self.queries_in)
        return self._data_hash

    def _key(self, stage: str) -> str:
        upstream = {u: self._record(u).output_hash for u in STAGES[stage][2]}
        return sha256_json(
            {
                "stage": stage,
                "params": self.stage_params(stage),
                "upstream": upstream,
                "data": self.data_sha256(),
                "code": code_sha256(STAGE_CODE[stage]),
            }
        )

    def _record(self, stage: str) -> StageRecord:
        self._stage(stage)
        return self._records[stage]

    def _try_load(self, stage: str, key: str) -> bool:
        """Load a finished stage from the run folder into memory; False when it is not there."""
        if self.run_dir is None:
            return False
        start = time.perf_counter()
        loaded = store.load_stage(self.run_dir, stage, key)
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
        self.say(f"{STAGES[stage][0]}: loaded from {self.run_dir}")
        return True

    def _stage(self, stage: str) -> dict[str, pd.DataFrame]:
        if stage in self._frames:
            return self._frames[stage]
        key = self._key(stage)
        if self._try_load(stage, key):
            return self._frames[stage]
        start = time.perf_counter()
        try:
            frames = {name: as_objects(f) for name, f in self._compute(stage).items()}
        except JudgeUnavailable as e:
            raise JudgeUnavailable(
                f"{STAGES[stage][0]} stopped: {e} The run stopped before the next stage.",
                failed=e.failed,
                total=e.total,
                cause=e.cause,
                results=e.results,
            ) from None
        counts = self._counts(stage, frames)
        seconds = time.perf_counter() - start
        output_hash = sha256_json({n: frame_hash(f) for n, f in sorted(frames.items())})
        files = [f"{stem}.parquet" for stem in FILES[stage].values()]
        record = StageRecord(stage, key, output_hash, False, seconds, counts, files, utc_now())
        if stage == "s4" and counts["failed"]:
            self._partial(stage, frames, record)  # no done marker: never a finished stage
        elif self.run_dir is not None:
            info = {
                "stage": stage,
                "title": STAGES[stage][0],
                "input_hash": key,
                "output_hash": output_hash,
                "counts": counts,
                "seconds": seconds,
                "finished": record.finished,
            }
            store.write_stage(self.run_dir, stage, frames, info)
            (self.run_dir / "stages" / f"{stage}.partial.json").unlink(missing_ok=True)
        self.say(f"{STAGES[stage][0]}: computed in {seconds:.1f} s")
        self._frames[stage] = frames
        self._records[stage] = record
        return frames

    def _partial(self, stage: str, frames: dict[str, pd.DataFrame], record: StageRecord) -> None:
        """A judged stage with failed judgements: its frames and ``s<n>.partial.json`` are
        written (no done marker, so the next run recomputes it through the cache and sends only
        the failed items); past ``max_failed_share`` it raises :class:`JudgeFailures`."""
        grades = frames["grades"]
        failed = grades["status"] == "failed"
        n_failed, total = int(failed.sum()), len(grades)
        cause, n_cause = failure_cause(grades.loc[failed, "reason"].tolist())
        title = STAGES[stage][0]
        if self.run_dir is not None:
            marker, files = store.stage_paths(self.run_dir, stage)
            marker.unlink(missing_ok=True)
            for name, path in files.items():
                write_parquet(frames[name], path)
            info = {"stage": stage, "title": title, "graded": total, "failed": n_failed}
            info.update(cause=cause, cause_count=n_cause, finished=record.finished)
            write_json(info, marker.with_name(f"{stage}.partial.json"))
        resume = (
            "Fix the cause if it persists, then run the same notebook or command again: the "
            f"answered judgements come from the cache and only the {n_failed} failed ones are "
            "sent."
        )
        what = (
            f"{title}: {n_failed} of {total} judgements failed (most common cause, "
            f"{n_cause} of them: {cause})"
        )
        if n_failed > self.max_failed_share * total:
            raise JudgeFailures(
                f"{what}, more than max_failed_share={self.max_failed_share:g} allows; the run "
                f"stopped before S5. {resume}",
                failed=n_failed,
                total=total,
                cause=cause,
            )
        log.warning("%s; the run goes on. %s", what, resume)
        self.say(f"{what}; the run goes on (max_failed_share={self.max_failed_share:g})")

    def say(self, text: str) -> None:
        """Print ``text`` as a line of the run's progress (nothing when ``progress`` is off)."""
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
        pool = self.pool()
        with _one_bar(self.judge, pool["query_id"].nunique(), "S6 refine", self.progress) as bar:
            return refine_pools(
                pool,
                self.queries(),
                self.corpus,
                self.judge,
                config=self.refine_config,
                seed=self.seed,
                progress=lambda _qid: bar.update(1),
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
        from ragnb.llm.ledger import PriceTable, estimate_calls

        candidates = self.candidates()
        planned: list[Any] = []
        notes: list[str] = []
        s4_done = self._done("s4")
        if not s4_done:
            items = grading_items(candidates, self.queries(), passages_by_id(self.corpus))
            planned += self.judge.plan(items, kind="grade", stage=LEDGER_STAGES["s4"])
            head = candidates.rename(columns={"rrf_rank": "pool_rank"})
        else:
            head = self.pool()
        if not (s4_done and self._done("s6")):
            planned += self._s6_upper_bound(head, notes)
        ledger = self.ledger
        prices = ledger.prices if ledger is not None else PriceTable.load()
        self._estimate = estimate_calls(planned, prices=prices, notes=notes)
        return self._estimate

    def _s6_upper_bound(self, head: pd.DataFrame, notes: list[str]) -> list[Any]:
        """S6's planned calls at most: ``max_iterations`` listwise calls per query, each on the
        first ``m`` documents of ``head`` (``query_id``, ``doc_id``, ``pool_rank``); a note on
        the bound is appended to ``notes``."""
        m = self.refine_config.m
        batches = []
        texts = passages_by_id(self.corpus)
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
        if not batches:
            return []
        bound = self.judge.plan(batches, kind="rank", stage=LEDGER_STAGES["s6"])
        n = self.refine_config.max_iterations
        if bound:
            notes.append(
                f"S6 is priced as an upper bound: {n} listwise calls per query "
                f"(refine_max_iterations) of {m} passages; refinement usually stops "
                "earlier"
            )
        return [replace(c, item=f"{c.item}#{i}", cached=False) for c in bound for i in range(n)]

    # -- the whole run

    def run(self) -> GoldenSet:
        """Run (or resume) S1-S6, judge the new systems incrementally, export.

        Raises
        ------
        BudgetExceededError
            When ``budget_usd`` is set and the estimate exceeds it (before any S4 call).
        """
        from ragnb.llm.ledger import check_budget

        est = self.estimate()
        if self.budget_usd is not None and est.calls:
            check_budget(est, self.budget_usd)
        refined = self.refined()
        golden = GoldenSet(
            build=self.build_record(),
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
        golden = self.load_increments(golden)
        if self.new_systems:
            self._ensure_indexed(self.new_systems)
            for name, system in self.new_systems.items():
                run = (
                    system
                    if isinstance(system, pd.DataFrame)
                    else system.retrieve(self.queries()[["query_id", "text"]], k=self.incremental_k)
                )
                golden = self.extend(golden, run, name, k=self.incremental_k, export=False)
        if self.run_dir is not None:
            golden.export()
        return golden

    def build_record(self) -> BuildRecord:
        """What the golden set keeps of this pipeline (:class:`BuildRecord`): the judge, the
        corpus, the settings, the stage records so far, the manifest's facts."""
        data = self.dataset
        labels = data.qrels if data is not None and data.has_qrels else None
        return BuildRecord(
            judge=self.judge,
            corpus=self.corpus,
            config=self.config,
            run_dir=self.run_dir,
            depth=self.depth,
            rrf_k=self.rrf_k,
            min_pool=self.min_pool,
            keep_grade=self.keep_grade,
            top_n=self.top_n,
            refine_config=self.refine_config,
            incremental_k=self.incremental_k,
            cutoffs=self.cutoffs,
            budget_usd=self.budget_usd,
            seed=self.seed,
            ledger=self.ledger,
            stage_records=dict(self._records),
            check_thresholds=self.check_thresholds,
            dataset_info=self.dataset_info,
            data_sha256=self.data_sha256(),
            systems=self.systems_info(),
            rewriter=self.stage_params("s1")["rewrite"],
            labels=labels,
        )

    def systems_info(self) -> dict[str, Any]:
        """Each pool and new system's configuration, with its role, for the manifest."""
        systems: dict[str, Any] = {}
        for role, group in (("pool", self.systems), ("new", self.new_systems)):
            for name, s in group.items():
                info = (
                    {"run": "given as a frame", **system_fingerprint(s)}
                    if isinstance(s, pd.DataFrame)
                    else s.describe()
                )
                systems[name] = {"role": role, **info}
        return systems

    # -- incremental judging

    def extend(
        self, golden: GoldenSet, run: pd.DataFrame, system: str, *, k: int = 10, export: bool = True
    ) -> GoldenSet:
        """Judge only the unjudged part of a new system's top ``k``: the golden set with them.

        Parameters
        ----------
        golden : GoldenSet
            Built by this pipeline (:meth:`run`).
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
        GoldenSet
            A new golden set (``golden`` is left as it is) whose last increment
            (:class:`Increment`) is this one. Extending it again with the same run judges
            nothing (every pair is judged).
        """
        check_positive_int(k, "k")
        qids = golden.queries["query_id"].tolist()
        top = top_of_run(run, qids, k)
        top = top.assign(query_id=top["query_id"].astype(str), doc_id=top["doc_id"].astype(str))
        judged_before = judged_table(golden.qrels, {system: top}, [k])["judged"].iloc[0]
        have = set(zip(golden.judgements["query_id"], golden.judgements["doc_id"], strict=True))
        todo = top[
            [(q, d) not in have for q, d in zip(top["query_id"], top["doc_id"], strict=True)]
        ].reset_index(drop=True)
        frame = self._grade_unjudged(todo, golden.queries)
        frame = frame.assign(system=system).astype({"system": object})
        after = add_judgements(golden.judgements, frame)
        after_qrels = after[["query_id", "doc_id", "grade"]].rename(columns={"grade": "relevance"})
        inc = Increment(
            system,
            k,
            frame,
            len(top),
            float(judged_before),
            float(judged_table(after_qrels, {system: top}, [k])["judged"].iloc[0]),
            len(todo),
        )
        golden = golden.with_increment(inc, top)
        if self.run_dir is not None:
            store.write_increment(self.run_dir, inc.system, inc.frame, self.increment_key(), inc.k)
            if export:
                golden.export()
        return golden

    def _grade_unjudged(self, todo: pd.DataFrame, queries: pd.DataFrame) -> pd.DataFrame:
        """The judge's grades of ``todo`` (``query_id``, ``doc_id``, ``rank``): ``query_id``,
        ``doc_id``, ``rank``, ``grade`` (Int64), ``valid``, ``status``, ``reason``, ``cached``."""
        if not len(todo):
            cols = ["query_id", "doc_id", "rank", "grade", "valid", "status", "reason", "cached"]
            frame = pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
            return frame.astype({"rank": np.int64, "grade": "Int64", "valid": bool, "cached": bool})
        items = grading_items(todo, queries, passages_by_id(self.corpus))
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
        return frame

    def increment_key(self) -> str:
        """SHA-256 of the judge's identity and S4's output: earlier increments in the run
        folder count only when both match."""
        return sha256_json(
            {"judge": judge_fingerprint(self.judge), "s4": self._record("s4").output_hash}
        )

    def load_increments(self, golden: GoldenSet) -> GoldenSet:
        """``golden`` with the judgements of earlier increments (``increments/`` of the run
        folder) whose judge and S4 match this run's; unchanged without a run folder."""
        if self.run_dir is None:
            return golden
        qids = set(golden.queries["query_id"])
        judgements = golden.judgements
        for frame in store.read_increments(self.run_dir, self.increment_key()):
            judgements = add_judgements(judgements, frame[frame["query_id"].isin(qids)])
        return replace(golden, judgements=judgements)


def _query_source(
    config: GoldenSetConfig, data: Any
) -> tuple[pd.DataFrame, str, pd.DataFrame, dict[str, pd.DataFrame], dict[str, Any] | None]:
    """The queries, their source in words, the corpus, the production runs and the trace summary:
    from ``config.traces`` (:func:`~ragnb.studies.golden.from_traces.trace_source`: the corpus gains
    the documents only the spans carry) or else :func:`select_queries`."""
    if not config.traces:
        queries, source = select_queries(config, data)
        return queries, source, data.corpus, {}, None
    from ragnb.core.paths import display_path
    from ragnb.studies.golden.from_traces import trace_source

    path = resolve_path(config.traces)
    traced = trace_source(path, data, config.max_queries, display_path(path))
    corpus = data.corpus
    if not traced.corpus.empty:
        corpus = pd.concat([data.corpus, traced.corpus], ignore_index=True)
    return traced.queries[["query_id", "text"]], traced.source, corpus, traced.runs, traced.info


def build_pipeline(
    config: GoldenSetConfig,
    *,
    dataset: Any = None,
    judge: Judge | None = None,
    cache: Any = None,
    progress: bool = False,
) -> GoldenPipeline:
    """The pipeline of notebook 02: everything ``config`` names, built once (dataset, cache,
    judge with, for an LLM, a ledger in the run folder, pool and new systems, run folder),
    except what the caller passes already built.

    Parameters
    ----------
    config : GoldenSetConfig
    dataset : BeirDataset, optional
        Already read (qrels optional); default :func:`ragnb.io.files.read_beir` of
        ``config.dataset_path()``.
    judge : Judge, optional
        Already built (e.g. an :class:`~ragnb.judge.OpenAIJudge` on a running local model server);
        default :func:`~ragnb.studies.golden.judging.make_judge` of ``config`` (its LLM calls
        recorded in ``<run folder>/ledger.jsonl``). A judge passed keeps its own ledger.
    cache : Cache, optional
        The cache of embeddings (and of the judge it builds); default
        ``Cache(config.cache_dir)``.
    progress : bool, default False
        Print a line per stage.

    Returns
    -------
    GoldenPipeline

    Raises
    ------
    InputError
        A malformed query file, a bad parameter, an offline judge without labels.
    ImportError, RuntimeError
        ``judge="local"`` whose model server cannot start.
    """
    from ragnb.core.cache import Cache
    from ragnb.llm.ledger import LEDGER_FILE, Ledger
    from ragnb.rewrite import LLMRewriter

    data = dataset if dataset is not None else read_dataset(config)
    queries, source, corpus, production, traces_info = _query_source(config, data)
    run_dir = resolve_path(config.export_dir) if config.export_dir else None
    cache = cache if cache is not None else Cache(config.cache_dir or None)
    ledger = None
    if judge is None:
        if config.judge == "openai":
            ledger = Ledger(None if run_dir is None else run_dir / LEDGER_FILE)
        judge = make_judge(config, data.qrels, cache=cache, ledger=ledger, progress=progress)
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

    pool: dict[str, Retriever | pd.DataFrame] = {
        **production,
        **{name: system(name) for name in config.retrievers},
    }
    new = {name: system(name) for name in config.new_systems if name not in pool}
    rewrite = None
    if config.rewrite:
        client = getattr(judge, "client", None)
        if client is None:
            raise InputError(
                f"rewrite=True rewrites queries with the judge's LLM; judge {config.judge!r} "
                "has none (use judge='openai' or 'local')",
                column="rewrite",
            )
        rewrite = LLMRewriter(client)
    pipeline = GoldenPipeline(
        corpus,
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
        dataset_info={
            **data.summary(),
            "queries_from": source,
            **({"traces": traces_info} if traces_info else {}),
        },
        dataset=data,
        ledger=ledger,
        progress=progress,
        max_failed_share=getattr(config, "max_failed_share", 0.0),
    )
    return pipeline
