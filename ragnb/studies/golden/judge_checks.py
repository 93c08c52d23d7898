"""Notebook 02's judge checks on a built golden set: self-consistency, the bias audit and drift.

The checks themselves live in :mod:`ragnb.judge`; this module gives them a golden set's pairs,
texts, judge, config and run folder.

- :func:`self_consistency_for`: the golden set's judge grades every S4 pair ``samples`` times
  at ``temperature`` (:class:`ragnb.judge.SelfConsistentJudge`, each sample its own cache entry,
  ledger stage ``consistency``); the samples' agreement with each other beside each sample's and
  the majority's agreement with the human labels (:func:`ragnb.judge.consistency_table`).
- :func:`judge_audit_for`: the slopes of the S4 grades, and of the judge's errors against the
  human labels, against passage length and query-term overlap (:func:`ragnb.judge.bias_audit`);
  the position test of the listwise judge on one batch per query, the first ``refine_batch``
  passages of the pruned pool in their original, reversed and shuffled orders
  (:func:`ragnb.judge.position_audit`, ledger stage ``position_audit``).
- :func:`judge_drift`: another judge or prompt re-grades a golden set's human-labelled sample
  (and, for the PPI++ estimates, every judged pair) through its cache (:func:`regrade`); both
  judges are compared with the humans (:class:`ragnb.judge.drift.JudgeDrift`: kappas with
  intervals resampling queries, bias per human grade, the PPI++ estimates of the golden set's
  measures under each judge, :func:`ragnb.studies.golden.human.ppi_estimates`). The reference
  judge's grades are the stored judgements, so its agreement equals the calibration the golden
  set was accepted with; :func:`accepted_calibration` reads that calibration from the run folder
  (``calibration/calibration.json``) for the gate (:func:`ragnb.judge.drift.drift_gates`,
  ``ragnb golden audit --judge-kappa-min 0.4``).
- :func:`drift_for`: the golden set's LLM judge with another prompt (``drift_prompt``) re-grades the
  human-labelled sample, and every judged pair when there are PPI labels (:func:`judge_drift`,
  ledger stage ``drift``), and the candidate is gated on ``drift_kappa_min`` and on the lower end
  of the calibration the golden set was built with.

All three price their LLM calls before sending any and stop with
:class:`~ragnb.llm.ledger.BudgetExceededError` when they would take the run past ``budget_usd``
(what the golden set's own estimate leaves of it).

References
----------
.. [1] Wang et al., "Self-Consistency Improves Chain of Thought Reasoning in Language Models",
   ICLR 2023.
.. [2] arXiv:2602.17170 (length and lexical-overlap bias of LLM relevance judges).
.. [3] Sun et al., "Is ChatGPT Good at Search?", EMNLP 2023 (listwise judges and input order).
.. [4] P. Thomas, S. Spielman, N. Craswell and B. Mitra, "Large language models can accurately
   predict searcher preferences", SIGIR 2024 (a prompt's parts change agreement with assessors).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.judge.base import Judge
from ragnb.judge.bias import PositionAudit, bias_audit, position_audit, position_items
from ragnb.judge.consistency import SelfConsistentJudge, consistency_table
from ragnb.judge.drift import (
    JudgeDrift,
    drift_agreement,
    drift_gates,
    kappa_statistic,
    regraded_row,
)
from ragnb.stats.gates import GateReport
from ragnb.studies.golden.config import GoldenSetConfig
from ragnb.studies.golden.evaluation import human_labels_for, ppi_labels_for
from ragnb.studies.golden.goldenset import GoldenSet
from ragnb.studies.golden.human import HumanLabels, ppi_estimates
from ragnb.studies.golden.stages import grading_items, passages_by_id

__all__ = [
    "CONSISTENCY_STAGE",
    "DRIFT_STAGE",
    "POSITION_STAGE",
    "DriftCheck",
    "JudgeAudit",
    "SelfConsistency",
    "accepted_calibration",
    "audit_markdown",
    "calls_line",
    "consistency_markdown",
    "drift_for",
    "drift_markdown",
    "drift_skipped",
    "judge_audit_for",
    "judge_drift",
    "regrade",
    "self_consistency_for",
]

#: Ledger stages of the calls of the self-consistency samples, of the position test and of the
#: drift check's candidate judge.
CONSISTENCY_STAGE = "consistency"
POSITION_STAGE = "position_audit"
DRIFT_STAGE = "drift"
#: What the report says of a judge at about chance, and of the local model.
_CHANCE = (
    "A kappa near 0 is agreement at chance: the grades carry about as much information about "
    "the human labels as a coin would."
)


@dataclass(frozen=True)
class SelfConsistency:
    """What :func:`self_consistency_for` returns.

    Attributes
    ----------
    table : DataFrame
        One row per comparison: ``rater`` ("samples with each other", "sample i", "majority of n"),
        ``against`` ("itself" or "human labels"), ``n_pairs``, then
        :data:`ragnb.judge.ensemble.AGREEMENT_COLUMNS` (the self row: exact agreement and
        the kappas averaged over every two samples, the alphas among all samples; kendall tau-b
        NaN): :func:`ragnb.judge.consistency_table`.
    grades : DataFrame
        One row per S4 pair: ``query_id``, ``doc_id``, one Int64 column per sample and
        ``ensemble`` (:meth:`ragnb.judge.EnsembleGrades.wide`).
    samples : int
    temperature : float or None
    judge_id : str
        The sampled judge.
    """

    table: pd.DataFrame
    grades: pd.DataFrame
    samples: int
    temperature: float | None
    judge_id: str


@dataclass(frozen=True)
class JudgeAudit:
    """What :func:`judge_audit_for` returns.

    Attributes
    ----------
    slopes : DataFrame
        :func:`ragnb.judge.bias_audit` on the S4 grades (with the human labels when there are
        some).
    position : PositionAudit or None
        :func:`ragnb.judge.position_audit` on one batch per query (None: no query has two pooled
        passages).
    notes : list of str
    """

    slopes: pd.DataFrame
    position: PositionAudit | None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DriftCheck:
    """What :func:`drift_for` returns.

    Attributes
    ----------
    drift : JudgeDrift
        Both judges against the human labels: kappas with intervals, bias per human grade,
        PPI++ estimates under each judge, what was re-graded.
    gates : GateReport
        :func:`~ragnb.judge.drift.drift_gates`: the candidate's kappa against
        ``drift_kappa_min`` and against the lower end of the reference judge's interval (the
        calibration the golden set was built with).
    prompt : str
        The candidate's prompt (``PromptTemplate.id``: name, language and content hash).
    """

    drift: JudgeDrift
    gates: GateReport
    prompt: str


def _config(golden: GoldenSet) -> GoldenSetConfig:
    cfg = golden.build.config
    return cfg if cfg is not None else GoldenSetConfig()


def _items(golden: GoldenSet) -> pd.DataFrame:
    """The S4 items (query and passage texts) of the golden set's candidates."""
    return grading_items(golden.candidates, golden.queries, passages_by_id(golden.build.corpus))


