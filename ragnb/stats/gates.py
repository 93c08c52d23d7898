"""Build gates: fail a CI job when retrieval quality falls under a floor or drops vs a baseline.

Two kinds of gate, checked on the output of :func:`ragnb.evaluation.evaluate.evaluate` (or of
:func:`ragnb.context.ragas.evaluate_samples`):

``fail-under``
    ``MEASURE=MIN``: the measure's mean over the queries must be at least MIN (``nDCG@10=0.60``).
    A mean that is NaN (no query defines the measure) fails.
``no-drop``
    Against a baseline's per-query values: each gated measure is tested with the paired
    randomization test (:func:`ragnb.stats.randomization_test`, two-sided, mean difference as
    the statistic), the p-values of all gated measures are adjusted together (Holm by default,
    :func:`ragnb.stats.holm`), and a measure fails when its drop is both **significant**
    (adjusted p <= alpha) and **larger than** ``max_drop`` (``mean(candidate) - mean(baseline)
    < -max_drop``). A significant gain, or a drop within ``max_drop``, passes. The paired
    bootstrap interval of the difference (:func:`ragnb.stats.paired_bootstrap`) is reported
    beside it. This is :func:`ragnb.stats.compare` with the candidate against the baseline.

A CI script calls :func:`check_gates` and exits with :attr:`GateReport.exit_status`::

    result = evaluate(qrels, run, ["nDCG@10", "R@100"])
    report = check_gates(result, fail_under=["nDCG@10=0.60"], baseline=evaluate(qrels, base, ...))
    print(report.message())
    sys.exit(report.exit_status)

Exit statuses of the command line: 0 every gate passed, :data:`EXIT_GATE_FAILED` (1) a gate
failed, 2 bad input.

References
----------
.. [1] M. D. Smucker, J. Allan, B. Carterette, "A comparison of statistical significance tests
   for information retrieval evaluation", CIKM 2007 (the paired randomization test for IR).
.. [2] S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian Journal
   of Statistics 6(2), 1979.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.stats import Correction, compare, pick_measure

__all__ = [
    "EXIT_GATE_FAILED",
    "GateReport",
    "Threshold",
    "baseline_gates",
    "check_gates",
    "judge_kappa_gates",
    "parse_threshold",
    "threshold_gates",
]

#: Exit status of ``ragnb evaluate`` when a gate fails (2 is bad input, 0 success).
EXIT_GATE_FAILED = 1

GATE_COLUMNS = [
    "gate",
    "measure",
    "value",
    "threshold",
    "baseline",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "p_adjusted",
    "passed",
]


@dataclass(frozen=True)
class Threshold:
    """A ``fail-under`` gate: the mean of ``measure`` must be at least ``minimum``.

    Attributes
    ----------
    measure : str
        As written (canonicalised against the evaluated names by :func:`threshold_gates`).
    minimum : float
        Finite.
    """

    measure: str
    minimum: float

    def __str__(self) -> str:
        return f"{self.measure}={self.minimum:g}"


def parse_threshold(spec: str | Threshold) -> Threshold:
    """Parse ``"MEASURE=MIN"`` (also ``"MEASURE>=MIN"``) into a :class:`Threshold`.

    Parameters
    ----------
    spec : str or Threshold
        E.g. ``"nDCG@10=0.60"``, ``"ndcg_cut_10>=0.6"``, ``"id_based_context_recall=0.9"``. The
        last ``=`` splits the name from the number (``F(alpha=0.5)@10=0.4`` works).

    Returns
    -------
    Threshold

    Raises
    ------
    InputError
        When there is no ``=``, the name is empty, or MIN is not a finite number.

    Examples
    --------
    >>> parse_threshold("F(alpha=0.5)@10 >= 0.4")
    Threshold(measure='F(alpha=0.5)@10', minimum=0.4)
    """
    if isinstance(spec, Threshold):
        return spec
    text = str(spec)
    name, sep, number = text.rpartition("=")
    name = name.strip().removesuffix(">").strip()
    if not sep or not name:
        raise InputError(f"a gate is MEASURE=MIN, e.g. nDCG@10=0.60; got {text!r}")
    try:
        minimum = float(number)
    except ValueError:
        minimum = math.nan
    if not math.isfinite(minimum):
        raise InputError(f"gate {text!r}: the threshold {number.strip()!r} is not a number")
    return Threshold(name, minimum)


def _means(result: Any) -> dict[str, float]:
    if isinstance(result, Mapping):
        return {str(k): float(v) for k, v in result.items()}
    if hasattr(result, "aggregate_to_dict"):
        return dict(result.aggregate_to_dict())
    raise InputError(
        "gates read an EvaluationResult (or ContextEvaluation) or a {measure: mean} dict, got "
        f"{type(result).__name__}"
    )


def threshold_gates(result: Any, thresholds: Iterable[str | Threshold]) -> pd.DataFrame:
    """Check ``fail-under`` gates against the means of an evaluation.

    Parameters
    ----------
    result : EvaluationResult, ContextEvaluation or dict of str to float
        The evaluation (its ``aggregate_to_dict()``) or ``{measure: mean}``.
    thresholds : iterable of str or Threshold
        ``"MEASURE=MIN"`` (:func:`parse_threshold`); aliases resolve (``ndcg_cut_10`` gates
        ``nDCG@10``).

    Returns
    -------
    DataFrame
        One row per gate, columns :data:`GATE_COLUMNS`: ``gate`` = ``"fail-under"``, ``value``
        the mean, ``threshold`` MIN, ``passed`` = ``value >= threshold`` (False for NaN); the
        baseline columns NaN.

    Raises
    ------
    InputError
        On a malformed gate or one naming a measure that was not evaluated.

    Examples
    --------
    >>> threshold_gates({"nDCG@10": 0.62, "R@100": 0.88}, ["ndcg_cut_10=0.6", "R@100=0.9"])[
    ...     ["measure", "value", "threshold", "passed"]].values.tolist()
    [['nDCG@10', 0.62, 0.6, True], ['R@100', 0.88, 0.9, False]]
    """
    means = _means(result)
    names = list(means)
    rows = []
    for spec in thresholds:
        t = parse_threshold(spec)
        name = pick_measure(names, t.measure, "the evaluation")
        value = means[name]
        rows.append(
            {
                "gate": "fail-under",
                "measure": name,
                "value": value,
                "threshold": t.minimum,
                "passed": bool(value >= t.minimum),  # NaN >= x is False
            }
        )
    return _table(rows)


def baseline_gates(
    result: Any,
    baseline: Any,
    measures: Iterable[str] | None = None,
    *,
    alpha: float = 0.05,
    max_drop: float = 0.0,
    correction: Correction = "holm",
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Check ``no-drop`` gates: no significant drop of any gated measure vs a baseline.

    Parameters
    ----------
    result, baseline : EvaluationResult, ContextEvaluation or per-query DataFrame
        Per-query values of the candidate and of the baseline on the same queries (anything
        :func:`ragnb.stats.compare` accepts as a system: a long ``query_id, measure, value``
        frame, a wide frame, an EvaluationResult).
    measures : list of str, optional
        The gated measures (one family for the correction); default every measure both hold.
    alpha : float in (0, 1), default 0.05
        Significance level of the adjusted p-values.
    max_drop : float >= 0, default 0.0
        A significant drop fails only when ``mean(result) - mean(baseline) < -max_drop``, in the
        measure's units.
    correction : {"holm", "bonferroni", "bh", "none"}, default "holm"
        Across the gated measures.
    n_resamples : int, default 10000
        Of the randomization test (exact when ``2**n_queries <= n_resamples``) and bootstrap.
    seed : int or None, default 0

    Returns
    -------
    DataFrame
        One row per gated measure, columns :data:`GATE_COLUMNS`: ``gate`` = ``"no-drop"``,
        ``value`` and ``baseline`` the means over the paired queries, ``threshold`` =
        ``baseline - max_drop``, ``difference`` = ``value - baseline``, ``ci_low``/``ci_high``
        its paired bootstrap interval (95%), ``p_value`` (randomization), ``p_adjusted``, and
        ``passed`` = not (``p_adjusted <= alpha`` and ``difference < -max_drop``).

    Raises
    ------
    InputError
        When the two hold different queries (naming them), a measure is missing, or a parameter
        is out of range.

    References
    ----------
    Smucker, Allan and Carterette (2007); Holm (1979). See the module docstring.
    """
    if isinstance(max_drop, bool) or not isinstance(max_drop, int | float) or not max_drop >= 0:
        raise InputError(f"max_drop must be a number >= 0, got {max_drop!r}")
    if not math.isfinite(max_drop):
        raise InputError(f"max_drop must be finite, got {max_drop!r}")
    res = compare(
        {"candidate": _per_query(result), "baseline": _per_query(baseline)},
        None if measures is None else list(measures),
        baseline="baseline",
        n_resamples=n_resamples,
        alpha=alpha,
        correction=correction,
        seed=seed,
    )
    pairs = res.pairs
    drop = pairs["difference"].to_numpy(dtype=np.float64) < -max_drop
    significant = pairs["significant"].to_numpy(dtype=bool)
    out = pd.DataFrame(
        {
            "gate": "no-drop",
            "measure": pairs["measure"].astype(str),
            "value": pairs["mean_a"],
            "threshold": pairs["mean_b"] - max_drop,
            "baseline": pairs["mean_b"],
            "difference": pairs["difference"],
            "ci_low": pairs["ci_low"],
            "ci_high": pairs["ci_high"],
            "p_value": pairs["p_value"],
            "p_adjusted": pairs["p_adjusted"],
            "passed": ~(significant & drop),
        }
    )
    return _table(out.to_dict(orient="records"))


