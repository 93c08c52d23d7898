"""Judge drift: re-grade a golden set's human-labelled sample with another judge or prompt and
compare both judges against the humans.

A golden set is accepted with a judge calibrated against human labels
(:func:`~ragnb.studies.golden.evaluation.calibrate_judge`). A new model or prompt version changes
the grades; :func:`judge_drift` says by how much, on the same pairs and with the same statistics:

- the **reference** judge is the golden set's own: its grades are the stored judgements, so its
  agreement equals the calibration the golden set was accepted with (same pairs, same bootstrap);
- the **candidate** judge re-grades the human-labelled pairs (and, for the PPI estimates, every
  judged pair of the golden set) through its cache, so pairs it has graded before cost nothing;
  :attr:`JudgeDrift.regraded` says how many answers came from the cache;
- both are compared with the humans by Cohen's kappa, unweighted and weighted, with bootstrap
  intervals that resample queries (:func:`ragnb.judge.agreement.agreement_intervals`), by the
  bias per human grade (:func:`ragnb.judge.agreement.judge_bias`) and by the PPI++ estimates of
  the golden set's measures under each judge (:func:`ragnb.studies.golden.human.ppi_estimates`).

The gate (``ragnb golden audit --judge-kappa-min 0.4``; :func:`drift_gates`) fails when the
candidate's kappa falls below a minimum, or below the lower end of the interval of the
calibration the golden set was accepted with (``calibration/calibration.json`` in its run
folder, read by :func:`accepted_calibration`).

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

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.judge.agreement import agreement_intervals, judge_bias
from ragnb.judge.base import Judge
from ragnb.stats.gates import GateReport, judge_kappa_gates
from ragnb.studies.golden.evaluation import human_labels_for, ppi_labels_for
from ragnb.studies.golden.goldenset import GoldenSet
from ragnb.studies.golden.human import HumanLabels, ppi_estimates
from ragnb.studies.golden.stages import grading_items, passages_by_id

__all__ = [
    "DRIFT_STAGE",
    "KAPPA_STATISTICS",
    "JudgeDrift",
    "accepted_calibration",
    "drift_gates",
    "judge_drift",
    "regrade",
]

#: Ledger label of the candidate judge's calls.
DRIFT_STAGE = "drift"

#: The kappa each ``weights`` names, as :func:`~ragnb.judge.agreement.agreement_intervals`
#: labels its rows.
KAPPA_STATISTICS = {"none": "kappa", "linear": "kappa (linear)", "quadratic": "kappa (quadratic)"}

_ROLES = ("reference", "candidate")


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


@dataclass(frozen=True, eq=False)
class JudgeDrift:
    """Two judges against the same human labels (:func:`judge_drift`), a value.

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
        ``judge``, then :func:`~ragnb.studies.golden.human.ppi_estimates`'s columns; empty when not
        estimated (see ``notes``).
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
        if judge not in _ROLES:
            raise InputError(f"judge is 'candidate' or 'reference', got {judge!r}")
        stat = _statistic(weights)
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
            for role in _ROLES:
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
            return pd.DataFrame(columns=["system", "measure", *_ROLES, "difference"])
        wide = self.ppi.pivot_table(
            index=["system", "measure"], columns="judge", values="ppi", aggfunc="first"
        ).reset_index()
        wide.columns.name = None
        for role in _ROLES:
            if role not in wide.columns:
                wide[role] = np.nan
        wide["difference"] = wide["candidate"] - wide["reference"]
        return wide[["system", "measure", *_ROLES, "difference"]]

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
            for role in _ROLES
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


def _statistic(weights: str) -> str:
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


def _regraded_row(name: str, g: pd.DataFrame) -> dict[str, Any]:
    cached = int(g["cached"].sum())
    return {
        "set": name,
        "pairs": len(g),
        "from_cache": cached,
        "called": len(g) - cached,
        "invalid": int((~g["valid"]).sum()),
    }


def _agreement(
    pairs: pd.DataFrame, labels: list[int] | None, n_boot: int, seed: int | None, ci: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each judge's agreement (with intervals) and bias per grade against the humans."""
    agree, bias = [], []
    for role in _ROLES:
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
    rows = [_regraded_row("human-labelled sample", on_sample.reset_index())]
    if ppi:
        rows.append(_regraded_row("golden pairs", regraded))
    notes = list(human.notes)
    invalid = int(pairs["candidate"].isna().sum())
    if invalid:
        notes.append(f"{invalid} invalid answers of the candidate left out of its agreement")
    labels = None if scale is None else list(range(scale[0], scale[1] + 1))
    agreement, bias = _agreement(pairs, labels, n_boot, seed, ci)
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
    stat = _statistic(weights)
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
        (:func:`accepted_calibration`).
    weights : {"none", "linear", "quadratic"}, default "none"
        Which kappa is gated.

    Returns
    -------
    GateReport
        ``exit_status`` 0 when every gate passed, else 1; ``message()`` names the judge and its
        kappa with the interval.
    """
    stat = _statistic(weights)
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