def calls_line(title: str, est: Any, model: str = "") -> str:
    """One console line naming a check's LLM calls and their price before they start.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> est = SimpleNamespace(summary=lambda: {"calls": 12, "cached_calls": 3, "total_usd": 0.0})
    >>> calls_line("self-consistency", est, "m")
    'self-consistency: 12 calls to m (3 more from the cache), $0.0000'
    """
    s = est.summary()
    price = "price unknown (unpriced model)" if s["total_usd"] is None else f"${s['total_usd']:.4f}"
    to = f" to {model}" if model else ""
    return f"{title}: {s['calls']} calls{to} ({s['cached_calls']} more from the cache), {price}"


def _check_cost(
    golden: GoldenSet,
    judge: Any,
    items: Any,
    kind: str,
    stage: str,
    say: Callable[[str], None] | None = None,
    title: str = "",
) -> None:
    """Price ``judge``'s calls on ``items``, say what they cost (``say``, with ``title``) and
    stop when they exceed what the golden set's own estimate leaves of ``budget_usd``."""
    from ragnb.llm.ledger import check_budget, estimate

    budget = golden.build.budget_usd
    if budget is None and say is None:
        return
    # the golden set's judge's price table (a local model is priced at 0 there)
    ledger = getattr(golden.judge, "ledger", None) or golden.build.ledger
    prices = None if ledger is None else ledger.prices
    est = estimate(judge, items, kind=kind, stage=stage, prices=prices)
    if say is not None:
        say(calls_line(title, est, str(getattr(golden.judge, "model", ""))))
    if not est.calls or budget is None:
        return
    spent = golden.estimate.total_usd if golden.estimate is not None else 0.0
    left = max(0.0, budget - (0.0 if not math.isfinite(spent) else spent))
    check_budget(est, left)


