"""The comparison table: several systems on several measures, like ranx's ``compare``."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.evaluate import EvaluationResult, evaluate
from ragnb.measures import Measure
from ragnb.stats.bootstrap import CIMethod, bootstrap_result
from ragnb.stats.corrections import Correction, adjust_p_values
from ragnb.stats.paired import (
    align_pair,
    check_fraction,
    check_resamples,
    per_query_series,
    pick_measure,
)
from ragnb.stats.randomization import randomization_result

if TYPE_CHECKING:
    import altair as alt


# ranx's superscripts (ranx/data_structures/report.py); Unicode has no superscript q
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_SUPERSCRIPTS = "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ۹ʳˢᵗᵘᵛʷˣʸᶻ"


@dataclass(frozen=True, eq=False)
class ComparisonResult:
    """The outcome of :func:`compare`.

    Attributes
    ----------
    systems : tuple of str
        In input order; letters ``a, b, ...`` in :meth:`table` follow it.
    measures : tuple of str
    baseline : str or None
        The system every other one was compared with, or None for all pairs.
    means : DataFrame
        One row per system x measure: ``system``, ``measure``, ``value`` (mean over the queries
        where the system's value is defined), ``n_valid``, ``n_queries``.
    pairs : DataFrame
        One row per compared pair x measure (measure-major): ``measure``, ``system_a``,
        ``system_b``, ``pair`` (``"a − b"``), ``mean_a``, ``mean_b`` (over the queries where
        both are defined), ``difference`` (``mean_a - mean_b``), ``ci_low``, ``ci_high``
        (bootstrap interval of the difference), ``p_value`` (randomization test),
        ``p_adjusted`` (across every row of this frame), ``significant`` (bool,
        ``p_adjusted <= alpha``), ``n_queries``, ``n_dropped`` (int).
    settings : dict
        ``n_resamples``, ``confidence``, ``alpha``, ``correction``, ``ci_method``, ``seed``,
        ``n_comparisons``.
    """

    systems: tuple[str, ...]
    measures: tuple[str, ...]
    baseline: str | None
    means: pd.DataFrame
    pairs: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def means_wide(self) -> pd.DataFrame:
        """Means, index ``system`` (input order), one column per measure."""
        wide = self.means.pivot(index="system", columns="measure", values="value")
        wide = wide.loc[list(self.systems), list(self.measures)]
        wide.columns.name = None
        return wide

    def table(self, digits: int = 4, markers: bool = True) -> pd.DataFrame:
        """A display table like ranx's ``compare`` report.

        Each cell is a system's mean, followed by the superscript letters of the systems it is
        significantly better than (adjusted p <= alpha and a positive difference) among the
        pairs compared.

        Parameters
        ----------
        digits : int, default 4
        markers : bool, default True
            False leaves the superscripts out.

        Returns
        -------
        DataFrame
            Columns ``#`` (letter), ``system``, then one str column per measure.

        Raises
        ------
        InputError
            If ``markers`` is set and there are more than 26 systems.
        """
        if markers and len(self.systems) > len(_LETTERS):
            raise InputError(f"at most {len(_LETTERS)} systems can be lettered")
        letter = {s: i for i, s in enumerate(self.systems)}
        better: dict[tuple[str, str], list[int]] = {}
        sig = self.pairs[self.pairs["significant"]]
        for row in sig.itertuples(index=False):
            winner, loser = (
                (row.system_a, row.system_b) if row.difference > 0 else (row.system_b, row.system_a)
            )
            if row.difference != 0:
                better.setdefault((winner, row.measure), []).append(letter[loser])
        means = self.means_wide()
        out: dict[str, list[str]] = {
            "#": [_LETTERS[i % 26] for i in range(len(self.systems))],
            "system": list(self.systems),
        }
        for m in self.measures:
            cells = []
            for s in self.systems:
                sup = ""
                if markers:
                    sup = "".join(_SUPERSCRIPTS[j] for j in sorted(better.get((s, m), [])))
                cells.append(f"{means.loc[s, m]:.{digits}f}{sup}")
            out[m] = cells
        return pd.DataFrame(out)

    def chart(self, **kwargs: Any) -> alt.Chart:
        """:func:`ragnb.charts.comparison_chart` of :attr:`pairs`."""
        from ragnb.charts import comparison_chart

        return comparison_chart(self.pairs, **kwargs)


def _is_run(frame: pd.DataFrame) -> bool:
    return {"doc_id", "score"} <= set(frame.columns)


def _wide_values(
    name: str,
    values: Any,
    measures: list[str] | None,
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]] | None,
) -> pd.DataFrame:
    """One system's per-query values as a wide frame: index query_id (str), measure columns."""
    what = f"system {name!r}"
    if isinstance(values, pd.DataFrame) and _is_run(values):
        if qrels is None or measures is None:
            raise InputError(f"{what} is a run: pass qrels= and measures= to evaluate it")
        values = evaluate(qrels, values, measures)
    if isinstance(values, EvaluationResult):
        values = values.per_query
    if not isinstance(values, pd.DataFrame):
        raise InputError(
            f"{what}: expected a run, a per-query frame or an EvaluationResult, got "
            f"{type(values).__name__}"
        )
    if {"query_id", "measure", "value"} <= set(values.columns):
        long = values[["query_id", "measure", "value"]].copy()
        long["query_id"] = long["query_id"].astype(str)
        long["measure"] = long["measure"].astype(str)
        dup = long.duplicated(["query_id", "measure"])
        if dup.any():
            row = long[dup].iloc[0]
            raise InputError(
                f"{what} has several values of {row['measure']!r} for one query",
                query_id=row["query_id"],
            )
        wide = long.pivot(index="query_id", columns="measure", values="value")
        wide = wide[list(dict.fromkeys(long["measure"]))]
    else:
        wide = values.set_index("query_id") if "query_id" in values.columns else values.copy()
        wide.index = pd.Index([str(q) for q in wide.index], name="query_id")
        if wide.index.has_duplicates:
            qid = str(wide.index[wide.index.duplicated()][0])
            raise InputError(f"{what} has several rows for one query", query_id=qid)
    wide.columns = [str(c) for c in wide.columns]
    return wide


def compare(
    systems: Mapping[str, Any] | pd.DataFrame,
    measures: Iterable[str | Measure] | str | Measure | None = None,
    *,
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]] | None = None,
    baseline: str | None = None,
    system_column: str = "retriever",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    correction: Correction = "holm",
    ci_method: CIMethod = "percentile",
    seed: int | None = 0,
) -> ComparisonResult:
    """Compare several systems on several measures, like ranx's ``compare``, with intervals.

    For each measure and each compared pair (all pairs in input order, or each system against
    ``baseline``): the mean difference with its paired bootstrap interval
    (:func:`paired_bootstrap`) and the paired randomization p-value
    (:func:`randomization_test`); the p-values of every comparison made (pairs x measures) are
    then adjusted together (Holm by default).

    Parameters
    ----------
    systems : dict of str to (run DataFrame, per-query DataFrame or EvaluationResult), or DataFrame
        Each system's run (then ``qrels`` and ``measures`` are required and the run is evaluated
        with :func:`ragnb.evaluate.evaluate`) or per-query values: a long frame ``query_id,
        measure, value`` or a wide frame (index or column ``query_id``, one column per measure).
        A single DataFrame is a long per-query frame with a ``system_column`` naming the system,
        such as :attr:`ragnb.retrieval.study.Comparison.per_query`.
    measures : list of str or Measure, optional
        The measures to compare (aliases accepted). Default: every measure all systems share.
    qrels : DataFrame or dict, optional
        Needed when a system is given as a run.
    baseline : str, optional
        Compare each other system with this one (difference = system - baseline) instead of all
        pairs (difference = earlier - later in input order).
    system_column : str, default "retriever"
        The system column of a single long frame.
    n_resamples : int, default 10000
        B for the bootstrap and for the Monte Carlo randomization test (exact when
        ``2**n <= B``).
    confidence : float in (0, 1), default 0.95
        Of the bootstrap intervals.
    alpha : float in (0, 1), default 0.05
        Significance level applied to the adjusted p-values.
    correction : {"holm", "bonferroni", "none"}, default "holm"
    ci_method : {"percentile", "bca"}, default "percentile"
    seed : int or None, default 0
        The same seed serves every comparison.

    Returns
    -------
    ComparisonResult
        ``means``, the tidy ``pairs`` frame, ``table()`` (ranx-like display) and ``chart()``.

    Raises
    ------
    InputError
        With fewer than two systems, an unknown baseline or measure, runs without qrels,
        systems whose queries differ on a measure (naming the systems and queries), or a
        parameter out of range.

    References
    ----------
    Bassani, E. (2022). ranx: A blazing-fast Python library for ranking evaluation and
    comparison. ECIR (the comparison report). Holm (1979); Efron and Tibshirani (1993); see
    :func:`holm`, :func:`paired_bootstrap`, :func:`randomization_test`.

    Examples
    --------
    >>> per_query = pd.DataFrame({
    ...     "retriever": ["x"] * 4 + ["y"] * 4,
    ...     "query_id": ["q1", "q2", "q3", "q4"] * 2,
    ...     "measure": "P@1",
    ...     "value": [1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]})
    >>> res = compare(per_query)
    >>> row = res.pairs.iloc[0]     # x - y: differences 1, 0, 1, 0; mean 2/4
    >>> row["pair"], float(row["difference"]), float(row["p_value"])  # exact: 8 of 16 reach 2
    ('x − y', 0.5, 0.5)
    >>> res.table()["P@1"].tolist()
    ['0.7500', '0.2500']
    """
    n_resamples = check_resamples(n_resamples)
    confidence = check_fraction(confidence, "confidence")
    alpha = check_fraction(alpha, "alpha")
    if correction not in ("holm", "bonferroni", "none"):
        raise InputError(f"unknown correction {correction!r}; use 'holm', 'bonferroni' or 'none'")
    if ci_method not in ("percentile", "bca"):
        raise InputError(f"unknown interval method {ci_method!r}; use 'percentile' or 'bca'")
    eval_measures = _measure_names(measures)
    items = _system_items(systems, system_column)
    names = [n for n, _ in items]
    tables = {n: _wide_values(n, v, eval_measures, qrels) for n, v in items}
    chosen = _chosen_measures(tables, eval_measures)
    means = _means_frame(tables, chosen)
    rows = [
        _pair_row(m, sa, sb, series, n_resamples, confidence, ci_method, seed)
        for m in chosen
        for series in [{n: per_query_series(tables[n][m], None, f"system {n!r}") for n in names}]
        for sa, sb in _pairs_to_compare(names, baseline)
    ]
    table = _with_adjusted_p(pd.DataFrame(rows), correction, alpha)
    settings = {
        "n_resamples": n_resamples,
        "confidence": confidence,
        "alpha": alpha,
        "correction": correction,
        "ci_method": ci_method,
        "seed": seed,
        "n_comparisons": len(table),
    }
    return ComparisonResult(
        systems=tuple(names),
        measures=tuple(chosen),
        baseline=baseline,
        means=means,
        pairs=table,
        settings=settings,
    )


