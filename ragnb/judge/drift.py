"""Judge drift: two judges against the same human labels.

A new model or prompt version changes a judge's grades; :class:`JudgeDrift` says by how much, on
the same human-labelled pairs and with the same statistics, for the **reference** judge (the one
the labels were calibrated with) and the **candidate** (the re-grading judge):

- Cohen's kappa, unweighted and weighted, with bootstrap intervals that resample queries
  (:func:`drift_agreement`, on :func:`ragnb.judge.agreement.agreement_intervals`);
- the bias per human grade (:func:`ragnb.judge.agreement.judge_bias`);
- the PPI++ estimates of measures under each judge (computed by the caller, e.g.
  :func:`ragnb.studies.golden.judge_checks.judge_drift` for a golden set);
- what the candidate re-graded (:func:`regraded_row`: answers from the cache, calls sent).

The gate (:func:`drift_gates`) fails when the candidate's kappa falls below a minimum, or below
the lower end of the interval of the calibration the reference was accepted with.

References
----------
.. [1] J. Cohen, "A coefficient of agreement for nominal scales", Educational and Psychological
   Measurement 20(1), 1960; J. Cohen, "Weighted kappa", Psychological Bulletin 70(4), 1968.
.. [2] J. R. Landis and G. G. Koch, "The measurement of observer agreement for categorical
   data", Biometrics 33(1), 1977 (0.41-0.60 "moderate": the usual minimum of 0.4).
.. [3] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient Prediction-Powered
   Inference", arXiv:2311.01453, 2023.
.. [4] P. Thomas, S. Spielman, N. Craswell and B. Mitra, "Large language models can accurately
   predict searcher preferences", SIGIR 2024 (prompt variants change agreement with assessors).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.judge.agreement import agreement_intervals, judge_bias
from ragnb.stats.gates import GateReport, judge_kappa_gates

__all__ = [
    "DRIFT_ROLES",
    "KAPPA_STATISTICS",
    "JudgeDrift",
    "drift_agreement",
    "drift_gates",
    "kappa_statistic",
    "regraded_row",
]

#: The kappa each ``weights`` names, as :func:`~ragnb.judge.agreement.agreement_intervals`
#: labels its rows.
KAPPA_STATISTICS = {"none": "kappa", "linear": "kappa (linear)", "quadratic": "kappa (quadratic)"}

#: The two judges of a drift check, in the order of its tables.
DRIFT_ROLES = ("reference", "candidate")


@dataclass(frozen=True, eq=False)
class JudgeDrift:
    """Two judges against the same human labels, a value
    (:func:`ragnb.studies.golden.judge_checks.judge_drift` builds it for a golden set).

    Attributes
    ----------
    reference_id, candidate_id : str
        The golden set's judge and the re-grading judge (``judge_id``).
    pairs : DataFrame
        The human-labelled pairs: ``query_id``, ``doc_id``, ``human`` (int), ``reference``
        (int, the stored grade), ``candidate`` (Int64, <NA> when its answer was invalid).
    agreement : DataFrame
        ``judge`` ("reference" or "candidate"), ``statistic``, ``value``, ``low``, ``high``
        (the interval, NaN without resamples), ``pairs`` (int).
    bias : DataFrame
        ``judge``, then :func:`~ragnb.judge.agreement.judge_bias`'s columns (``bias`` = mean
        judge grade minus the human grade, grade units, per human grade).
    ppi : DataFrame
        ``judge``, then the PPI++ estimates' columns (``system``, ``measure``, ``ppi``, ...:
        :func:`ragnb.ppi.ppi_system_estimates`); empty when not estimated (see ``notes``).
    regraded : DataFrame
        ``set`` ("human-labelled sample" or "golden pairs"), ``pairs``, ``from_cache``,
        ``called`` (pairs sent to the candidate's model), ``invalid``.
    settings : dict
        ``n_boot``, ``seed``, ``ci``, ``labels`` (the grade scale), ``human_source``.
    notes : list of str
    """

    reference_id: str
    candidate_id: str
    pairs: pd.DataFrame
    agreement: pd.DataFrame
    bias: pd.DataFrame
    ppi: pd.DataFrame
    regraded: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def kappa(self, judge: str = "candidate", weights: str = "none") -> tuple[float, float, float]:
        """``(value, low, high)`` of a judge's kappa against the humans.

        Parameters
        ----------
        judge : {"candidate", "reference"}
        weights : {"none", "linear", "quadratic"}
            Cohen's kappa, or the weighted kappa with linear or quadratic disagreement weights.

        Raises
        ------
        InputError
            An unknown ``judge`` or ``weights``.
        """
        if judge not in DRIFT_ROLES:
            raise InputError(f"judge is 'candidate' or 'reference', got {judge!r}")
        stat = kappa_statistic(weights)
        row = self.agreement[
            (self.agreement["judge"] == judge) & (self.agreement["statistic"] == stat)
        ]
        if row.empty:
            return math.nan, math.nan, math.nan
        r = row.iloc[0]
        return float(r["value"]), float(r["low"]), float(r["high"])

    def kappa_table(self) -> pd.DataFrame:
        """The kappas side by side: ``statistic``, ``reference``, ``candidate``, ``difference``
        (candidate minus reference), each judge's interval in ``*_low``, ``*_high``."""
        stats = list(KAPPA_STATISTICS.values())
        a = self.agreement[self.agreement["statistic"].isin(stats)]
        wide = a.pivot(index="statistic", columns="judge", values=["value", "low", "high"])
        rows = []
        for s in stats:
            if s not in wide.index:
                continue
            row: dict[str, Any] = {"statistic": s}
            for role in DRIFT_ROLES:
                row[role] = float(wide.loc[s, ("value", role)])
                row[f"{role}_low"] = float(wide.loc[s, ("low", role)])
                row[f"{role}_high"] = float(wide.loc[s, ("high", role)])
            row["difference"] = row["candidate"] - row["reference"]
            rows.append(row)
        return pd.DataFrame(rows)

    def ppi_table(self) -> pd.DataFrame:
        """The PPI++ estimate of each (system, measure) under both judges: ``system``,
        ``measure``, ``reference``, ``candidate``, ``difference``; empty when not estimated."""
        if self.ppi.empty or "ppi" not in self.ppi.columns:
            return pd.DataFrame(columns=["system", "measure", *DRIFT_ROLES, "difference"])
        wide = self.ppi.pivot_table(
            index=["system", "measure"], columns="judge", values="ppi", aggfunc="first"
        ).reset_index()
        wide.columns.name = None
        for role in DRIFT_ROLES:
            if role not in wide.columns:
                wide[role] = np.nan
        wide["difference"] = wide["candidate"] - wide["reference"]
        return wide[["system", "measure", *DRIFT_ROLES, "difference"]]

    def banner(self) -> str:
        """Markdown: both judges' kappa with its interval, what the candidate cost in calls."""
        ref, cand = self.kappa("reference"), self.kappa("candidate")
        r = self.regraded.iloc[-1] if len(self.regraded) else None  # the largest set graded
        graded, called, cached = (
            (0, 0, 0) if r is None else (r["pairs"], r["called"], r["from_cache"])
        )
        ci = int(round(100 * float(self.settings.get("ci", 0.95))))
        lines = [
            f"**Judge drift** on {_pairs(len(self.pairs))} "
            f"({self.settings.get('human_source', 'human labels')}):",
            f"- reference `{self.reference_id}` (the golden set's judge): Cohen's kappa "
            f"{_iv(ref)} ({ci}% CI)",
            f"- candidate `{self.candidate_id}`: Cohen's kappa {_iv(cand)}"
            + ("" if math.isnan(cand[0] - ref[0]) else f"; difference {cand[0] - ref[0]:+.3f}"),
            f"- re-graded {graded} pairs: {cached} from the cache, {called} sent to the judge",
        ]
        return "\n".join(lines + [f"- {n}" for n in self.notes])

    def tables(self) -> dict[str, pd.DataFrame]:
        """``kappa`` (:meth:`kappa_table`), ``agreement``, ``bias``, ``ppi`` (:meth:`ppi_table`),
        ``regraded``, ``pairs``."""
        return {
            "kappa": self.kappa_table(),
            "agreement": self.agreement,
            "bias": self.bias,
            "ppi": self.ppi_table(),
            "regraded": self.regraded,
            "pairs": self.pairs,
        }

    def summary(self) -> dict[str, Any]:
        """JSON-safe: both judges, their kappas with intervals, what was re-graded, settings."""
        kappas = {
            role: {
                w: dict(
                    zip(("value", "low", "high"), _json_floats(self.kappa(role, w)), strict=True)
                )
                for w in KAPPA_STATISTICS
            }
            for role in DRIFT_ROLES
        }
        return {
            "reference": self.reference_id,
            "candidate": self.candidate_id,
            "pairs": len(self.pairs),
            "kappa": kappas,
            "regraded": self.regraded.to_dict("records"),
            "settings": dict(self.settings),
            "notes": list(self.notes),
        }

    def export(self, folder: str | Path) -> Path:
        """Write every table of :meth:`tables` as ``<name>.csv`` and :meth:`summary` as
        ``drift.json`` into ``folder`` (created), atomically. Returns the folder."""
        from ragnb.io.files import write_json, write_table_csv

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, table in self.tables().items():
            write_table_csv(table, folder / f"{name}.csv")
        write_json(self.summary(), folder / "drift.json")
        return folder


def _json_floats(values: tuple[float, ...]) -> list[float | None]:
    return [None if math.isnan(v) else float(v) for v in values]


def kappa_statistic(weights: str) -> str:
    """The name of the kappa ``weights`` gives (:data:`KAPPA_STATISTICS`).

    Raises
    ------
    InputError
        An unknown ``weights``.
    """
    if weights not in KAPPA_STATISTICS:
        raise InputError(f"weights is one of {sorted(KAPPA_STATISTICS)}, got {weights!r}")
    return KAPPA_STATISTICS[weights]


def _iv(k: tuple[float, float, float]) -> str:
    if math.isnan(k[0]):
        return "undefined (too few pairs or one grade only)"
    if math.isnan(k[1]):
        return f"{k[0]:.3f}"
    return f"{k[0]:.3f} [{k[1]:.3f}, {k[2]:.3f}]"


def _pairs(n: int) -> str:
    return f"{n} human-labelled pair" + ("" if n == 1 else "s")


def regraded_row(name: str, g: pd.DataFrame) -> dict[str, Any]:
    """One row of :attr:`JudgeDrift.regraded`: what a judge re-graded of a set of pairs.

    Parameters
    ----------
    name : str
        The set (``"human-labelled sample"``, ``"golden pairs"``).
    g : DataFrame
        The re-graded pairs with ``cached`` and ``valid`` (bool).

    Returns
    -------
    dict
        ``set``, ``pairs``, ``from_cache``, ``called`` (pairs sent to the model), ``invalid``.
    """
    cached = int(g["cached"].sum())
    return {
        "set": name,
        "pairs": len(g),
        "from_cache": cached,
        "called": len(g) - cached,
        "invalid": int((~g["valid"]).sum()),
    }


def drift_agreement(
    pairs: pd.DataFrame,
    labels: list[int] | None = None,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each judge's agreement (with intervals) and bias per grade against the humans.

    Parameters
    ----------
    pairs : DataFrame
        ``query_id``, ``doc_id``, ``human`` (int), ``reference`` (int) and ``candidate`` (Int64,
        <NA> where its answer was invalid: left out of its rows).
    labels : list of int, optional
        The grade scale (the grades that occur are added).
    n_boot : int >= 0, default 1000
        Bootstrap resamples of the queries (0: no intervals).
    seed : int or None, default 0
    ci : float in (0, 1), default 0.95

    Returns
    -------
    agreement : DataFrame
        ``judge`` (:data:`DRIFT_ROLES`), ``statistic``, ``value``, ``low``, ``high``, ``pairs``.
    bias : DataFrame
        ``judge``, then :func:`~ragnb.judge.agreement.judge_bias`'s columns.
    """
    agree, bias = [], []
    for role in DRIFT_ROLES:
        ok = pairs[pairs[role].notna()]
        if ok.empty:
            continue
        h, j = ok["human"].to_numpy(np.int64), ok[role].to_numpy(np.int64)
        cats = sorted(set(labels or []) | set(h.tolist()) | set(j.tolist()))
        iv = agreement_intervals(
            h, j, groups=ok["query_id"], labels=cats, n_boot=n_boot, seed=seed, ci=ci
        )
        agree.append(iv[["statistic", "value", "low", "high"]].assign(judge=role, pairs=len(ok)))
        bias.append(judge_bias(h, j).assign(judge=role))
    cols = ["judge", "statistic", "value", "low", "high", "pairs"]
    a = pd.concat(agree, ignore_index=True)[cols]
    b = pd.concat(bias, ignore_index=True)
    return a, b[["judge", *[c for c in b.columns if c != "judge"]]]


def drift_gates(
    drift: JudgeDrift,
    *,
    minimum: float | None = None,
    accepted: Mapping[str, Any] | None = None,
    weights: str = "none",
) -> GateReport:
    """The drift gate: the candidate's kappa against the humans must reach ``minimum`` and must
    not fall below the calibration the golden set was accepted with
    (:func:`ragnb.stats.gates.judge_kappa_gates`).

    Parameters
    ----------
    drift : JudgeDrift
    minimum : float, optional
        E.g. 0.4 (Landis and Koch's "moderate" agreement starts at 0.41).
    accepted : mapping, optional
        ``value``, ``low``, ``high`` and ``source`` of the accepted calibration
        (:func:`ragnb.studies.golden.judge_checks.accepted_calibration`).
    weights : {"none", "linear", "quadratic"}, default "none"
        Which kappa is gated.

    Returns
    -------
    GateReport
        ``exit_status`` 0 when every gate passed, else 1; ``message()`` names the judge and its
        kappa with the interval.
    """
    stat = kappa_statistic(weights)
    value, low, high = drift.kappa("candidate", weights)
    return judge_kappa_gates(
        value,
        low,
        high,
        judge=drift.candidate_id,
        statistic=stat,
        minimum=minimum,
        accepted=accepted,
    )