def self_consistency_for(
    golden: GoldenSet, human: Any = None, *, say: Callable[[str], None] | None = None
) -> SelfConsistency | None:
    """Grade the golden set's S4 pairs ``consistency_samples`` times and measure agreement.

    Parameters
    ----------
    golden : GoldenSet
        Built with a config (its ``consistency_samples`` >= 2, ``consistency_temperature``).
    human : HumanLabels, optional
        Adds each sample's and the majority's agreement with these labels.
    say : callable, optional
        Told the calls and their price before any is sent (a console line).

    Returns
    -------
    SelfConsistency or None
        None when the judge does not draw samples (:meth:`ragnb.judge.Judge.with_sample`: a
        judge of one's own that does not implement it).

    Raises
    ------
    BudgetExceededError
        When the samples' calls would take the run past ``budget_usd`` (before any call).
    JudgeUnavailable
        When the judge's server cannot answer (answers received stay cached).
    """
    cfg = _config(golden)
    try:
        judge = SelfConsistentJudge(
            golden.judge, samples=cfg.consistency_samples, temperature=cfg.consistency_temperature
        )
    except InputError:
        return None
    items = _items(golden)
    _check_cost(golden, judge, items, "grade", CONSISTENCY_STAGE, say, "self-consistency")
    graded = judge.grade_members(items, stage=CONSISTENCY_STAGE)
    scale = golden.judge.scale
    labels = None if scale is None else list(range(scale[0], scale[1] + 1))
    table = consistency_table(
        graded,
        human=None if human is None else human.qrels,
        labels=labels,
        combined=f"{judge.combine} of {judge.samples}",
    )
    return SelfConsistency(
        table, graded.wide(), judge.samples, judge.temperature, golden.judge.judge_id
    )


def _position_items(golden: GoldenSet, size: int) -> list[dict[str, Any]]:
    """One batch per query: its first ``size`` pooled passages (S5 pool order), 2 at least."""
    texts = passages_by_id(golden.build.corpus)
    query = dict(zip(golden.queries["query_id"], golden.queries["normalised"], strict=True))
    out = []
    for qid, docs in golden.pool.sort_values(["query_id", "pool_rank"]).groupby(
        "query_id", sort=False
    ):
        ids = [str(d) for d in docs["doc_id"].head(size)]
        if len(ids) >= 2:
            out.append(
                {
                    "query_id": str(qid),
                    "batch_id": "audit",
                    "doc_ids": ids,
                    "query": query[qid],
                    "passages": [texts[d] for d in ids],
                }
            )
    return out


