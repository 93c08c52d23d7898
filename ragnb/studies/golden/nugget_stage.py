"""Notebook 02's nugget section: nuggets from the golden set's refined top, NuggetRecall@K of
the pool systems.

The golden set's LLM (the judge's server and model) creates up to ``nugget_max`` nuggets per query
from the refined top (:meth:`~ragnb.studies.golden.GoldenSet.top`, best first), labels them vital or
okay, and assigns them to every passage of each pool system's top ``nugget_k``
(:mod:`ragnb.judge.nuggets`); ``NuggetRecall@K`` in its four AutoNuggetizer forms then reads the
nugget qrels. The calls share the judge's cache and ledger (stages ``nugget_create``,
``nugget_importance``, ``nugget_assign``): a second run is free. With a run folder the nuggets and
assignments are written there as ``nuggets.csv`` and ``nugget_assignments.csv``; rows a person
corrected in them are kept and read back on the next run.

References
----------
.. [1] R. Pradeep et al., "Initial Nugget Evaluation Results for the TREC 2024 RAG Track with
   the AutoNuggetizer Framework", arXiv:2411.09607, Sections 2-3.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ragnb.io.nuggets import NUGGET_FILES
from ragnb.measures.nuggets import nugget_measures
from ragnb.studies.golden.config import GoldenSetConfig
from ragnb.studies.golden.goldenset import GoldenSet
from ragnb.studies.golden.stages import passages_by_id

__all__ = [
    "NuggetCheck",
    "nuggets_for",
    "nuggets_markdown",
    "nuggets_skipped",
]

#: Answer tokens a local model may spend on one nugget call.
LOCAL_MAX_TOKENS = 256


@dataclass(frozen=True)
class NuggetCheck:
    """What the nugget section shows.

    Attributes
    ----------
    nuggets, assignments : DataFrame
        :data:`ragnb.judge.nuggets.NUGGET_COLUMNS` and
        :data:`~ragnb.judge.nuggets.ASSIGNMENT_COLUMNS` (a person's corrections from the run
        folder included).
    recall : DataFrame
        One row per pool system: ``system``, one column per measure of
        :func:`ragnb.measures.nuggets.nugget_measures`, float in [0, 1], the mean over the
        queries with nuggets, then ``queries`` (how many that is) and ``of_queries`` (the
        golden set's queries).
    counts : dict of str to int
        :func:`ragnb.judge.nuggets.nugget_counts`.
    k : int
        The cutoff of the assignment and the measures.
    model : str
        The model that created and assigned the nuggets.
    local : bool
        It is the tiny local model.
    n_queries : int
        The golden set's queries (``counts["queries"]`` of them have nuggets).
    findings : list of JudgeFinding
        :func:`ragnb.judge.degenerate.check_nuggets`: nuggets that state no fact.
    """

    nuggets: pd.DataFrame
    assignments: pd.DataFrame
    recall: pd.DataFrame
    counts: dict[str, int]
    k: int
    model: str
    local: bool
    n_queries: int = 0
    findings: list[Any] = field(default_factory=list)


def nuggets_skipped(golden: GoldenSet) -> str:
    """Why :func:`nuggets_for` does not run on this golden set, or ``""`` when it does."""
    cfg = golden.build.config or GoldenSetConfig()
    if not cfg.nugget_max:
        return "`nugget_max=0`"
    judge = golden.judge
    if getattr(judge, "local_server", None) is None and getattr(judge, "client", None) is None:
        return (
            f"the judge {judge.judge_id} is not an LLM (an offline judge); nuggets need one "
            "(`judge='local'` or `'openai'`)"
        )
    return ""


def _client(golden: GoldenSet) -> tuple[Any, str | None]:
    """A chat client on the judge's model, cache and ledger, and the constrained-output form."""
    from ragnb.llm import ChatClient

    judge: Any = golden.judge  # an OpenAIJudge (nuggets_skipped)
    shared = {"cache": judge.cache, "ledger": judge.ledger, "progress": judge.client.progress}
    server = getattr(judge, "local_server", None)
    if server is not None:
        options = {**server.client_options(), "request_params": {"max_tokens": LOCAL_MAX_TOKENS}}
        return ChatClient(**options, **shared), "json_object_schema"
    client = judge.client
    return ChatClient(client.model, base_url=client.base_url, **shared), None


def _calls_bound(golden: GoldenSet, cfg: GoldenSetConfig) -> int:
    """The nugget calls at most: creation (a call per 10 passages of the refined top), importance
    (a call per 10 nuggets) and assignment (a call per passage of each system's top K and 10
    nuggets), for every query."""
    per_ten = math.ceil(cfg.nugget_max / 10)
    top = golden.top()
    passages = top.groupby("query_id").size() if len(top) else pd.Series(dtype=int)
    create = int(sum(math.ceil(n / 10) for n in passages))
    assessed = len(golden.runs) * cfg.nugget_k * per_ten
    return create + len(passages) * per_ten + golden.queries["query_id"].nunique() * assessed


def nuggets_for(golden: GoldenSet, *, say: Callable[[str], None] | None = None) -> NuggetCheck:
    """Create the nuggets of the golden set's queries, assign them to the pool systems' top
    ``nugget_k``, and measure NuggetRecall@K per system.

    Parameters
    ----------
    golden : GoldenSet
        Graded by an LLM judge (see :func:`nuggets_skipped`).
    say : callable, optional
        Told the calls at most before any is sent (a console line); the calls then show the
        judge client's progress bar when it has one.

    Returns
    -------
    NuggetCheck

    Raises
    ------
    InputError
        When :func:`nuggets_skipped` gives a reason, or a corrected file in the run folder is
        malformed (naming its line and column).
    JudgeUnavailable
        When the model's server cannot answer (answers received stay cached).
    """
    from ragnb.errors import InputError
    from ragnb.evaluation.evaluate import evaluate
    from ragnb.judge import nuggets as nj
    from ragnb.judge.degenerate import check_nuggets

    why = nuggets_skipped(golden)
    if why:
        raise InputError(f"no nuggets: {why}", column="nugget_max")
    cfg = golden.build.config or GoldenSetConfig()
    client, constrained = _client(golden)
    if say is not None:
        say(
            f"nuggets: at most {_calls_bound(golden, cfg)} calls to {client.model} (creation, "
            "importance, assignment; priced as they go: each creation prompt holds the nuggets "
            "of the answer before it)"
        )
    texts = passages_by_id(golden.build.corpus)
    top = golden.top().sort_values(["query_id", "rank"])
    pooled = top.assign(text=top["doc_id"].astype(str).map(texts))
    queries = golden.queries[["query_id", "text"]]
    nuggets = nj.create_nuggets(
        client, queries, pooled, max_nuggets=cfg.nugget_max, window=10, constrained=constrained
    )
    folder = golden.run_dir
    if folder is not None:
        nuggets = nj.export_nuggets(nuggets, folder / NUGGET_FILES["nuggets"])
    runs = golden.runs
    assignments = nj.assign_nuggets(
        client, nuggets, queries, runs, texts, k=cfg.nugget_k, window=10, constrained=constrained
    )
    if folder is not None:
        assignments = nj.export_assignments(assignments, folder / NUGGET_FILES["assignments"])
        assignments = nj.kept_assignments(nuggets, assignments)  # deleted nuggets' rows
    counts = nj.nugget_counts(nuggets, assignments)
    measures = nugget_measures(cfg.nugget_k)
    rows = []
    if counts["nuggets"]:
        qrels = nj.nugget_qrels(nuggets, assignments)
        for name, run in runs.items():
            values = evaluate(qrels, run, measures).aggregate_to_dict()
            rows.append({"system": name, **values})
    n_queries = int(golden.queries["query_id"].nunique())
    recall = pd.DataFrame(rows, columns=["system", *measures]).assign(
        queries=counts["queries"], of_queries=n_queries
    )
    local = getattr(golden.judge, "local_server", None) is not None
    qtext = dict(zip(queries["query_id"].astype(str), queries["text"].astype(str), strict=True))
    findings = check_nuggets(nuggets, qtext, source=f"nuggets of {client.model}")
    return NuggetCheck(
        nuggets,
        assignments,
        recall,
        counts,
        cfg.nugget_k,
        client.model,
        local,
        n_queries=n_queries,
        findings=findings,
    )


def nuggets_markdown(check: NuggetCheck) -> str:
    """The section's text: what was created and assigned, what the values are worth.

    Examples
    --------
    >>> empty = pd.DataFrame()
    >>> counts = {"queries": 2, "nuggets": 6, "vital": 4, "importance_invalid": 0,
    ...           "assignments": 30, "assignments_invalid": 1, "support": 9,
    ...           "partial_support": 3}
    >>> text = nuggets_markdown(NuggetCheck(empty, empty, empty, counts, 3, "m", False))
    >>> text.splitlines()[0]
    '**6 nuggets** for 2 queries (4 vital), created by `m` from the refined top.'
    """
    c = check.counts
    lines = [
        f"**{c['nuggets']} nuggets** for {c['queries']} "
        f"{'query' if c['queries'] == 1 else 'queries'} ({c['vital']} vital), created "
        f"by `{check.model}` from the refined top.",
        "",
        f"Assigned to every passage of each pool system's top {check.k}: {c['assignments']} "
        f"labels, {c['support']} support, {c['partial_support']} partial support, "
        f"{c['assignments_invalid']} without a valid answer (counted as not supported); "
        f"{c['importance_invalid']} importance labels defaulted to okay.",
    ]
    if check.n_queries:
        lines += [
            "",
            f"NuggetRecall averages over the {c['queries']} of {check.n_queries} queries that "
            "have nuggets"
            + ("." if c["queries"] == check.n_queries else ": the others have none to recall."),
        ]
    for f in check.findings:
        lines += ["", f"**Warning: {f.source}, `{f.name}`:** {f.message}: {f.detail}"]
        lines += ["", f"**What to do:** {f.advice}"]
    if check.local:
        lines += [
            "",
            "**What these nuggets are worth: close to nothing.** SmolLM2-135M is a "
            "135M-parameter stand-in that runs the real path (the prompts, constrained JSON "
            "answers, the cache, the ledger), not a nuggetizer: its nuggets tend to be "
            'placeholders ("a", "b", "nugget 1") rather than facts, and its support labels are '
            "near chance. Read the "
            "table below as a test of the machinery. AutoNuggetizer's agreement with people "
            "was measured with GPT-4o (Pradeep et al. 2024); use `judge='openai'` for values "
            "that mean something, and correct `nuggets.csv` and `nugget_assignments.csv` in "
            "the run folder: the next run reads the corrections back.",
        ]
    return "\n".join(lines)
