"""Is the judge calibrated? Judge grades against human labels, and SPEAR's pseudo ground truth.

Two questions a golden set must answer before its numbers are trusted:

Does the judge agree with people? (:func:`calibrate`)
    On the (query, document) pairs that carry both a human label and a judge grade: the
    confusion matrix (human label by judge grade), exact agreement, Cohen's kappa unweighted and
    weighted (linear and quadratic, :func:`weighted_kappa`); and, for a set of retrieval systems,
    their measure (default ``nDCG@10``) under human labels against the same measure under judge
    grades, with Kendall's tau between the two rankings of the systems (Vespa's scatter plot:
    "there is a good correlation in the rankings", [1]_). Both measures use the same pairs, so
    the only difference is who labelled them.
Which retriever is better, without complete labels? (:func:`spear_evaluate`)
    SPEAR's subset sampling [2]_: judge the union of the compared retrievers' top K (the
    "pseudo ground truth"); on it precision is exact (every retrieved document is judged) and
    recall is relative (divided by the relevant documents *some* compared system found, not all
    that exist), which keeps the systems' order (SPEAR Appendix A, eqs. 12-23). PR curves and
    PR-AUC per retriever reuse :func:`ragnb.measures.context.pooled_qrels` and
    :func:`~ragnb.measures.context.pr_curve`. SPEAR's "minimal retrieval facts" (an LLM cuts each
    relevant chunk down to the facts that answer the query, so chunks of different segmentations
    that hold the same fact count once) is optional and pluggable: :func:`minimal_facts` with any
    ``extract(query, passage) -> list of str``, e.g. :class:`LLMFactExtractor`; without a client
    the step is skipped and documents are the units.

References
----------
.. [1] J. Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (confusion matrix of
   GPT-4 vs human labels; nDCG@10 of nine retrieval methods under both labels).
.. [2] Y. Zou et al., "SPEAR: Subset-sampled Performance Evaluation via Automated Ground Truth
   Generation for RAG", arXiv:2507.06554, 2025, Sections 2.1-2.3 and Appendix A.
.. [3] J. Cohen, "Weighted kappa: nominal scale agreement with provision for scaled disagreement
   or partial credit", Psychological Bulletin 70(4), 1968.
.. [4] M. G. Kendall, "A new measure of rank correlation", Biometrika 30, 1938; tau-b for ties:
   Kendall, "The treatment of ties in ranking problems", Biometrika 33, 1945.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.evaluate import evaluate
from ragnb.frames import sort_run
from ragnb.golden.stages import provenance_rows
from ragnb.measures import parse_measure
from ragnb.measures._kernel import as_qrels_frame, as_run_frame
from ragnb.measures.context import pooled_qrels, pr_curve
from ragnb.validation import check_positive_int, require_columns

__all__ = [
    "Calibration",
    "KendallTau",
    "LLMFactExtractor",
    "SpearResult",
    "agreement_pairs",
    "calibrate",
    "confusion_matrix",
    "fact_recall",
    "interpolated_pr",
    "kendall_tau",
    "minimal_facts",
    "spear_evaluate",
    "spear_pool",
    "system_agreement",
    "weighted_kappa",
]

Weights = Literal["none", "linear", "quadratic"]
RECALL_LEVELS = tuple(round(0.1 * i, 1) for i in range(11))


# ----------------------------------------------------------------------------- agreement


def _labels(values: Sequence[Any] | np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"{what} must be a 1-d sequence of grades")
    try:
        out = arr.astype(np.int64)
    except (TypeError, ValueError):
        raise InputError(f"{what} holds a value that is not an integer grade") from None
    if not np.array_equal(out, arr.astype(np.float64)):
        raise InputError(f"{what} holds a value that is not an integer grade")
    return out


def _categories(a: np.ndarray, b: np.ndarray, labels: Sequence[int] | None) -> list[int]:
    if labels is None:
        return sorted(set(a.tolist()) | set(b.tolist()))
    cats = [int(x) for x in labels]
    if len(set(cats)) != len(cats):
        raise InputError(f"labels repeat a grade: {cats}")
    missing = sorted((set(a.tolist()) | set(b.tolist())) - set(cats))
    if missing:
        raise InputError(f"grades {missing} are not among labels {cats}")
    return cats


def _counts(a: np.ndarray, b: np.ndarray, cats: list[int]) -> np.ndarray:
    index = {c: i for i, c in enumerate(cats)}
    counts = np.zeros((len(cats), len(cats)), dtype=np.int64)
    np.add.at(counts, ([index[x] for x in a.tolist()], [index[x] for x in b.tolist()]), 1)
    return counts


def weighted_kappa(
    a: Sequence[int] | np.ndarray,
    b: Sequence[int] | np.ndarray,
    *,
    weights: Weights = "linear",
    labels: Sequence[int] | None = None,
) -> float:
    """Cohen's kappa between two raters' grades of the same items, optionally weighted.

    ``kappa_w = 1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij`` where ``O`` is the table of observed
    proportions (rater a's grade by rater b's), ``E_ij = O_i. O_.j`` the table expected by chance
    from the marginals, and the disagreement weights ``w_ij`` are, with ``i, j`` the positions of
    the grades in ``labels`` and ``k`` their number: ``1 - [i == j]`` (``"none"``: Cohen 1960),
    ``|i - j| / (k - 1)`` (``"linear"``) or ``(i - j)**2 / (k - 1)**2`` (``"quadratic"``).

    Parameters
    ----------
    a, b : sequence of int, length n
        The two raters' grades, aligned (e.g. human labels and judge grades of the same pairs).
    weights : {"none", "linear", "quadratic"}, default "linear"
    labels : sequence of int, optional
        The grade scale, in order. Default: the grades that occur. Pass the full scale (e.g.
        ``range(1, 6)``) so that a grade nobody used still counts in the distances, as
        scikit-learn's ``cohen_kappa_score(labels=...)``.

    Returns
    -------
    float in [-1, 1]
        1: perfect agreement; 0: what chance gives; NaN when chance alone explains everything
        (``sum w E = 0``: both raters used a single grade) or there are no items.

    Raises
    ------
    InputError
        Different lengths, grades that are not integers or not in ``labels``, unknown weights.

    References
    ----------
    .. [1] J. Cohen, "A coefficient of agreement for nominal scales", 1960; "Weighted kappa",
       Psychological Bulletin 70(4), 1968.

    Examples
    --------
    Six pairs on a 0-2 scale; observed (human, judge): (0,0) (0,1) (1,1) (1,1) (2,2) (2,0). Human
    marginals 2/2/2, judge 2/3/1 (sixths). Linear: disagreement observed ``(0.5 + 1) / 6`` against
    ``15/36`` by chance, kappa = 1 - 9/15 = 0.4; quadratic: ``(0.25 + 1) / 6`` against ``10.5/36``,
    kappa = 2/7; unweighted: (4/6 - 1/3) / (1 - 1/3) = 0.5.

    >>> h, j = [0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0]
    >>> [round(weighted_kappa(h, j, weights=w), 4) for w in ("linear", "quadratic", "none")]
    [0.4, 0.2857, 0.5]
    """
    if weights not in ("none", "linear", "quadratic"):
        raise InputError(f"weights must be 'none', 'linear' or 'quadratic', got {weights!r}")
    x, y = _labels(a, "a"), _labels(b, "b")
    if x.size != y.size:
        raise InputError(f"a has {x.size} grades, b has {y.size}: they must be aligned")
    if x.size == 0:
        return math.nan
    cats = _categories(x, y, labels)
    k = len(cats)
    observed = _counts(x, y, cats) / x.size
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    if weights == "none" or k < 2:
        w = (i != j).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i - j) / (k - 1)
    else:
        w = ((i - j) / (k - 1)) ** 2
    chance = float((w * expected).sum())
    if chance <= 0:
        return math.nan
    return 1.0 - float((w * observed).sum()) / chance


def confusion_matrix(
    a: Sequence[int] | np.ndarray,
    b: Sequence[int] | np.ndarray,
    *,
    labels: Sequence[int] | None = None,
    names: tuple[str, str] = ("human", "judge"),
) -> pd.DataFrame:
    """The confusion matrix of two raters' grades, as a tidy frame.

    Parameters
    ----------
    a, b : sequence of int, length n
        Aligned grades (rows: ``a``, columns: ``b``).
    labels : sequence of int, optional
        The grades to list (default: those that occur); every combination gets a row.
    names : (str, str), default ("human", "judge")
        Column names of the two raters.

    Returns
    -------
    DataFrame
        One row per (a grade, b grade) combination: ``<names[0]>``, ``<names[1]>`` (int),
        ``count`` (int), ``share`` (float in [0, 1], count / n; NaN when n = 0). Pivot it for the
        square form: ``frame.pivot(index="human", columns="judge", values="count")``.

    Examples
    --------
    >>> m = confusion_matrix([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0])
    >>> m.pivot(index="human", columns="judge", values="count").to_numpy().tolist()
    [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    """
    x, y = _labels(a, "a"), _labels(b, "b")
    if x.size != y.size:
        raise InputError(f"a has {x.size} grades, b has {y.size}: they must be aligned")
    cats = _categories(x, y, labels)
    counts = _counts(x, y, cats)
    ia, ib = np.indices(counts.shape)
    n = counts.sum()
    return pd.DataFrame(
        {
            names[0]: np.asarray(cats, dtype=np.int64)[ia.ravel()],
            names[1]: np.asarray(cats, dtype=np.int64)[ib.ravel()],
            "count": counts.ravel(),
            "share": counts.ravel() / n if n else np.full(counts.size, np.nan),
        }
    )


def agreement_pairs(human: Any, judge: Any) -> pd.DataFrame:
    """The (query, document) pairs that both a human and the judge labelled.

    Parameters
    ----------
    human, judge : DataFrame or dict
        Qrels (``query_id``, ``doc_id``, ``relevance``, or ``{query_id: {doc_id: grade}}``).

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id`` (str), ``human``, ``judge`` (int64), sorted by query and document.
    """
    h = as_qrels_frame(human).rename(columns={"relevance": "human"})
    j = as_qrels_frame(judge).rename(columns={"relevance": "judge"})
    pairs = h[["query_id", "doc_id", "human"]].merge(
        j[["query_id", "doc_id", "judge"]], on=["query_id", "doc_id"], how="inner"
    )
    pairs = pairs.astype({"human": np.int64, "judge": np.int64})
    return pairs.sort_values(["query_id", "doc_id"], kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class KendallTau:
    """Kendall's tau-b between two rankings of the same systems.

    Attributes
    ----------
    tau : float in [-1, 1]
        NaN with fewer than two systems or when one ranking is all ties.
    p_value : float
        Two-sided, scipy's (exact for small samples without ties).
    n : int
        Systems compared.
    """

    tau: float
    p_value: float
    n: int


def kendall_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> KendallTau:
    """Kendall's tau-b between two score vectors of the same systems (scipy.stats.kendalltau).

    ``tau_b = (C - D) / sqrt((C + D + T_x) (C + D + T_y))`` with ``C``, ``D`` the concordant and
    discordant pairs and ``T_x``, ``T_y`` the pairs tied only in x or only in y.

    Examples
    --------
    Four systems; only the pair (3rd, 4th) is ordered differently: (5 - 1) / 6.

    >>> round(kendall_tau([0.5, 0.4, 0.3, 0.2], [0.45, 0.42, 0.1, 0.3]).tau, 4)
    0.6667
    """
    from scipy.stats import kendalltau

    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(f"x and y must be aligned 1-d vectors, got shapes {a.shape}, {b.shape}")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return KendallTau(math.nan, math.nan, int(a.size))
    res = kendalltau(a, b)
    return KendallTau(float(res.statistic), float(res.pvalue), int(a.size))


def system_agreement(
    human: Any,
    judge: Any,
    runs: Mapping[str, Any],
    measure: str = "nDCG@10",
) -> tuple[pd.DataFrame, KendallTau]:
    """Each system's measure under human labels and under judge grades, and their rank correlation.

    Parameters
    ----------
    human, judge : DataFrame or dict
        Qrels over the same pairs (see :func:`agreement_pairs`; the caller restricts them).
    runs : mapping of str to run
        The systems (run frames or dicts).
    measure : str, default "nDCG@10"

    Returns
    -------
    systems : DataFrame
        One row per system: ``system``, ``measure``, ``human``, ``judge`` (float, macro means),
        ``rank_human``, ``rank_judge`` (1 = best, ties share the lower rank), ``n_queries``.
    tau : KendallTau
        Between the ``human`` and ``judge`` columns.
    """
    if not runs:
        raise InputError("system_agreement needs at least one run")
    m = str(parse_measure(measure))
    rows = []
    for name, run in runs.items():
        h = evaluate(human, run, [m]).aggregate.iloc[0]
        j = evaluate(judge, run, [m]).aggregate.iloc[0]
        rows.append((str(name), m, float(h["value"]), float(j["value"]), int(h["n_queries"])))
    frame = pd.DataFrame(rows, columns=["system", "measure", "human", "judge", "n_queries"])
    frame.insert(4, "rank_human", frame["human"].rank(ascending=False, method="min"))
    frame.insert(5, "rank_judge", frame["judge"].rank(ascending=False, method="min"))
    frame = frame.astype({"rank_human": np.int64, "rank_judge": np.int64})
    return frame, kendall_tau(frame["human"], frame["judge"])


@dataclass(eq=False)
class Calibration:
    """The judge against human labels.

    Attributes
    ----------
    pairs : DataFrame
        :func:`agreement_pairs`: ``query_id``, ``doc_id``, ``human``, ``judge``.
    labels : list of int
        The grade scale of the confusion matrix and the kappas.
    confusion : DataFrame
        :func:`confusion_matrix` of ``human`` by ``judge``.
    agreement : DataFrame
        One row per statistic: ``statistic`` (``exact agreement``, ``within one grade``,
        ``kappa``, ``kappa (linear)``, ``kappa (quadratic)``, ``pairs``), ``value``.
    systems : DataFrame
        :func:`system_agreement`'s frame (empty without runs).
    tau : KendallTau or None
        Kendall's tau-b of the systems under human vs judge labels (None without runs).
    measure : str
    notes : list of str
    """

    pairs: pd.DataFrame
    labels: list[int]
    confusion: pd.DataFrame
    agreement: pd.DataFrame
    systems: pd.DataFrame
    tau: KendallTau | None
    measure: str
    notes: list[str] = field(default_factory=list)

    @property
    def matrix(self) -> pd.DataFrame:
        """The confusion matrix, square: rows human grades, columns judge grades, counts."""
        wide = self.confusion.pivot(index="human", columns="judge", values="count")
        wide.index.name, wide.columns.name = "human \\ judge", None
        return wide

    def kappas(self) -> dict[str, float]:
        """``{"none": ..., "linear": ..., "quadratic": ...}``."""
        a = self.agreement.set_index("statistic")["value"]
        return {
            "none": float(a["kappa"]),
            "linear": float(a["kappa (linear)"]),
            "quadratic": float(a["kappa (quadratic)"]),
        }

    def summary(self) -> dict[str, Any]:
        """JSON-safe numbers for manifests."""

        def num(v: float) -> float | None:
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

        return {
            "pairs": len(self.pairs),
            "labels": self.labels,
            "agreement": {
                str(s): num(float(v))
                for s, v in zip(self.agreement["statistic"], self.agreement["value"], strict=True)
            },
            "measure": self.measure,
            "systems": len(self.systems),
            "kendall_tau": None if self.tau is None else num(self.tau.tau),
            "kendall_p_value": None if self.tau is None else num(self.tau.p_value),
            "notes": list(self.notes),
        }

    def export(self, folder: str | Path) -> Path:
        """Write ``pairs.csv``, ``confusion.csv``, ``agreement.csv``, ``systems.csv`` and
        ``calibration.json`` into ``folder``, atomically; returns the folder."""
        from ragnb.io import write_json, write_table_csv

        folder = Path(folder)
        for stem, frame in (
            ("pairs", self.pairs),
            ("confusion", self.confusion),
            ("agreement", self.agreement),
            ("systems", self.systems),
        ):
            write_table_csv(frame, folder / f"{stem}.csv")
        write_json(self.summary(), folder / "calibration.json")
        return folder


def calibrate(
    human: Any,
    judge: Any,
    runs: Mapping[str, Any] | None = None,
    *,
    measure: str = "nDCG@10",
    labels: Sequence[int] | None = None,
) -> Calibration:
    """Compare judge grades with human labels (Vespa's calibration of an LLM judge).

    Parameters
    ----------
    human : DataFrame or dict
        Human labels as qrels, on the judge's scale (map them first, e.g.
        :func:`ragnb.measures.map_grades`, when the scales differ: kappa compares grades).
    judge : DataFrame or dict
        The judge's grades as qrels (valid grades only).
    runs : mapping of str to run, optional
        Retrieval systems to score under both label sets (the more the better: Vespa used nine).
    measure : str, default "nDCG@10"
    labels : sequence of int, optional
        The grade scale (default: the grades that occur); pass the judge's full scale so the
        weighted kappas measure distances on it.

    Returns
    -------
    Calibration
        Everything is computed on the pairs both labelled (:func:`agreement_pairs`); the systems'
        measures too, so a system is never rewarded by the judge for documents no human saw.

    Raises
    ------
    InputError
        No pair is labelled by both.
    """
    pairs = agreement_pairs(human, judge)
    if pairs.empty:
        raise InputError("no (query, document) pair carries both a human label and a judge grade")
    h, j = pairs["human"].to_numpy(), pairs["judge"].to_numpy()
    seen = set(h.tolist()) | set(j.tolist())
    cats = _categories(h, j, None if labels is None else sorted(set(map(int, labels)) | seen))
    notes = []
    rows = [
        ("exact agreement", float(np.mean(h == j))),
        ("within one grade", float(np.mean(np.abs(h - j) <= 1))),
        ("kappa", weighted_kappa(h, j, weights="none", labels=cats)),
        ("kappa (linear)", weighted_kappa(h, j, weights="linear", labels=cats)),
        ("kappa (quadratic)", weighted_kappa(h, j, weights="quadratic", labels=cats)),
        ("pairs", float(len(pairs))),
    ]
    agreement = pd.DataFrame(rows, columns=["statistic", "value"])
    systems = pd.DataFrame(
        columns=["system", "measure", "human", "judge", "rank_human", "rank_judge", "n_queries"]
    )
    tau = None
    m = str(parse_measure(measure))
    if runs:
        hq = pairs[["query_id", "doc_id", "human"]].rename(columns={"human": "relevance"})
        jq = pairs[["query_id", "doc_id", "judge"]].rename(columns={"judge": "relevance"})
        systems, tau = system_agreement(hq, jq, runs, m)
        if len(systems) < 4:
            n = len(systems)
            step = 2 / max(1, n * (n - 1) // 2)
            notes.append(
                f"Kendall's tau over {n} systems is weak evidence: one swapped pair moves it by "
                f"{step:.2f} (Vespa compared nine systems)"
            )
    if not set(h.tolist()) & set(j.tolist()):
        notes.append("human labels and judge grades share no grade: are they on the same scale?")
    return Calibration(
        pairs, cats, confusion_matrix(h, j, labels=cats), agreement, systems, tau, m, notes
    )


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


# ----------------------------------------------------------------------------- minimal facts

_SPACE = re.compile(r"\s+")


def _fact_key(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", text).strip(" .;:")


def minimal_facts(
    relevant: pd.DataFrame, extract: Callable[[str, str], Sequence[str]] | None
) -> pd.DataFrame:
    """SPEAR's minimal retrieval facts: each relevant chunk cut to the facts that answer the query.

    Parameters
    ----------
    relevant : DataFrame
        The relevant pairs of the pseudo ground truth with their texts: ``query_id``, ``doc_id``,
        ``query``, ``passage``.
    extract : callable or None
        ``extract(query, passage) -> list of str``: the minimal facts of the passage for the query
        (an LLM, :class:`LLMFactExtractor`, or any function). None: skipped (returns an empty
        frame): without a client, documents stay the units of precision and recall.

    Returns
    -------
    DataFrame
        One row per (query, document, fact): ``query_id``, ``doc_id``, ``fact_id`` (``f1``,
        ``f2``, ... per query: the same fact extracted from two chunks gets one id, compared after
        Unicode NFKC, case folding and white space collapsing), ``fact`` (the text first seen).

    Notes
    -----
    SPEAR's motivation is retrievers with different segmentations: ``redundancy_A || gt`` and
    ``gt || redundancy_B`` are two relevant chunks holding one fact, and recall should count it
    once (Section 2.3). Pair it with :func:`fact_recall`.
    """
    cols = ["query_id", "doc_id", "fact_id", "fact"]
    if extract is None:
        return pd.DataFrame(columns=cols)
    require_columns(relevant, ("query_id", "doc_id", "query", "passage"), "relevant pairs")
    many = getattr(extract, "many", None)
    pairs = list(zip(relevant["query"].astype(str), relevant["passage"].astype(str), strict=True))
    facts_of = many(pairs) if callable(many) else [extract(q, p) for q, p in pairs]
    rows = []
    ids: dict[tuple[str, str], str] = {}
    counters: dict[str, int] = {}
    for qid, did, facts in zip(relevant["query_id"], relevant["doc_id"], facts_of, strict=True):
        for fact in facts or ():
            key = (str(qid), _fact_key(str(fact)))
            if not key[1]:
                continue
            if key not in ids:
                counters[str(qid)] = counters.get(str(qid), 0) + 1
                ids[key] = f"f{counters[str(qid)]}"
            rows.append((str(qid), str(did), ids[key], str(fact).strip()))
    return pd.DataFrame(rows, columns=cols)


def fact_recall(facts: pd.DataFrame, runs: Mapping[str, Any], k: int) -> pd.DataFrame:
    """Relative recall of minimal facts: a fact is found when a document holding it is in the top k.

    Parameters
    ----------
    facts : DataFrame
        :func:`minimal_facts`'s frame.
    runs : mapping of str to run
    k : int >= 1

    Returns
    -------
    DataFrame
        One row per system: ``system``, ``k``, ``facts_found``, ``facts`` (over every query),
        ``recall`` (macro mean over queries of found / facts of the query), ``n_queries``.
    """
    check_positive_int(k, "k")
    per_query_total = facts.groupby("query_id")["fact_id"].nunique()
    rows = []
    for name, run in runs.items():
        ranked = sort_run(as_run_frame(run), warn=False).run
        top = ranked.loc[ranked["rank"] <= k, ["query_id", "doc_id"]].astype(str)
        hit = facts.merge(top, on=["query_id", "doc_id"], how="inner")
        found = hit.groupby("query_id")["fact_id"].nunique().reindex(per_query_total.index)
        found = found.fillna(0)
        recall = float((found / per_query_total).mean()) if len(per_query_total) else math.nan
        rows.append(
            (str(name), k, int(found.sum()), int(per_query_total.sum()), recall)
            + (len(per_query_total),)
        )
    return pd.DataFrame(
        rows, columns=["system", "k", "facts_found", "facts", "recall", "n_queries"]
    )


class LLMFactExtractor:
    """Minimal retrieval facts by an LLM (SPEAR Section 2.3), through an OpenAIJudge's client,
    cache and ledger.

    The prompt (an ``extract`` template answering a numbered list) asks for the smallest
    self-contained statements of the passage that help answer the query, or ``1. NONE``.
    An answer that stays invalid after the reminder, or fails, gives no facts for that passage
    (the pair then has no fact and adds nothing to fact recall); :attr:`failures` counts them.

    Parameters
    ----------
    judge : OpenAIJudge
    stage : str, default "spear_facts"
        Ledger label.
    """

    def __init__(self, judge: Any, *, stage: str = "spear_facts") -> None:
        from ragnb.judge.prompts import PromptTemplate

        self.judge = judge
        self.stage = stage
        self.template = PromptTemplate(
            name="minimal-facts",
            language="en",
            kind="extract",
            answer="numbered_list",
            user=(
                "Extract the minimal facts of the passage that help answer the question: the "
                "smallest self-contained statements, copied or closely paraphrased from the "
                "passage, leaving out everything that does not bear on the question.\n\n"
                "Question:\n{query}\n\nPassage:\n{passage}\n\n"
                'Return the facts as a numbered list, one per line ("1. ..."), or the single '
                'line "1. NONE" if the passage holds none. No other text.'
            ),
            reminder=(
                "Your answer is not in the required format. Reply with only a numbered list, "
                'one fact per line, "1. ...", "2. ...", or "1. NONE".'
            ),
            expected_output_tokens=80,
            source="Zou et al., SPEAR (arXiv:2507.06554), Section 2.3: minimal retrieval facts",
        )
        self.failures = 0

    def many(self, pairs: Sequence[tuple[str, str]]) -> list[list[str]]:
        """Facts of each ``(query, passage)``, in order."""
        calls = [
            self.judge.make_call(
                self.template, {"query": q, "passage": p}, item=f"p{i}", query_id=f"p{i}"
            )
            for i, (q, p) in enumerate(pairs)
        ]
        out: list[list[str]] = []
        for r in self.judge.run(calls, stage=self.stage, kind="extract"):
            if not r.valid:
                self.failures += 1
                out.append([])
                continue
            facts = [f for f in r.value if f.strip().upper() != "NONE"]
            out.append(facts)
        return out

    def __call__(self, query: str, passage: str) -> list[str]:
        return self.many([(query, passage)])[0]