def judge_audit_for(
    golden: GoldenSet, human: Any = None, *, say: Callable[[str], None] | None = None
) -> JudgeAudit:
    """The bias audit of the golden set's judge: slopes of the S4 grades and the position test.

    Parameters
    ----------
    golden : GoldenSet
    human : HumanLabels, optional
        Adds the slopes of ``grade - human`` on the pairs that carry a label.
    say : callable, optional
        Told the position test's calls and their price before any is sent.

    Returns
    -------
    JudgeAudit

    Raises
    ------
    BudgetExceededError
        When the position test's calls would take the run past ``budget_usd``.
    JudgeUnavailable
        When the judge's server cannot answer.
    """
    cfg = _config(golden)
    grades = golden.grades[["query_id", "doc_id", "grade", "valid"]].merge(
        _items(golden), on=["query_id", "doc_id"], how="left"
    )
    slopes = bias_audit(grades, human=None if human is None else human.qrels, seed=cfg.seed)
    notes = [
        "Length: white-space separated words of the passage as the judge read it (title and "
        "text); overlap: the share of the query's distinct lower-cased terms found in the "
        "passage (no stemming, no stop list)."
    ]
    batches = _position_items(golden, cfg.refine_batch)
    position = None
    if batches:
        sent = position_items(batches, seed=cfg.seed)
        _check_cost(golden, golden.judge, sent, "rank", POSITION_STAGE, say, "bias audit")
        position = position_audit(golden.judge, batches, seed=cfg.seed, stage=POSITION_STAGE)
    else:
        notes.append("No query has two pooled passages: no position test.")
    return JudgeAudit(slopes, position, notes)


# ----------------------------------------------------------------------------- drift


def regrade(
    golden: GoldenSet, judge: Judge, pairs: pd.DataFrame, *, stage: str = DRIFT_STAGE
) -> pd.DataFrame:
    """Grade ``pairs`` of a golden set with ``judge``, reading the texts the golden set's judge
    read (S1's normalised queries, the corpus passages).

    Parameters
    ----------
    golden : GoldenSet
    judge : Judge
        Its cache serves the pairs it has graded before (no call, no cost).
    pairs : DataFrame
        ``query_id``, ``doc_id`` of the golden set's queries and corpus.
    stage : str, default :data:`DRIFT_STAGE`
        Ledger label of the calls.

    Returns
    -------
    DataFrame
        One row per pair, input order: ``query_id``, ``doc_id``, ``grade`` (Int64, <NA> unless
        valid), ``valid`` (bool), ``cached`` (bool, the answer came from the cache).

    Raises
    ------
    InputError
        A pair whose query or document the golden set does not hold (named).
    """
    texts = passages_by_id(golden.build.corpus)
    known = set(golden.queries["query_id"].astype(str))
    for q, d in zip(pairs["query_id"], pairs["doc_id"], strict=True):
        if str(q) not in known or str(d) not in texts:
            raise InputError(
                f"pair ({q}, {d}) is not in the golden set: re-grading needs its query and "
                "passage text",
                query_id=str(q),
            )
    todo = pairs[["query_id", "doc_id"]].astype(str).reset_index(drop=True)
    if todo.empty:
        cols = {"grade": "Int64", "valid": bool, "cached": bool}
        return todo.assign(**{c: pd.Series(dtype=t) for c, t in cols.items()})
    g = judge.grade_many(grading_items(todo, golden.queries, texts), stage=stage)
    return todo.assign(
        grade=g["grade"].astype("Int64").to_numpy(),
        valid=g["valid"].to_numpy(dtype=bool),
        cached=g["cached"].to_numpy(dtype=bool),
    )


def _sample_pairs(golden: GoldenSet, human: HumanLabels) -> pd.DataFrame:
    """The pairs both the humans and the golden set's judge labelled (what calibration
    compares): ``query_id``, ``doc_id``, ``human``, ``reference``."""
    h = human.qrels[["query_id", "doc_id", "relevance"]].astype({"query_id": str, "doc_id": str})
    j = golden.judgements[["query_id", "doc_id", "grade"]].astype({"query_id": str, "doc_id": str})
    pairs = h.rename(columns={"relevance": "human"}).merge(
        j.rename(columns={"grade": "reference"}), on=["query_id", "doc_id"]
    )
    if pairs.empty:
        raise InputError(
            "no (query, document) pair carries both a human label and a grade of the golden set"
        )
    return pairs.astype({"human": np.int64, "reference": np.int64})


