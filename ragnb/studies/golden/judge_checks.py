"""Notebook 02's judge checks on a built golden set: self-consistency, the bias audit and drift.

- :func:`self_consistency_for`: the golden set's judge grades every S4 pair ``samples`` times
  at ``temperature`` (:class:`ragnb.judge.SelfConsistentJudge`, each sample its own cache entry,
  ledger stage ``consistency``); the samples' agreement with each other
  (:func:`ragnb.judge.self_agreement`) beside each sample's and the majority's agreement with
  the human labels (:func:`ragnb.studies.golden.ensemble_agreement`).
- :func:`judge_audit_for`: the slopes of the S4 grades, and of the judge's errors against the
  human labels, against passage length and query-term overlap (:func:`ragnb.judge.bias_audit`);
  the position test of the listwise judge on one batch per query, the first ``refine_batch``
  passages of the pruned pool in their original, reversed and shuffled orders
  (:func:`ragnb.judge.position_audit`, ledger stage ``position_audit``).
- :func:`drift_for`: the golden set's LLM judge with another prompt (``drift_prompt``) re-grades the
  human-labelled sample, and every judged pair when there are PPI labels
  (:func:`ragnb.studies.golden.drift.judge_drift`, ledger stage ``drift``), and the candidate is
  gated (:func:`ragnb.studies.golden.drift.drift_gates`) on ``drift_kappa_min`` and on the lower end
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

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.judge import (
    PositionAudit,
    SelfConsistentJudge,
    bias_audit,
    position_audit,
    self_agreement,
)
from ragnb.stats.gates import GateReport
from ragnb.studies.golden.config import GoldenSetConfig
from ragnb.studies.golden.drift import DRIFT_STAGE, JudgeDrift, drift_gates, judge_drift
from ragnb.studies.golden.ensemble import AGREEMENT_COLUMNS, ensemble_agreement
from ragnb.studies.golden.evaluation import ppi_labels_for
from ragnb.studies.golden.goldenset import GoldenSet
from ragnb.studies.golden.stages import grading_items, passages_by_id

__all__ = [
    "CONSISTENCY_STAGE",
    "POSITION_STAGE",
    "DriftCheck",
    "JudgeAudit",
    "SelfConsistency",
    "audit_markdown",
    "consistency_markdown",
    "drift_for",
    "drift_markdown",
    "drift_skipped",
    "judge_audit_for",
    "self_consistency_for",
]

#: Ledger stages of the calls of the self-consistency samples and of the position test.
CONSISTENCY_STAGE = "consistency"
POSITION_STAGE = "position_audit"
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
        :data:`ragnb.studies.golden.ensemble.AGREEMENT_COLUMNS` (the self row: exact agreement and
        the kappas averaged over every two samples, the alphas among all samples; kendall tau-b
        NaN).
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
        :func:`~ragnb.studies.golden.drift.drift_gates`: the candidate's kappa against
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


def _check_cost(golden: GoldenSet, judge: Any, items: Any, kind: str, stage: str) -> None:
    """Price ``judge``'s calls on ``items``; stop when they exceed what the golden set's own
    estimate leaves of ``budget_usd``."""
    from ragnb.llm.ledger import check_budget, estimate

    budget = golden.build.budget_usd
    if budget is None:
        return
    # the golden set's judge's price table (a local model is priced at 0 there)
    ledger = getattr(golden.judge, "ledger", None) or golden.build.ledger
    prices = None if ledger is None else ledger.prices
    est = estimate(judge, items, kind=kind, stage=stage, prices=prices)
    if not est.calls:
        return
    spent = golden.estimate.total_usd if golden.estimate is not None else 0.0
    left = max(0.0, budget - (0.0 if not math.isfinite(spent) else spent))
    check_budget(est, left)


def self_consistency_for(golden: GoldenSet, human: Any = None) -> SelfConsistency | None:
    """Grade the golden set's S4 pairs ``consistency_samples`` times and measure agreement.

    Parameters
    ----------
    golden : GoldenSet
        Built with a config (its ``consistency_samples`` >= 2, ``consistency_temperature``).
    human : HumanLabels, optional
        Adds each sample's and the majority's agreement with these labels.

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
    _check_cost(golden, judge, items, "grade", CONSISTENCY_STAGE)
    graded = judge.grade_members(items, stage=CONSISTENCY_STAGE)
    scale = golden.judge.scale
    labels = None if scale is None else list(range(scale[0], scale[1] + 1))
    own = self_agreement(graded, labels=labels)
    values = own.set_index("statistic")["value"]
    rows = [
        {
            "rater": "samples with each other",
            "against": "itself",
            "n_pairs": int(own["n_pairs"].iloc[0]),
            **{c: float(values.get(c, np.nan)) for c in AGREEMENT_COLUMNS},
        }
    ]
    if human is not None:
        agree = ensemble_agreement(human.qrels, graded, labels=labels).table
        names = {"ensemble": f"{judge.combine} of {judge.samples}"}
        for _, r in agree.iterrows():
            rows.append(
                {
                    "rater": names.get(r["judge"], r["judge"]),
                    "against": "human labels",
                    "n_pairs": int(r["n_pairs"]),
                    **{c: float(r[c]) for c in AGREEMENT_COLUMNS},
                }
            )
    table = pd.DataFrame(rows, columns=["rater", "against", "n_pairs", *AGREEMENT_COLUMNS])
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


def judge_audit_for(golden: GoldenSet, human: Any = None) -> JudgeAudit:
    """The bias audit of the golden set's judge: slopes of the S4 grades and the position test.

    Parameters
    ----------
    golden : GoldenSet
    human : HumanLabels, optional
        Adds the slopes of ``grade - human`` on the pairs that carry a label.

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
        _check_cost(golden, golden.judge, batches, "rank", POSITION_STAGE)
        position = position_audit(golden.judge, batches, seed=cfg.seed, stage=POSITION_STAGE)
    else:
        notes.append("No query has two pooled passages: no position test.")
    return JudgeAudit(slopes, position, notes)


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


def drift_for(golden: GoldenSet, human: Any) -> DriftCheck:
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