def _measure_names(measures: Iterable[str | Measure] | str | Measure | None) -> list[str] | None:
    """The requested measures as names (aliases kept as given), or None for "all shared"."""
    if measures is None:
        return None
    if isinstance(measures, str | Measure):
        measures = [measures]
    return [m.name if isinstance(m, Measure) else str(m) for m in measures]


def _system_items(
    systems: Mapping[str, Any] | pd.DataFrame, system_column: str
) -> list[tuple[str, Any]]:
    """``(name, values)`` per system in input order: a dict's items or a long frame's groups."""
    if isinstance(systems, pd.DataFrame):
        if system_column not in systems.columns:
            raise InputError(
                f"the per-query frame has no system column {system_column!r}; it has "
                f"{list(systems.columns)}",
                column=system_column,
            )
        items: list[tuple[str, Any]] = [
            (str(name), group.drop(columns=[system_column]))
            for name, group in systems.groupby(system_column, sort=False)
        ]
    elif isinstance(systems, Mapping):
        items = [(str(name), values) for name, values in systems.items()]
    else:
        raise InputError(f"systems must be a dict or a DataFrame, got {type(systems).__name__}")
    if len(items) < 2:
        raise InputError(f"need at least two systems to compare, got {len(items)}")
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise InputError(f"system names repeat: {names}")
    return items