def _ppi(
    golden: GoldenSet, regraded: pd.DataFrame, measures: list[str], notes: list[str]
) -> pd.DataFrame:
    """PPI++ estimates under the golden set's judge and under the candidate's grades of every
    judged pair (invalid answers left out of the candidate's qrels)."""
    human = ppi_labels_for(golden)
    if human is None:
        notes.append("PPI estimates: not computed (no human labels for a PPI sample)")
        return pd.DataFrame()
    valid = regraded[regraded["valid"]]
    judgements = golden.judgements.astype({"query_id": str, "doc_id": str})
    grades = valid.set_index(["query_id", "doc_id"])["grade"]
    keys = pd.MultiIndex.from_frame(judgements[["query_id", "doc_id"]])
    kept = judgements[keys.isin(grades.index)].copy()
    kept["grade"] = grades.loc[list(zip(kept["query_id"], kept["doc_id"], strict=True))].to_numpy(
        np.int64
    )
    candidate = dataclasses.replace(golden, judgements=kept.reset_index(drop=True))
    parts = []
    for role, g in (("reference", golden), ("candidate", candidate)):
        table, more = ppi_estimates(g, human, measures)
        notes.extend(f"PPI ({role}): {n}" for n in more)
        if not table.empty:
            parts.append(table.assign(judge=role))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["judge", *[c for c in out.columns if c != "judge"]]]


def judge_drift(
    golden: GoldenSet,
    judge: Judge,
    *,
    human: HumanLabels | None = None,
    ppi: bool = True,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci: float = 0.95,
) -> JudgeDrift:
    """Re-grade a golden set's human-labelled sample with ``judge`` and compare it, and the
    golden set's own judge, with the humans.

    Parameters
    ----------
    golden : GoldenSet
        Its judgements are the reference judge's grades (no call).
    judge : Judge
        The candidate (another model, prompt or setting), on the golden set's grade scale. Its
        cache serves the pairs graded before.
    human : HumanLabels, optional
        Default :func:`~ragnb.studies.golden.evaluation.human_labels_for` (what calibration uses),
        so the reference judge's kappa equals the calibration the golden set was accepted with.
    ppi : bool, default True
        Also re-grade every judged pair of the golden set and give the PPI++ estimates of its
        ``ppi_measures`` under each judge (human sample:
        :func:`~ragnb.studies.golden.evaluation.ppi_labels_for`).
    n_boot : int >= 0, default 1000
        Bootstrap resamples of the queries for the kappa intervals (0: none).
    seed : int or None, default 0
    ci : float in (0, 1), default 0.95

    Returns
    -------
    JudgeDrift
        :class:`ragnb.judge.drift.JudgeDrift`.

    Raises
    ------
    InputError
        No human label, no pair labelled by both, a candidate on another grade scale, a bad
        bootstrap setting.

    References
    ----------
    .. [1] J. Cohen, Psychological Bulletin 70(4), 1968 (weighted kappa).
    .. [2] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++", arXiv:2311.01453, 2023.
    """
    scale = golden.judge.scale
    if tuple(judge.scale or ()) != tuple(scale or ()):
        raise InputError(
            f"the candidate judge {judge.judge_id} grades on {judge.scale}, the golden set's "
            f"judge {golden.judge.judge_id} on {scale}: kappa compares grades on one scale"
        )
    human = human if human is not None else human_labels_for(golden)
    if human is None:
        raise InputError(
            "no human labels: give the golden set a human_labels file or a dataset with qrels"
        )
    pairs = _sample_pairs(golden, human)
    population = golden.judgements[["query_id", "doc_id"]].astype(str) if ppi else pairs
    regraded = regrade(golden, judge, population)
    graded = regraded.set_index(["query_id", "doc_id"])
    on_sample = graded.loc[list(zip(pairs["query_id"], pairs["doc_id"], strict=True))]
    pairs["candidate"] = on_sample["grade"].where(on_sample["valid"]).astype("Int64").to_numpy()
    rows = [regraded_row("human-labelled sample", on_sample.reset_index())]
    if ppi:
        rows.append(regraded_row("golden pairs", regraded))
    notes = list(human.notes)
    invalid = int(pairs["candidate"].isna().sum())
    if invalid:
        notes.append(f"{invalid} invalid answers of the candidate left out of its agreement")
    labels = None if scale is None else list(range(scale[0], scale[1] + 1))
    agreement, bias = drift_agreement(pairs, labels, n_boot, seed, ci)
    measures = list(golden.build.config.ppi_measures) if golden.build.config else []
    table = _ppi(golden, regraded, measures, notes) if ppi and measures else pd.DataFrame()
    return JudgeDrift(
        reference_id=golden.judge.judge_id,
        candidate_id=judge.judge_id,
        pairs=pairs,
        agreement=agreement,
        bias=bias,
        ppi=table,
        regraded=pd.DataFrame(rows),
        settings={
            "n_boot": n_boot,
            "seed": seed,
            "ci": ci,
            "labels": labels,
            "human_source": human.source,
        },
        notes=notes,
    )


