"""Is the judge calibrated? Judge grades against human labels.

Does the judge agree with people? (:func:`calibrate`)
    On the (query, document) pairs that carry both a human label and a judge grade: the
    confusion matrix (human label by judge grade), exact agreement, Cohen's kappa unweighted and
    weighted (linear and quadratic, :func:`~ragnb.judge.agreement.weighted_kappa`) and
    Krippendorff's alpha (nominal, ordinal, interval,
    :func:`~ragnb.judge.agreement.krippendorff_alpha`), each with a percentile bootstrap interval
    over queries (:func:`~ragnb.judge.agreement.agreement_intervals`); the judge's bias per human
    grade (:func:`~ragnb.judge.agreement.judge_bias`); and, for a set of retrieval systems, their
    measure (default ``nDCG@10``) under human labels against the same measure under judge
    grades, with Kendall's tau between the two rankings of the systems (Vespa's scatter plot:
    "there is a good correlation in the rankings", [1]_) and its bootstrap interval over queries
    (:func:`system_tau_interval`). Both measures use the same pairs, so the only difference is
    who labelled them. The statistics on arrays live in :mod:`ragnb.judge.agreement`.

References
----------
.. [1] J. Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (confusion matrix of
   GPT-4 vs human labels; nDCG@10 of nine retrieval methods under both labels).
.. [2] J. Cohen, "Weighted kappa: nominal scale agreement with provision for scaled disagreement
   or partial credit", Psychological Bulletin 70(4), 1968.
.. [3] M. G. Kendall, "A new measure of rank correlation", Biometrika 30, 1938; tau-b for ties:
   Kendall, "The treatment of ties in ranking problems", Biometrika 33, 1945.
.. [4] K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.
.. [5] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993, Chapter 13.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.judge.agreement import (
    KendallTau,
    TauInterval,
    agreement_intervals,
    check_bootstrap,
    confusion_matrix,
    fill_tau_doc,
    grade_categories,
    judge_bias,
    kendall_tau,
    tau_interval,
)
from ragnb.measures import parse_measure
from ragnb.measures.kernel import as_qrels_frame

__all__ = [
    "Calibration",
    "agreement_pairs",
    "calibrate",
    "system_agreement",
    "system_tau_interval",
]


# ----------------------------------------------------------------------------- agreement


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

    Examples
    --------
    Only the pairs both labelled count: ``c`` has no judge grade, ``d`` no human label.

    >>> human = {"q": {"a": 2, "b": 0, "c": 1}}
    >>> judge = {"q": {"b": 1, "a": 2, "d": 0}}
    >>> agreement_pairs(human, judge).values.tolist()
    [['q', 'a', 2, 2], ['q', 'b', 0, 1]]
    """
    h = as_qrels_frame(human).rename(columns={"relevance": "human"})
    j = as_qrels_frame(judge).rename(columns={"relevance": "judge"})
    pairs = h[["query_id", "doc_id", "human"]].merge(
        j[["query_id", "doc_id", "judge"]], on=["query_id", "doc_id"], how="inner"
    )
    pairs = pairs.astype({"human": np.int64, "judge": np.int64})
    return pairs.sort_values(["query_id", "doc_id"], kind="stable").reset_index(drop=True)