def _chosen_measures(tables: dict[str, pd.DataFrame], requested: list[str] | None) -> list[str]:
    """The measure columns to compare: the requested ones resolved, or all the systems share."""
    names = list(tables)
    if requested is None:
        shared = [m for m in tables[names[0]].columns if all(m in tables[n] for n in names)]
        if not shared:
            raise InputError("the systems share no measure")
        return shared
    chosen = []
    for m in requested:
        picked = {pick_measure(list(tables[n].columns), m, f"system {n!r}") for n in names}
        chosen.append(picked.pop())
    return list(dict.fromkeys(chosen))


def _pairs_to_compare(names: list[str], baseline: str | None) -> list[tuple[str, str]]:
    """Each system against ``baseline``, or all pairs in input order."""
    if baseline is None:
        return list(itertools.combinations(names, 2))
    if baseline not in names:
        raise InputError(f"baseline {baseline!r} is not one of the systems {names}")
    return [(n, baseline) for n in names if n != baseline]


def _means_frame(tables: dict[str, pd.DataFrame], chosen: list[str]) -> pd.DataFrame:
    """:attr:`ComparisonResult.means`: one row per system x measure (measure-major)."""
    rows = []
    for m in chosen:
        for n, table in tables.items():
            col = table[m].astype("float64")
            mean = float(col.mean()) if col.notna().any() else np.nan
            rows.append((n, m, mean, int(col.notna().sum()), len(col)))
    return pd.DataFrame(rows, columns=["system", "measure", "value", "n_valid", "n_queries"])