def accepted_calibration(folder: str | Path, weights: str = "none") -> dict[str, Any] | None:
    """The kappa a golden set was accepted with: its run folder's
    ``calibration/calibration.json`` (written by the golden set's export).

    Parameters
    ----------
    folder : str or Path
        The golden set's run folder.
    weights : {"none", "linear", "quadratic"}

    Returns
    -------
    dict or None
        ``value``, ``low``, ``high`` (float), ``pairs`` (int), ``source`` (the file); None when
        the folder holds no calibration.

    Raises
    ------
    InputError
        A calibration file without that kappa (named).
    """
    from ragnb.io.files import read_json

    path = Path(folder) / "calibration" / "calibration.json"
    if not path.is_file():
        return None
    data = read_json(path)
    stat = kappa_statistic(weights)
    value = data.get("agreement", {}).get(stat)
    iv = data.get("intervals", {}).get(stat, {})
    if value is None:
        raise InputError(f"{path}: no {stat!r} in its 'agreement'")
    return {
        "value": float(value),
        "low": float(iv.get("low", math.nan)),
        "high": float(iv.get("high", math.nan)),
        "pairs": int(data.get("pairs", 0)),
        "source": str(path),
    }


def drift_skipped(golden: GoldenSet, human: Any) -> str:
    """Why :func:`drift_for` does not run on this golden set, or ``""`` when it does."""
    cfg = _config(golden)
    if not cfg.drift_prompt:
        return "`drift_prompt` is empty"
    if not hasattr(golden.judge, "with_prompt"):
        return (
            f"the judge {golden.judge.judge_id} has no prompt to change (an offline judge); "
            "drift re-grades with an LLM judge (`judge='local'` or `'openai'`)"
        )
    if human is None:
        return "there are no human labels to compare the two judges with"
    return ""


