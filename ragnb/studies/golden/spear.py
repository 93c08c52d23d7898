"""Which retriever is better, without complete labels? SPEAR's pseudo ground truth.

SPEAR's subset sampling [1]_ (:func:`spear_evaluate`): judge the union of the compared
retrievers' top K (the "pseudo ground truth"); on it precision is exact (every retrieved document
is judged) and recall is relative (divided by the relevant documents *some* compared system
found, not all that exist), which keeps the systems' order (SPEAR Appendix A, eqs. 12-23). PR
curves and PR-AUC per retriever reuse :func:`ragnb.measures.context.pooled_qrels` and
:func:`~ragnb.measures.context.pr_curve`. Documents are the units of precision and recall.

Whether the judge agrees with people is :mod:`ragnb.judge.calibration`.

References
----------
.. [1] Y. Zou et al., "SPEAR: Subset-sampled Performance Evaluation via Automated Ground Truth
   Generation for RAG", arXiv:2507.06554, 2025, Sections 2.1-2.2 and Appendix A.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.frames.index import sort_run
from ragnb.measures import parse_measure
from ragnb.measures.context import pooled_qrels, pr_curve
from ragnb.measures.kernel import as_qrels_frame, as_run_frame
from ragnb.studies.golden.stages import provenance_rows

__all__ = ["RECALL_LEVELS", "SpearResult", "interpolated_pr", "spear_evaluate", "spear_pool"]

RECALL_LEVELS = tuple(round(0.1 * i, 1) for i in range(11))


# ----------------------------------------------------------------------------- SPEAR


def spear_pool(runs: Mapping[str, Any], k: int) -> pd.DataFrame:
    """The pairs SPEAR's subset sampling judges: the union of the compared runs' top ``k``.

    Parameters
    ----------
    runs : mapping of str to run
    k : int >= 1

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id``, ``systems`` (the systems that retrieved it in their top ``k``,
        comma-separated, in the mapping's order), ``best_rank`` (int), one row per pair, sorted.
    """
    check_positive_int(k, "k")
    if not runs:
        raise InputError("spear_pool needs at least one run")
    parts = []
    for name, run in runs.items():
        ranked = sort_run(as_run_frame(run), warn=False).run
        parts.append(provenance_rows(ranked[ranked["rank"] <= k], name).drop(columns="score"))
    both = pd.concat(parts, ignore_index=True)
    order = {str(n): i for i, n in enumerate(runs)}
    both["_o"] = both["system"].map(order)
    both = both.sort_values(["query_id", "doc_id", "_o"], kind="stable")
    out = both.groupby(["query_id", "doc_id"], sort=True).agg(
        systems=("system", lambda s: ",".join(s)), best_rank=("rank", "min")
    )
    return out.reset_index()


def interpolated_pr(curve: pd.DataFrame, levels: Sequence[float] = RECALL_LEVELS) -> pd.DataFrame:
    """Interpolated precision at fixed recall levels, averaged over queries (trec_eval's
    ``iprec_at_recall``): ``p_interp(r) = max precision at any rank with recall >= r`` (0 when
    the ranking never reaches r).

    Parameters
    ----------
    curve : DataFrame
        :func:`ragnb.measures.context.pr_curve`'s frame, optionally with a ``system`` column.
    levels : sequence of float in [0, 1]

    Returns
    -------
    DataFrame
        ``system`` (when given), ``recall`` (the level), ``precision`` (mean over the queries with
        a defined recall), ``n_queries``.
    """
    keys = ["system"] if "system" in curve.columns else []
    rows = []
    for key, g in curve.dropna(subset=["recall"]).groupby([*keys, "query_id"], sort=True):
        rec = g["recall"].to_numpy()
        prec = g["precision"].to_numpy()
        # running max of precision from the end: the best precision at recall >= r
        best = np.maximum.accumulate(prec[::-1])[::-1]
        for r in levels:
            reach = np.flatnonzero(rec >= r - 1e-12)
            rows.append(
                (
                    *(key[:-1] if keys else ()),
                    float(r),
                    float(best[reach[0]]) if reach.size else 0.0,
                )
            )
    per = pd.DataFrame(rows, columns=[*keys, "recall", "precision"])
    out = per.groupby([*keys, "recall"], sort=True)["precision"].agg(["mean", "size"]).reset_index()
    return out.rename(columns={"mean": "precision", "size": "n_queries"})


@dataclass(eq=False)
class SpearResult:
    """SPEAR's relative evaluation of retrievers on the pseudo ground truth of their union.

    Attributes
    ----------
    k : int
    rel : int
    pseudo_gt : DataFrame
        :func:`~ragnb.measures.context.pooled_qrels` of the judgements and the runs' top ``k``:
        ``query_id``, ``doc_id``, ``relevance``.
    summary : DataFrame
        One row per system: ``system``, ``k``, ``precision`` (P@k, exact: every document in the
        top k is judged), ``recall_relative`` (relevant retrieved / relevant found by any system),
        ``pr_auc`` (step-wise area under the PR curve to rank k, on the pseudo ground truth),
        ``judged`` (share of the top k that is judged; 1 unless judgements are missing),
        ``n_queries``.
    curves : DataFrame
        :func:`~ragnb.measures.context.pr_curve` per system, with a ``system`` column.
    interpolated : DataFrame
        :func:`interpolated_pr` of ``curves``: for the PR chart.
    """

    k: int
    rel: int
    pseudo_gt: pd.DataFrame
    summary: pd.DataFrame
    curves: pd.DataFrame
    interpolated: pd.DataFrame


def spear_evaluate(
    judgements: Any, runs: Mapping[str, Any], k: int, *, rel: int = 1
) -> SpearResult:
    """Precision (exact), recall (relative) and PR-AUC of each run on SPEAR's pseudo ground truth.

    Parameters
    ----------
    judgements : DataFrame or dict
        Grades of (at least) every pair of :func:`spear_pool` (``runs``, ``k``), as qrels.
    runs : mapping of str to run
        The compared retrievers.
    k : int >= 1
        The depth compared (and pooled).
    rel : int, default 1
        Grades >= ``rel`` are relevant.

    Returns
    -------
    SpearResult

    Notes
    -----
    On the union of the compared systems' top k, each system's true and false positives are the
    same as on the full ground truth, so precision is exact; its false negatives lose the relevant
    documents no system found (FN_res), the same amount for every system, so recall becomes
    ``TP / (P - FN_res)``: larger than the true ``TP / P`` but in the same order between systems
    (SPEAR Appendix A, eqs. 12-23). A pair of the pool without a judgement counts as not
    relevant; ``judged`` says when that happens.

    References
    ----------
    .. [1] Y. Zou et al., SPEAR, arXiv:2507.06554, 2025, Sections 2.1-2.2, Appendix A.

    Examples
    --------
    Truth for q: a, b, c, z relevant; d, e not. System s1 returns a, d, b; s2 returns c, e, x
    (x judged not relevant). Nobody found z, so the pseudo ground truth holds a, b, c: s1's
    precision 2/3 is exact, its recall 2/3 (true: 2/4); s2: 1/3 and 1/3 (true 1/4).

    >>> judged = {"q": {"a": 1, "b": 1, "c": 1, "d": 0, "e": 0, "x": 0}}
    >>> runs = {"s1": {"q": {"a": 3, "d": 2, "b": 1}}, "s2": {"q": {"c": 3, "e": 2, "x": 1}}}
    >>> s = spear_evaluate(judged, runs, k=3).summary
    >>> s[["system", "precision", "recall_relative"]].round(4).values.tolist()
    [['s1', 0.6667, 0.6667], ['s2', 0.3333, 0.3333]]
    """
    if not runs:
        raise InputError("spear_evaluate needs at least one run")
    qrels = as_qrels_frame(judgements)
    pseudo = pooled_qrels(qrels, runs, k)
    measures = [f"P(rel={rel})@{k}", f"R(rel={rel})@{k}", f"PR-AUC(rel={rel})@{k}", f"Judged@{k}"]
    names = [str(parse_measure(m)) for m in measures]
    rows, curves = [], []
    for name, run in runs.items():
        # precision and Judged on all judgements (a pooled non-relevant document is judged);
        # recall and PR-AUC on the pseudo ground truth (N_p = relevant found by any system)
        full = evaluate(qrels, run, [names[0], names[3]]).aggregate_to_dict()
        pseudo_vals = evaluate(pseudo, run, [names[1], names[2]]).aggregate
        pv = dict(zip(pseudo_vals["measure"], pseudo_vals["value"], strict=True))
        n_q = int(pseudo_vals["n_queries"].iloc[0])
        rows.append((str(name), k, full[names[0]], pv[names[1]], pv[names[2]], full[names[3]], n_q))
        c = pr_curve(pseudo, run, k, rel=rel)
        curves.append(c.assign(system=str(name)))
    summary = pd.DataFrame(
        rows,
        columns=["system", "k", "precision", "recall_relative", "pr_auc", "judged", "n_queries"],
    )
    curve = pd.concat(curves, ignore_index=True)
    curve = curve[["system", *[c for c in curve.columns if c != "system"]]]
    return SpearResult(k, rel, pseudo, summary, curve, interpolated_pr(curve))