def _pair_row(
    measure: str,
    sa: str,
    sb: str,
    series: dict[str, pd.Series],
    n_resamples: int,
    confidence: float,
    ci_method: CIMethod,
    seed: int | None,
) -> dict[str, Any]:
    """One row of :attr:`ComparisonResult.pairs` before the p-value adjustment."""
    try:
        pair = align_pair(series[sa], series[sb], f"system {sa!r}", f"system {sb!r}")
    except InputError as err:
        raise InputError(f"{measure}: {err.message}", query_id=err.query_id) from None
    boot = bootstrap_result(pair, n_resamples, confidence, ci_method, seed)
    test = randomization_result(pair, n_resamples, None, seed)
    return {
        "measure": measure,
        "system_a": sa,
        "system_b": sb,
        "pair": f"{sa} − {sb}",
        "mean_a": boot.mean_a,
        "mean_b": boot.mean_b,
        "difference": boot.difference,
        "ci_low": boot.low,
        "ci_high": boot.high,
        "p_value": test.p_value,
        "n_queries": boot.n_queries,
        "n_dropped": boot.n_dropped,
    }


def _with_adjusted_p(table: pd.DataFrame, correction: Correction, alpha: float) -> pd.DataFrame:
    """Insert ``p_adjusted`` (across every row) and ``significant`` after ``p_value``."""
    table.insert(
        table.columns.get_loc("p_value") + 1,
        "p_adjusted",
        adjust_p_values(table["p_value"].to_numpy(), correction),
    )
    table.insert(
        table.columns.get_loc("p_adjusted") + 1, "significant", table["p_adjusted"] <= alpha
    )
    for col in ("n_queries", "n_dropped"):
        table[col] = table[col].astype(np.int64)
    return table