def _per_query(values: Any) -> Any:
    """An evaluation's long per-query frame (``EvaluationResult`` or ``ContextEvaluation``)."""
    per_query = getattr(values, "per_query", None)
    return per_query if isinstance(per_query, pd.DataFrame) else values


def _table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=GATE_COLUMNS)
    for col in GATE_COLUMNS[2:-1]:
        frame[col] = frame[col].astype("float64")
    frame["passed"] = frame["passed"].astype(bool)
    return frame


@dataclass(frozen=True, eq=False)
class GateReport:
    """The outcome of :func:`check_gates`.

    Attributes
    ----------
    table : DataFrame
        Every gate checked, ``fail-under`` rows first, columns :data:`GATE_COLUMNS`.
    settings : dict
        ``alpha``, ``max_drop``, ``correction``, ``n_resamples``, ``seed`` (baseline gates).
    """

    table: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when every gate passed (also when there are none)."""
        return bool(self.table["passed"].all())

    @property
    def failures(self) -> pd.DataFrame:
        """The rows of :attr:`table` that failed."""
        return self.table[~self.table["passed"]].reset_index(drop=True)

    @property
    def exit_status(self) -> int:
        """0 when every gate passed, else :data:`EXIT_GATE_FAILED`."""
        return 0 if self.passed else EXIT_GATE_FAILED

    def message(self, digits: int = 4) -> str:
        """One line per failed gate (measure, value, threshold), or a line saying all passed.

        Examples
        --------
        >>> check_gates({"nDCG@10": 0.5}, fail_under=["nDCG@10=0.6"]).message()
        'gate failed: nDCG@10 = 0.5000 < 0.6000 (fail-under)'
        """
        if self.passed:
            return f"gates: all {len(self.table)} passed"
        lines = []
        for row in self.failures.itertuples(index=False):
            if row.gate == "fail-under":
                lines.append(
                    f"gate failed: {row.measure} = {row.value:.{digits}f} < "
                    f"{row.threshold:.{digits}f} (fail-under)"
                )
            elif row.gate in _KAPPA_GATES:
                lines.append(_kappa_message(row, self.settings, digits))
            else:
                correction = str(self.settings.get("correction", "holm")).capitalize()
                lines.append(
                    f"gate failed: {row.measure} = {row.value:.{digits}f}, "
                    f"{-row.difference:.{digits}f} below the baseline's "
                    f"{row.baseline:.{digits}f} (95% CI of the difference "
                    f"[{row.ci_low:.{digits}f}, {row.ci_high:.{digits}f}]; p = {row.p_value:.2g}, "
                    f"{correction}-adjusted {row.p_adjusted:.2g} <= alpha "
                    f"{self.settings.get('alpha')}) (no-drop)"
                )
        return "\n".join(lines)


#: The gates of :func:`judge_kappa_gates`.
_KAPPA_GATES = ("judge-kappa-min", "judge-calibration")


def _kappa_message(row: Any, settings: Mapping[str, Any], d: int) -> str:
    """The line of a failed judge-kappa gate: the judge, its kappa with the interval, the rule."""
    ci = int(round(100 * float(settings.get("ci", 0.95))))
    said = (
        f"gate failed: {row.measure} = {row.value:.{d}f} ({ci}% CI "
        f"[{row.ci_low:.{d}f}, {row.ci_high:.{d}f}])"
    )
    if row.gate == "judge-kappa-min":
        return f"{said} < the minimum {row.threshold:.{d}f} (judge-kappa-min)"
    return (
        f"{said} is below the calibration the golden set was accepted with: "
        f"{row.baseline:.{d}f}, interval low end {row.threshold:.{d}f} "
        f"({settings.get('accepted_source', 'accepted calibration')}) (judge-calibration)"
    )


def judge_kappa_gates(
    kappa: float,
    low: float,
    high: float,
    *,
    judge: str,
    statistic: str = "kappa",
    minimum: float | None = None,
    accepted: Mapping[str, Any] | None = None,
    ci: float = 0.95,
) -> GateReport:
    """Gate an LLM judge on its agreement with human labels.

    Two gates, each checked when given:

    ``judge-kappa-min``
        ``kappa >= minimum`` (a NaN kappa fails).
    ``judge-calibration``
        ``kappa >= accepted["low"]``: the kappa must not fall below the lower end of the
        interval of the calibration the judge was accepted with. A kappa inside that interval
        is within the sampling noise of the accepted one and passes; the same judge on the same
        labels passes by construction.

    Parameters
    ----------
    kappa, low, high : float
        The judge's kappa against the human labels and its interval (Cohen's kappa in [-1, 1]).
    judge : str
        Its identity (``judge_id``), named in the table and the message.
    statistic : str, default "kappa"
        Which kappa (``"kappa"``, ``"kappa (linear)"``, ``"kappa (quadratic)"``).
    minimum : float, optional
        Finite, in [-1, 1].
    accepted : mapping, optional
        ``value``, ``low`` (finite), ``high`` and optionally ``source`` (where it is stored).
    ci : float, default 0.95
        Coverage of the intervals, for the message.

    Returns
    -------
    GateReport
        One row per gate checked (columns :data:`GATE_COLUMNS`: ``gate``, ``measure`` =
        ``"<statistic> of <judge>"``, ``value`` the kappa, ``threshold`` the minimum or the
        accepted low end, ``baseline`` the accepted kappa, ``ci_low``, ``ci_high`` the kappa's
        interval, ``passed``); ``settings`` holds ``judge``, ``statistic``, ``ci`` and
        ``accepted_source``.

    Raises
    ------
    InputError
        Neither gate given, ``minimum`` outside [-1, 1], ``accepted`` without a finite ``low``.

    References
    ----------
    .. [1] J. Cohen, Educational and Psychological Measurement 20(1), 1960.
    .. [2] J. R. Landis and G. G. Koch, Biometrics 33(1), 1977 (0.41-0.60 "moderate").

    Examples
    --------
    >>> r = judge_kappa_gates(0.31, 0.22, 0.40, judge="gpt-x", minimum=0.4)
    >>> r.exit_status
    1
    >>> print(r.message(digits=2))
    gate failed: kappa of gpt-x = 0.31 (95% CI [0.22, 0.40]) < the minimum 0.40 (judge-kappa-min)
    """
    if minimum is None and accepted is None:
        raise InputError("a judge-kappa gate needs a minimum kappa or an accepted calibration")
    rows = []
    base = {"measure": f"{statistic} of {judge}", "value": kappa, "ci_low": low, "ci_high": high}
    if minimum is not None:
        m = float(minimum)
        if not -1.0 <= m <= 1.0:
            raise InputError(f"the minimum kappa must be in [-1, 1], got {minimum!r}")
        rows.append({**base, "gate": "judge-kappa-min", "threshold": m, "passed": kappa >= m})
    source = None
    if accepted is not None:
        floor = float(accepted.get("low", math.nan))
        if not math.isfinite(floor):
            raise InputError(
                f"the accepted calibration ({accepted.get('source', 'given')}) has no interval: "
                "re-run its calibration with n_boot > 0"
            )
        source = accepted.get("source")
        rows.append(
            {
                **base,
                "gate": "judge-calibration",
                "threshold": floor,
                "baseline": float(accepted.get("value", math.nan)),
                "difference": kappa - float(accepted.get("value", math.nan)),
                "passed": kappa >= floor,
            }
        )
    settings = {"judge": judge, "statistic": statistic, "ci": ci, "accepted_source": source}
    return GateReport(table=_table(rows), settings=settings)


def check_gates(
    result: Any,
    fail_under: Iterable[str | Threshold] = (),
    *,
    baseline: Any = None,
    measures: Iterable[str] | None = None,
    alpha: float = 0.05,
    max_drop: float = 0.0,
    correction: Correction = "holm",
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> GateReport:
    """Check every gate of a build: the ``fail-under`` floors and, given a baseline, no drop.

    Parameters
    ----------
    result : EvaluationResult, ContextEvaluation or dict
        The candidate's evaluation (a ``{measure: mean}`` dict serves ``fail-under`` only).
    fail_under : iterable of str or Threshold, optional
        ``"MEASURE=MIN"`` floors (:func:`threshold_gates`).
    baseline : EvaluationResult, ContextEvaluation or per-query DataFrame, optional
        The baseline's per-query values; when given, :func:`baseline_gates` runs on
        ``measures``.
    measures, alpha, max_drop, correction, n_resamples, seed
        As for :func:`baseline_gates`.

    Returns
    -------
    GateReport
        ``table``, ``passed``, ``failures``, ``exit_status``, ``message()``.

    Raises
    ------
    InputError
        As :func:`threshold_gates` and :func:`baseline_gates`.

    Examples
    --------
    >>> report = check_gates({"nDCG@10": 0.62, "R@100": 0.88}, ["nDCG@10=0.6", "R@100=0.9"])
    >>> report.passed, report.exit_status, report.failures["measure"].tolist()
    (False, 1, ['R@100'])
    """
    parts = [threshold_gates(result, fail_under)]
    settings: dict[str, Any] = {}
    if baseline is not None:
        settings = {
            "alpha": alpha,
            "max_drop": max_drop,
            "correction": correction,
            "n_resamples": n_resamples,
            "seed": seed,
        }
        parts.append(baseline_gates(result, baseline, measures, **settings))
    kept = [p for p in parts if len(p)] or parts[:1]
    return GateReport(table=pd.concat(kept, ignore_index=True), settings=settings)