def _system_values(
    human: Any, judge: Any, runs: Mapping[str, Any], measure: str
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The systems frame of :func:`system_agreement` and the per-query values behind it, each of
    shape (n_queries, n_systems), queries sorted (NaN where the measure is undefined)."""
    if not runs:
        raise InputError("system_agreement needs at least one run")
    m = str(parse_measure(measure))
    rows, per_h, per_j = [], [], []
    for name, run in runs.items():
        eh, ej = evaluate(human, run, [m]), evaluate(judge, run, [m])
        h, j = eh.aggregate.iloc[0], ej.aggregate.iloc[0]
        rows.append((str(name), m, float(h["value"]), float(j["value"]), int(h["n_queries"])))
        per_h.append(eh.per_query.set_index("query_id")["value"].rename(str(name)))
        per_j.append(ej.per_query.set_index("query_id")["value"].rename(str(name)))
    frame = pd.DataFrame(rows, columns=["system", "measure", "human", "judge", "n_queries"])
    frame.insert(4, "rank_human", frame["human"].rank(ascending=False, method="min"))
    frame.insert(5, "rank_judge", frame["judge"].rank(ascending=False, method="min"))
    frame = frame.astype({"rank_human": np.int64, "rank_judge": np.int64})
    wide_h = pd.concat(per_h, axis=1).sort_index()
    wide_j = pd.concat(per_j, axis=1).reindex(wide_h.index)
    return frame, wide_h.to_numpy(dtype=np.float64), wide_j.to_numpy(dtype=np.float64)


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
        Between the ``human`` and ``judge`` columns. Its interval: :func:`system_tau_interval`.
    """
    frame, _, _ = _system_values(human, judge, runs, measure)
    return frame, kendall_tau(frame["human"], frame["judge"])


@fill_tau_doc
def system_tau_interval(
    human: Any,
    judge: Any,
    runs: Mapping[str, Any],
    measure: str = "nDCG@10",
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci: float = 0.95,
) -> TauInterval:
    """Kendall's tau of :func:`system_agreement` with a percentile bootstrap interval over queries.

    Each resample draws the queries with replacement, recomputes every system's mean ``measure``
    under human labels and under judge grades over them, and Kendall's tau-b between the two
    (:func:`ragnb.judge.agreement.tau_interval`). The interval says how much the agreement of
    the two rankings depends on which queries happened to be labelled; it does not cover the
    choice of systems.

    Parameters
    ----------
    human, judge : DataFrame or dict
        Qrels over the same pairs (:func:`agreement_pairs`).
    runs : mapping of str to run
    measure : str, default "nDCG@10"
    {{n_boot, seed, ci}}

    Returns
    -------
    TauInterval
        ``tau`` equals :func:`system_agreement`'s.

    Raises
    ------
    InputError
        No run, ``n_boot < 0``, ``ci`` not in (0, 1).

    References
    ----------
    .. [1] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993, Chapter 13.
    """
    check_bootstrap(n_boot, ci, seed)
    _, vh, vj = _system_values(human, judge, runs, measure)
    return tau_interval(vh, vj, n_boot=n_boot, seed=seed, ci=ci)


def _empty_bias() -> pd.DataFrame:
    return judge_bias([], [])


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
        :func:`~ragnb.judge.agreement.confusion_matrix` of ``human`` by ``judge``.
    agreement : DataFrame
        One row per statistic: ``statistic`` (``exact agreement``, ``within one grade``,
        ``kappa``, ``kappa (linear)``, ``kappa (quadratic)``, ``alpha (nominal)``, ``alpha
        (ordinal)``, ``alpha (interval)``, ``pairs``), ``value``, and from :func:`calibrate`
        ``low``, ``high`` (the bootstrap interval, NaN for ``pairs`` and with ``n_boot=0``).
    systems : DataFrame
        :func:`system_agreement`'s frame (empty without runs).
    tau : KendallTau or None
        Kendall's tau-b of the systems under human vs judge labels (None without runs).
    measure : str
    notes : list of str
    bias : DataFrame
        :func:`~ragnb.judge.agreement.judge_bias`: ``human_grade``, ``n``, ``mean_judge``,
        ``bias``, ``share_higher``, ``share_lower`` (empty when not computed).
    tau_interval : TauInterval or None
        Tau with its bootstrap interval over queries (None without runs or with ``n_boot=0``).
    n_boot : int
        Bootstrap resamples (0: no intervals).
    seed : int or None
    ci : float in (0, 1)
        Nominal coverage of the intervals.
    resampled : str
        The bootstrap's unit: ``"queries"``.
    """

    pairs: pd.DataFrame
    labels: list[int]
    confusion: pd.DataFrame
    agreement: pd.DataFrame
    systems: pd.DataFrame
    tau: KendallTau | None
    measure: str
    notes: list[str] = field(default_factory=list)
    bias: pd.DataFrame = field(default_factory=_empty_bias)
    tau_interval: TauInterval | None = None
    n_boot: int = 0
    seed: int | None = 0
    ci: float = 0.95
    resampled: str = "queries"

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

    def alphas(self) -> dict[str, float]:
        """``{"nominal": ..., "ordinal": ..., "interval": ...}`` (NaN when not computed)."""
        a = self.agreement.set_index("statistic")["value"]
        return {lv: float(a.get(f"alpha ({lv})", math.nan)) for lv in _ALPHA_LEVELS}

    def intervals(self) -> pd.DataFrame:
        """The statistics with an interval: ``statistic``, ``value``, ``low``, ``high``."""
        cols = ["statistic", "value", "low", "high"]
        if not {"low", "high"} <= set(self.agreement.columns):
            return pd.DataFrame(columns=cols)
        return self.agreement.loc[self.agreement["statistic"] != "pairs", cols].reset_index(
            drop=True
        )

    def summary(self) -> dict[str, Any]:
        """JSON-safe numbers for manifests."""
        ti = self.tau_interval
        return {
            "pairs": len(self.pairs),
            "labels": self.labels,
            "agreement": {
                str(s): _num(v)
                for s, v in zip(self.agreement["statistic"], self.agreement["value"], strict=True)
            },
            "alpha": {k: _num(v) for k, v in self.alphas().items()},
            "intervals": {
                str(r.statistic): {"low": _num(r.low), "high": _num(r.high)}
                for r in self.intervals().itertuples(index=False)
            },
            "ci": float(self.ci),
            "n_boot": int(self.n_boot),
            "seed": self.seed,
            "resampled": self.resampled,
            "bias": [
                {k: (v if isinstance(v, int) else _num(v)) for k, v in row.items()}
                for row in self.bias.astype(object).to_dict("records")
            ],
            "measure": self.measure,
            "systems": len(self.systems),
            "kendall_tau": None if self.tau is None else _num(self.tau.tau),
            "kendall_p_value": None if self.tau is None else _num(self.tau.p_value),
            "kendall_tau_interval": None
            if ti is None
            else {"low": _num(ti.low), "high": _num(ti.high), "n_boot": ti.n_boot},
            "notes": list(self.notes),
        }

    def export(self, folder: str | Path, *, bias_table: bool = False) -> Path:
        """Write ``pairs.csv``, ``confusion.csv``, ``agreement.csv`` (with the intervals),
        ``systems.csv`` and ``calibration.json`` (the summary, the bias per grade included) into
        ``folder``, atomically; with ``bias_table=True`` also ``bias.csv``. Returns the folder."""
        from ragnb.io.files import write_json, write_table_csv

        folder = Path(folder)
        tables = [
            ("pairs", self.pairs),
            ("confusion", self.confusion),
            ("agreement", self.agreement),
            ("systems", self.systems),
        ]
        if bias_table:
            tables.append(("bias", self.bias))
        for stem, frame in tables:
            write_table_csv(frame, folder / f"{stem}.csv")
        write_json(self.summary(), folder / "calibration.json")
        return folder


_ALPHA_LEVELS = ("nominal", "ordinal", "interval")


def _num(v: Any) -> float | None:
    if v is None:
        return None
    f = float(v)
    return None if math.isnan(f) else f


def calibrate(
    human: Any,
    judge: Any,
    runs: Mapping[str, Any] | None = None,
    *,
    measure: str = "nDCG@10",
    labels: Sequence[int] | None = None,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci: float = 0.95,
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
    n_boot : int >= 0, default 1000
        Bootstrap resamples of the queries for the intervals of every agreement statistic and of
        Kendall's tau (0: no intervals, faster).
    seed : int or None, default 0
        Seed of the resampling: the same inputs give the same intervals.
    ci : float in (0, 1), default 0.95
        Nominal coverage of the percentile intervals.

    Returns
    -------
    Calibration
        Everything is computed on the pairs both labelled (:func:`agreement_pairs`); the systems'
        measures too, so a system is never rewarded by the judge for documents no human saw.
        The intervals resample queries with all their pairs
        (:func:`~ragnb.judge.agreement.agreement_intervals` with ``groups`` the query ids;
        :func:`system_tau_interval`).

    Raises
    ------
    InputError
        No pair is labelled by both; ``n_boot < 0``; ``ci`` not in (0, 1).

    References
    ----------
    .. [1] J. Cohen, Psychological Bulletin 70(4), 1968 (weighted kappa).
    .. [2] K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.
    .. [3] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993, Chapter 13.
    """
    check_bootstrap(n_boot, ci, seed)
    pairs = agreement_pairs(human, judge)
    if pairs.empty:
        raise InputError("no (query, document) pair carries both a human label and a judge grade")
    h, j = pairs["human"].to_numpy(), pairs["judge"].to_numpy()
    seen = set(h.tolist()) | set(j.tolist())
    cats = grade_categories(h, j, None if labels is None else sorted(set(map(int, labels)) | seen))
    notes = []
    iv = agreement_intervals(
        h, j, groups=pairs["query_id"], labels=cats, n_boot=n_boot, seed=seed, ci=ci
    )
    agreement = pd.concat(
        [
            iv[["statistic", "value", "low", "high"]],
            pd.DataFrame({"statistic": ["pairs"], "value": [float(len(pairs))]}),
        ],
        ignore_index=True,
    )
    n_queries = int(iv["n_units"].iloc[0])
    if n_boot and n_queries < 10:
        notes.append(
            f"the intervals resample {n_queries} queries: with so few they are rough, and with "
            "one query they collapse to the point estimate"
        )
    systems = pd.DataFrame(
        columns=["system", "measure", "human", "judge", "rank_human", "rank_judge", "n_queries"]
    )
    tau, tau_iv = None, None
    m = str(parse_measure(measure))
    if runs:
        hq = pairs[["query_id", "doc_id", "human"]].rename(columns={"human": "relevance"})
        jq = pairs[["query_id", "doc_id", "judge"]].rename(columns={"judge": "relevance"})
        systems, vh, vj = _system_values(hq, jq, runs, m)
        tau = kendall_tau(systems["human"], systems["judge"])
        if n_boot:
            tau_iv = tau_interval(vh, vj, n_boot=n_boot, seed=seed, ci=ci)
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
        pairs,
        cats,
        confusion_matrix(h, j, labels=cats),
        agreement,
        systems,
        tau,
        m,
        notes,
        bias=judge_bias(h, j),
        tau_interval=tau_iv,
        n_boot=n_boot,
        seed=seed,
        ci=float(ci),
    )