def drift_for(
    golden: GoldenSet, human: Any, *, say: Callable[[str], None] | None = None
) -> DriftCheck:
    """Re-grade the human-labelled sample with the golden set's judge under ``drift_prompt``
    and gate the candidate.

    The pairs are those of the calibration (``human``); when the golden set has PPI labels
    (:func:`~ragnb.studies.golden.evaluation.ppi_labels_for`) every judged pair is re-graded too,
    for the PPI++ estimates under each prompt. The candidate shares the judge's client, cache and
    ledger (ledger stage ``drift``): a second run is free.

    Parameters
    ----------
    golden : GoldenSet
        Graded by an LLM judge (:meth:`ragnb.judge.OpenAIJudge.with_prompt`).
    human : HumanLabels
        The calibration's labels (:func:`~ragnb.studies.golden.evaluation.human_labels_for`).
    say : callable, optional
        Told the re-grading calls and their price before any is sent.

    Returns
    -------
    DriftCheck

    Raises
    ------
    InputError
        When :func:`drift_skipped` gives a reason, or the prompt is unknown, not a grade prompt,
        or on another grade scale than the golden set's judge.
    BudgetExceededError
        When the candidate's calls would take the run past ``budget_usd`` (before any call).
    JudgeUnavailable
        When the judge's server cannot answer (answers received stay cached).

    References
    ----------
    .. [1] P. Thomas et al., SIGIR 2024 (prompt variants and agreement with assessors).
    .. [2] J. R. Landis and G. G. Koch, Biometrics 33(1), 1977 (0.4: "moderate" agreement).
    """
    why = drift_skipped(golden, human)
    if why:
        raise InputError(f"no drift check: {why}", column="drift_prompt")
    cfg = _config(golden)
    candidate = golden.judge.with_prompt(cfg.drift_prompt)  # type: ignore[attr-defined]
    with_ppi = ppi_labels_for(golden) is not None
    pairs = golden.judgements if with_ppi else human.qrels
    keys = golden.judgements[["query_id", "doc_id"]].astype(str)
    todo = pairs[["query_id", "doc_id"]].astype(str).merge(keys, on=["query_id", "doc_id"])
    _check_cost(
        golden,
        candidate,
        grading_items(todo, golden.queries, passages_by_id(golden.build.corpus)),
        "grade",
        DRIFT_STAGE,
        say,
        "judge drift",
    )
    drift = judge_drift(golden, candidate, human=human, ppi=with_ppi, seed=cfg.seed)
    value, low, high = drift.kappa("reference")
    accepted = None
    if math.isfinite(low):
        accepted = {
            "value": value,
            "low": low,
            "high": high,
            "source": f"the calibration of {drift.reference_id} on the same pairs",
        }
    gates = drift_gates(drift, minimum=cfg.drift_kappa_min, accepted=accepted)
    return DriftCheck(drift, gates, candidate.prompt.id)


def _queries(n: int) -> str:
    return f"{n} query" if n == 1 else f"{n} queries"


def consistency_markdown(result: SelfConsistency, local: bool) -> str:
    """Markdown above the self-consistency table: what was sampled and what the numbers mean."""
    t = result.table.set_index("rater")
    own = t.loc["samples with each other"]
    t_text = "its own" if result.temperature is None else f"{result.temperature:g}"
    lines = [
        f"**Self-consistency:** {result.judge_id} graded each of {int(own['n_pairs'])} pairs "
        f"{result.samples} times at temperature {t_text} (an LLM judge's; a simulated judge "
        "draws fresh noise instead), each sample its own cache entry (a second run is free). "
        "The samples agree with each other with a mean Cohen's kappa of "
        f"{own['kappa']:.3f} (over every two samples) and Krippendorff's alpha (ordinal) of "
        f"{own['alpha (ordinal)']:.3f} (over all of them).",
        "",
        "How to read it: a judge cannot agree with people more than it agrees with itself; "
        "when the samples disagree, part of every grade is the draw, not the passage, and the "
        "majority of several samples is steadier than one. Grades that never change (alpha 1) "
        "show the judge is stable, not that it is right: compare the rows against human labels.",
    ]
    vs_human = t[t["against"] == "human labels"]
    if len(vs_human):
        best = float(vs_human["kappa"].max())
        text = f"Against the human labels the best row reaches kappa {best:.3f}."
        lines += ["", text + (f" {_CHANCE}" if not best >= 0.2 else "")]
    if local:
        lines += [
            "",
            "With the tiny local model (SmolLM2-135M) expect kappa with people near 0: it "
            "agrees with assessors at about chance (kappa 0.005 on 90 TREC DL pairs), and its "
            "own samples at temperature 0.7 agree with each other at about chance too (mean "
            "kappa 0.04 on 45 MS MARCO DL pairs, `benchmarks/judge_self_consistency.py`). These "
            "numbers show the check running, not a judge to use.",
        ]
    return "\n".join(lines)


def audit_markdown(audit: JudgeAudit, local: bool) -> str:
    """Markdown of the bias audit: the slopes that matter and the position test, in words."""
    s = audit.slopes.set_index(["target", "feature"])
    lines = ["**Bias audit** (95% intervals: percentile bootstrap over queries)."]
    for target in dict.fromkeys(s.index.get_level_values(0)):
        for feature, what in (("words", "per 100 words"), ("overlap", "from no query term to all")):
            r = s.loc[(target, feature)]
            if not math.isfinite(r["slope"]):
                lines.append(
                    f"- {target} against {feature}: undefined (the feature does not vary)."
                )
                continue
            sure = "excludes 0" if r["low"] > 0 or r["high"] < 0 else "includes 0"
            lines.append(
                f"- {target} against {feature}: {r['slope']:+.3f} grades {what} "
                f"[{r['low']:+.3f}, {r['high']:+.3f}], the interval {sure} ({int(r['n_pairs'])} "
                f"pairs, {_queries(int(r['n_queries']))})."
            )
    few = int(s["n_queries"].max()) if len(s) else 0
    if few < 10:
        lines.append(
            f"- Only {_queries(few)}: an interval resampling so few queries is rough, and with "
            "2 or 3 it can span anything. Read the slopes, not the intervals, or give more "
            "queries (`max_queries`)."
        )
    lines += [
        "",
        "How to read it: relevant passages may well be longer or share more words with the "
        "query, so a slope of the grade alone is not a bias; the slope of `grade - human` is: "
        "a positive one means the judge over-grades long (or word-matching) passages compared "
        "with people.",
    ]
    p = audit.position
    if p is not None:
        change = ", ".join(
            f"{r.order} {r.mean_abs_rank_change:.2f}" for r in p.summary.itertuples(index=False)
        )
        lines += [
            "",
            f"**Position:** the same {p.n_batches} batch(es) ordered again in reversed and "
            f"shuffled orders moved each passage by {change} positions on average ({p.n_invalid} "
            f"invalid answers left out). Correlation of rank with input position, each passage "
            f"centred on its own mean: {p.correlation:.3f}, randomization p = {p.p_value:.3f} "
            f"({p.n_permutations} exchanges): a small p says the judge's order follows where "
            "passages stand in the prompt, not only what they say.",
        ]
        if p.n_batches < 5:
            lines.append(
                f"With {p.n_batches} batch(es) the test has little power: the answers of one "
                "batch can be exchanged among its orders in only a few ways, so even a judge "
                "that always puts the first passage first cannot reach a small p. Judge more "
                "queries for a verdict."
            )
    if local:
        lines += [
            "",
            "On the default data (a few queries, the tiny local model) these intervals are wide "
            "and the slopes say little; the audit is meant for the judge you will rely on. As a "
            "listwise judge the tiny model returns the input order every time (position "
            "correlation 1.0 on 8 MS MARCO DL batches, `benchmarks/judge_self_consistency.py`).",
        ]
    lines += [f"- {n}" for n in audit.notes]
    return "\n".join(lines)


def drift_markdown(check: DriftCheck, local: bool) -> str:
    """Markdown of the drift check: both judges' kappa, the gate's verdict and how to read it."""
    d = check.drift
    verdict = "passes" if check.gates.passed else "fails"
    lines = [
        d.banner(),
        "",
        f"**Gate:** the candidate (prompt `{check.prompt}`) {verdict}.",
        *(f"- {line}" for line in check.gates.message().splitlines()),
        "",
        "How to read it: the reference is the judge the golden set was built and calibrated "
        "with, the candidate the same model with another prompt, on the same human-labelled "
        "pairs. A candidate is accepted when its kappa reaches the minimum and does not fall "
        "below the lower end of the reference's interval (within that interval the difference "
        "is sampling noise). `ragnb golden audit RUN_FOLDER --prompt P --judge-kappa-min 0.4` "
        "applies the same gate in CI to a new prompt (or `--model` to a new model). The bias "
        "table says, per human grade, how far each judge's mean grade is from the people's.",
    ]
    if local:
        lines += [
            "",
            "Both judges here are the tiny local model (SmolLM2-135M), whose grades agree with "
            "people at about chance: expect both kappas near 0 and their difference to be "
            "noise. A gate that fails on the minimum is right about such a judge; the section "
            "shows the check running, and its verdict matters for the judge you will rely on.",
        ]
    return "\n".join(lines)
