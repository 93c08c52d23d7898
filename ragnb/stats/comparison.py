"""The comparison table: several systems on several measures, like ranx's ``compare``."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import EvaluationResult, evaluate
from ragnb.measures import Measure
from ragnb.stats.bootstrap import CIMethod, bootstrap_result
from ragnb.stats.corrections import CORRECTIONS, Correction, adjust_p_values
from ragnb.stats.effects import paired_effect_size
from ragnb.stats.hierarchical import two_level_bootstrap, two_level_randomization_test
from ragnb.stats.paired import (
    PairedValues,
    align_pair,
    check_fraction,
    check_resamples,
    per_query_series,
    pick_measure,
)
from ragnb.stats.procedures import (
    ALL_SYSTEMS_TESTS,
    OMNIBUS_COLUMNS,
    TESTS,
    Test,
    all_systems_p_values,
    omnibus_row,
    run_arrays,
)
from ragnb.stats.randomization import randomization_result
from ragnb.stats.ranking import letter_display, power_table, ranking_table

__all__ = ["TESTS", "ComparisonResult", "Test", "compare"]

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
        The system every other one was compared with (``baseline=``, or the only one of
        ``baselines=``), or None.
    means : DataFrame
        One row per system x measure: ``system``, ``measure``, ``value`` (mean over the queries
        where the system's value is defined), ``n_valid``, ``n_queries``. When a system has
        several runs, also ``n_runs``, ``sd_queries`` (standard deviation over the queries of
        the run-averaged values) and ``sd_runs`` (standard deviation over the runs of each
        run's mean: the spread between seeds; NaN with one run).
    pairs : DataFrame
        One row per compared pair x measure (measure-major): ``measure``, ``system_a``,
        ``system_b``, ``pair`` (``"a − b"``), ``mean_a``, ``mean_b`` (over the queries where
        both are defined), ``difference`` (``mean_a - mean_b``), ``ci_low``, ``ci_high``
        (bootstrap interval of the difference), ``p_value`` (by ``settings["test"]``:
        :mod:`ragnb.stats.procedures`), ``p_adjusted`` (across every row of this frame),
        ``significant`` (bool, ``p_adjusted <= alpha``; with the ``"anova"`` test also the
        measure's ANOVA at most alpha), ``cohens_dz``, ``dz_low``, ``dz_high``, ``hedges_gz``,
        ``gz_low``, ``gz_high`` (the paired effect size ``mean(d) / sd(d)`` of the per-query
        differences, unitless, with its noncentral-t interval at ``confidence``, and Hedges'
        small-sample correction of both: :func:`ragnb.stats.paired_effect_size`),
        ``n_queries``, ``n_dropped`` (int). When a system has several runs, also
        ``ci_low_runs``, ``ci_high_runs``: the two-level interval over queries and runs
        (:func:`ragnb.stats.two_level_bootstrap`), at least as wide as the other.
    settings : dict
        ``test``, ``n_resamples``, ``confidence``, ``alpha``, ``correction``, ``ci_method``,
        ``seed``, ``n_comparisons``.
    baselines : tuple of str
        The systems every other one was compared with; empty for all pairs.
    per_query : DataFrame
        The values compared: ``system``, ``measure``, ``query_id``, ``value`` (the mean over a
        system's runs when it has several).
    omnibus : DataFrame
        The test of all systems at once, one row per measure: ``measure``, ``design``
        (``"repeated-measures"``, or ``"two-way"`` with the runs nested in systems when every
        system has the same number of runs, at least two), ``f``, ``df_systems``,
        ``df_error``, ``p_value`` (:func:`ragnb.stats.anova`), ``n_queries`` (with a value for
        every system), ``n_runs``, ``n_dropped``. NaN where the ANOVA cannot be computed.
    """

    systems: tuple[str, ...]
    measures: tuple[str, ...]
    baseline: str | None
    means: pd.DataFrame
    pairs: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    baselines: tuple[str, ...] = ()
    per_query: pd.DataFrame = field(default_factory=pd.DataFrame)
    omnibus: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=OMNIBUS_COLUMNS))

    def letters(self) -> pd.DataFrame:
        """The compact letter display: index ``system``, one column of letters per measure;
        systems sharing a letter are not separated by the tests
        (:func:`ragnb.stats.letter_display`)."""
        return letter_display(self)

    def means_wide(self) -> pd.DataFrame:
        """Means, index ``system`` (input order), one column per measure."""
        wide = self.means.pivot(index="system", columns="measure", values="value")
        wide = wide.loc[list(self.systems), list(self.measures)]
        wide.columns.name = None
        return wide

    def ranking(self, measure: str | None = None) -> pd.DataFrame:
        """The systems best first with rank intervals and tie groups on ``measure`` (default:
        the first); :func:`ragnb.stats.ranking_table`."""
        return ranking_table(self, measure)

    def power(
        self,
        measure: str | None = None,
        *,
        target_effect: float = 0.02,
        power: float = 0.8,
        n_simulations: int = 4000,
    ) -> pd.DataFrame:
        """Minimum detectable effect and queries needed for ``target_effect`` per compared pair
        on ``measure`` (default: the first); :func:`ragnb.stats.power_table`."""
        return power_table(
            self, measure, target_effect=target_effect, power=power, n_simulations=n_simulations
        )

    def table(
        self, digits: int = 4, markers: bool = True, ranks: str | None = None
    ) -> pd.DataFrame:
        """A display table like ranx's ``compare`` report.

        Each cell is a system's mean, followed by the superscript letters of the systems it is
        significantly better than (adjusted p <= alpha and a positive difference) among the
        pairs compared.

        Parameters
        ----------
        digits : int, default 4
        markers : bool, default True
            False leaves the superscripts out.
        ranks : str, optional
            A measure: add its rank intervals (``1-2``, ``1-2``, ``3``) and tie groups (systems
            sharing a letter are not separable) after ``system`` (:meth:`ranking`).

        Returns
        -------
        DataFrame
            Columns ``#`` (letter), ``system``, with ``ranks`` also ``rank`` and ``tie_group``,
            then one str column per measure.

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
        frame = pd.DataFrame(out)
        if ranks is not None:
            ranked = self.ranking(ranks).set_index("system")
            frame.insert(2, "rank", ranked.loc[list(self.systems), "rank"].to_list())
            frame.insert(3, "tie_group", ranked.loc[list(self.systems), "tie_group"].to_list())
        return frame


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
    baselines: Sequence[str] | None = None,
    system_column: str = "retriever",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    correction: Correction = "holm",
    ci_method: CIMethod = "percentile",
    seed: int | None = 0,
    test: Test = "randomization",
) -> ComparisonResult:
    """Compare several systems on several measures, like ranx's ``compare``, with intervals.

    For each measure and each compared pair (all pairs in input order, or each system against
    ``baseline``, or against each of ``baselines``): the mean difference with its paired
    bootstrap interval (:func:`paired_bootstrap`), its p-value by ``test`` and its effect size
    (:func:`paired_effect_size`); the p-values of every comparison (pairs x measures) are then
    adjusted together (Holm by default). Each measure also gets an ANOVA of all systems
    (:attr:`ComparisonResult.omnibus`).

    A system given as a list of runs (seeds, folds) is averaged per query over its runs before
    pairing; the two-level interval ``ci_low_runs, ci_high_runs`` also resamples the runs, and
    the randomization test turns two-level (:func:`two_level_randomization_test`).

    Parameters
    ----------
    systems : dict of str to values or list of values, or DataFrame
        Each system's run (then ``qrels`` and ``measures`` are required and the run is evaluated
        with :func:`ragnb.evaluation.evaluate.evaluate`) or per-query values: a long frame
        ``query_id, measure, value``, a wide frame (index or column ``query_id``, one column per
        measure) or an EvaluationResult; or a list of those, one per run of the system (all on the
        same queries). A single DataFrame is a long per-query frame with a ``system_column`` naming
        the system, such as :attr:`ragnb.studies.retrieval.study.Comparison.per_query`.
    measures : list of str or Measure, optional
        The measures to compare (aliases accepted). Default: every measure all systems share.
    qrels : DataFrame or dict, optional
        Needed when a system is given as a run.
    baseline : str, optional
        Compare each other system with this one (difference = system - baseline) instead of all
        pairs (difference = earlier - later in input order).
    baselines : list of str, optional
        Compare each other system with each of these (difference = system - baseline); two
        baselines are compared once (later - earlier in ``baselines``). Not with ``baseline``.
    system_column : str, default "retriever"
        The system column of a single long frame.
    n_resamples : int, default 10000
        B of the bootstrap and the randomization tests (exact when ``2**n <= B``).
    confidence : float in (0, 1), default 0.95
        Of the bootstrap intervals.
    alpha : float in (0, 1), default 0.05
        Significance level applied to the adjusted p-values.
    correction : {"holm", "bonferroni", "bh", "none"}, default "holm"
        Over every row of the table; ``"bh"``: Benjamini-Hochberg (:func:`benjamini_hochberg`).
        Tukey's p-values are already adjusted over one measure's pairs.
    ci_method : {"percentile", "bca"}, default "percentile"
    seed : int or None, default 0
        The same seed serves every comparison.
    test : {"randomization", "t", "anova", "tukey", "randomized-tukey"}, default "randomization"
        The p-value of each pair: see :mod:`ragnb.stats.procedures`.

    Returns
    -------
    ComparisonResult

    Raises
    ------
    InputError
        With fewer than two systems, a baseline unknown, repeated or given twice, an unknown
        measure, test or correction, runs without qrels, systems (or runs) whose queries differ
        (naming them), an all-systems test with fewer than two queries valued for every
        system, or a parameter out of range.

    References
    ----------
    Bassani, E. (2022). ranx: A blazing-fast Python library for ranking evaluation and
    comparison. ECIR (the comparison report). Carterette, B. (2012). Multiple testing in
    statistical analysis of systems-based information retrieval experiments. ACM TOIS 30(1), 4
    (one correction over every comparison; ANOVA and Tukey's HSD). Each function named above
    cites its own sources.

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
    settings = _checked_settings(n_resamples, confidence, alpha, correction, ci_method, seed, test)
    eval_measures = _measure_names(measures)
    items = _system_items(systems, system_column)
    names = [n for n, _ in items]
    to_compare = _pairs_to_compare(names, baseline, baselines)
    runs = {n: _system_runs(n, v, eval_measures, qrels) for n, v in items}
    tables = {n: _averaged(n, r) for n, r in runs.items()}
    chosen = _chosen_measures(tables, eval_measures)
    table, omnibus = _tested(chosen, tables, runs, to_compare, settings)
    named = tuple(baselines or ([] if baseline is None else [baseline]))
    return ComparisonResult(
        systems=tuple(names),
        measures=tuple(chosen),
        baseline=named[0] if len(named) == 1 else None,
        means=_means_frame(tables, chosen, runs if _several(runs) else None),
        pairs=table,
        settings=settings,
        baselines=named,
        per_query=_long_values(tables, chosen),
        omnibus=omnibus,
    )


def _several(runs: dict[str, list[pd.DataFrame]]) -> bool:
    return any(len(r) > 1 for r in runs.values())


def _tested(
    chosen: list[str],
    tables: dict[str, pd.DataFrame],
    runs: dict[str, list[pd.DataFrame]],
    to_compare: list[tuple[str, str]],
    settings: dict[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:attr:`ComparisonResult.pairs` (adjusted; ``settings["n_comparisons"]`` set) and
    :attr:`ComparisonResult.omnibus`."""
    rows, omnibus = [], []
    for m in chosen:
        measure_rows, row = _measure_rows(m, tables, runs, to_compare, settings)
        rows += measure_rows
        omnibus.append(row)
    omnibus_frame = pd.DataFrame(omnibus, columns=OMNIBUS_COLUMNS)
    table = _with_adjusted_p(pd.DataFrame(rows), settings["correction"], settings["alpha"])
    if settings["test"] == "anova":  # protected: a pair counts only where its ANOVA rejects
        rejected = omnibus_frame.set_index("measure")["p_value"] <= settings["alpha"]
        table["significant"] &= table["measure"].map(rejected).fillna(False).astype(bool)
    settings["n_comparisons"] = len(table)
    return table, omnibus_frame


def _checked_settings(
    n_resamples: int,
    confidence: float,
    alpha: float,
    correction: Correction,
    ci_method: CIMethod,
    seed: int | None,
    test: Test,
) -> dict[str, Any]:
    """:attr:`ComparisonResult.settings` (before ``n_comparisons``), each one checked."""
    if correction not in CORRECTIONS:
        raise InputError(f"unknown correction {correction!r}; use one of {', '.join(CORRECTIONS)}")
    if test not in TESTS:
        raise InputError(f"unknown test {test!r}; use one of {', '.join(TESTS)}")
    if ci_method not in ("percentile", "bca"):
        raise InputError(f"unknown interval method {ci_method!r}; use 'percentile' or 'bca'")
    return {
        "test": test,
        "n_resamples": check_resamples(n_resamples),
        "confidence": check_fraction(confidence, "confidence"),
        "alpha": check_fraction(alpha, "alpha"),
        "correction": correction,
        "ci_method": ci_method,
        "seed": seed,
    }


def _measure_rows(
    measure: str,
    tables: dict[str, pd.DataFrame],
    runs: dict[str, list[pd.DataFrame]],
    to_compare: list[tuple[str, str]],
    settings: dict[str, Any],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows of :attr:`ComparisonResult.pairs` on one measure, before the adjustment (when
    some system has several runs, with the two-level intervals), and its ``omnibus`` row."""
    test = settings["test"]
    arrays = run_arrays(measure, runs)
    result, omnibus = omnibus_row(measure, list(runs), arrays, test in ALL_SYSTEMS_TESTS)
    family = None
    if result is not None and test in ALL_SYSTEMS_TESTS:
        family = all_systems_p_values(test, result, arrays, settings)
    series = {n: per_query_series(t[measure], None, f"system {n!r}") for n, t in tables.items()}
    several = any(len(r) > 1 for r in runs.values())
    rows = []
    for sa, sb in to_compare:
        pair = _aligned(measure, sa, sb, series)
        row = _pair_row(measure, sa, sb, pair, settings)
        paired_runs = _pair_runs(measure, sa, sb, runs) if several else None
        if family is not None:
            row["p_value"] = family[frozenset((sa, sb))]
        elif test == "randomization":
            row["p_value"] = _randomization_p(pair, paired_runs, settings)
        if paired_runs is not None:
            low, high = two_level_bootstrap(
                *paired_runs,
                n_resamples=settings["n_resamples"],
                confidence=settings["confidence"],
                seed=settings["seed"],
            )
            row.update({"ci_low_runs": low, "ci_high_runs": high})
        rows.append(row)
    return rows, omnibus


def _randomization_p(
    pair: PairedValues,
    paired_runs: tuple[np.ndarray, np.ndarray] | None,
    settings: dict[str, Any],
) -> float:
    """The paired randomization test's p-value; two-level when either system has runs."""
    n_resamples, seed = settings["n_resamples"], settings["seed"]
    if paired_runs is None or max(paired_runs[0].shape[0], paired_runs[1].shape[0]) == 1:
        return randomization_result(pair, n_resamples, None, seed).p_value
    test = two_level_randomization_test(*paired_runs, n_resamples=n_resamples, seed=seed)
    return test.p_value


def _system_runs(
    name: str,
    values: Any,
    measures: list[str] | None,
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]] | None,
) -> list[pd.DataFrame]:
    """A system's per-query values as one wide frame per run (one run unless given a list)."""
    if not isinstance(values, list | tuple):
        return [_wide_values(name, values, measures, qrels)]
    if not values:
        raise InputError(f"system {name!r} is an empty list of runs")
    if len(values) == 1:
        return [_wide_values(name, values[0], measures, qrels)]
    return [_wide_values(f"{name} (run {i + 1})", v, measures, qrels) for i, v in enumerate(values)]


def _averaged(name: str, runs: list[pd.DataFrame]) -> pd.DataFrame:
    """The mean over a system's runs of each query's value (NaN if a run's value is NaN), on the
    measures every run holds; the runs must hold the same queries."""
    if len(runs) == 1:
        return runs[0]
    first = runs[0]
    columns = [c for c in first.columns if all(c in r.columns for r in runs)]
    for i, run in enumerate(runs[1:], start=2):
        if set(run.index) != set(first.index):
            odd = sorted(set(run.index) ^ set(first.index))
            raise InputError(
                f"system {name!r}: run {i} and run 1 do not hold the same queries "
                f"({len(odd)} differ)",
                query_id=str(odd[0]),
            )
    stacked = np.stack([r.loc[first.index, columns].to_numpy(np.float64) for r in runs])
    return pd.DataFrame(stacked.mean(axis=0), index=first.index, columns=columns)


def _pair_runs(
    measure: str, sa: str, sb: str, runs: dict[str, list[pd.DataFrame]]
) -> tuple[np.ndarray, np.ndarray]:
    """The two systems' runs on ``measure``, shape (n_runs, n_queries), on the queries where
    every run of both has a value (sorted by id)."""
    matrices = []
    for name in (sa, sb):
        frame = np.stack([r[measure].astype("float64") for r in runs[name]])
        matrices.append(pd.DataFrame(frame, columns=runs[name][0].index))
    kept = matrices[0].columns[
        matrices[0].notna().all().to_numpy() & matrices[1].notna().all().to_numpy()
    ]
    a, b = (m[sorted(kept)].to_numpy() for m in matrices)
    return a, b


def _long_values(tables: dict[str, pd.DataFrame], chosen: list[str]) -> pd.DataFrame:
    """:attr:`ComparisonResult.per_query`: ``system, measure, query_id, value``."""
    parts = []
    for m in chosen:
        for name, table in tables.items():
            parts.append(
                pd.DataFrame(
                    {
                        "system": name,
                        "measure": m,
                        "query_id": table.index.astype(str),
                        "value": table[m].to_numpy(np.float64),
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


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


def _pairs_to_compare(
    names: list[str], baseline: str | None, baselines: Sequence[str] | None
) -> list[tuple[str, str]]:
    """Each system against ``baseline`` or each of ``baselines`` (two baselines once), or all
    pairs in input order."""
    if baseline is not None and baselines is not None:
        raise InputError("pass baseline= or baselines=, not both")
    if baselines is None:
        if baseline is None:
            return list(itertools.combinations(names, 2))
        baselines = [baseline]
    if isinstance(baselines, str) or not baselines:
        raise InputError(f"baselines must be a non-empty list of system names, got {baselines!r}")
    if len(set(baselines)) != len(baselines):
        raise InputError(f"baselines repeat: {list(baselines)}")
    pairs: list[tuple[str, str]] = []
    for base in baselines:
        if base not in names:
            raise InputError(f"baseline {base!r} is not one of the systems {names}")
        pairs += [(n, base) for n in names if n != base and (base, n) not in pairs]
    return pairs


def _means_frame(
    tables: dict[str, pd.DataFrame],
    chosen: list[str],
    runs: dict[str, list[pd.DataFrame]] | None = None,
) -> pd.DataFrame:
    """:attr:`ComparisonResult.means`: one row per system x measure (measure-major); with
    ``runs``, the number of runs and the spreads between queries and between runs."""
    rows = []
    for m in chosen:
        for n, table in tables.items():
            col = table[m].astype("float64")
            mean = float(col.mean()) if col.notna().any() else np.nan
            row: tuple[Any, ...] = (n, m, mean, int(col.notna().sum()), len(col))
            if runs is not None:
                run_means = [float(r[m].astype("float64").mean()) for r in runs[n]]
                sd_runs = float(np.std(run_means, ddof=1)) if len(run_means) > 1 else np.nan
                row += (len(run_means), float(col.std(ddof=1)), sd_runs)
            rows.append(row)
    columns = ["system", "measure", "value", "n_valid", "n_queries"]
    if runs is not None:
        columns += ["n_runs", "sd_queries", "sd_runs"]
    return pd.DataFrame(rows, columns=columns)


def _aligned(measure: str, sa: str, sb: str, series: dict[str, pd.Series]) -> PairedValues:
    """The pair's per-query values aligned by query id (the error names the measure)."""
    try:
        return align_pair(series[sa], series[sb], f"system {sa!r}", f"system {sb!r}")
    except InputError as err:
        raise InputError(f"{measure}: {err.message}", query_id=err.query_id) from None


def _pair_row(
    measure: str, sa: str, sb: str, pair: PairedValues, settings: dict[str, Any]
) -> dict[str, Any]:
    """One row of :attr:`ComparisonResult.pairs` before the adjustment; ``p_value`` by the
    paired t-test (``test="t"``) or NaN, for the caller to fill."""
    n_resamples, confidence, seed = (settings[k] for k in ("n_resamples", "confidence", "seed"))
    boot = bootstrap_result(pair, n_resamples, confidence, settings["ci_method"], seed)
    effect = paired_effect_size(pair.a, pair.b, confidence=confidence)
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
        "p_value": _t_test_p(pair) if settings["test"] == "t" else np.nan,
        **effect.as_dict(),
        "n_queries": boot.n_queries,
        "n_dropped": boot.n_dropped,
    }


def _t_test_p(pair: PairedValues) -> float:
    """Two-sided paired t-test; differences that are all equal give 1 (all 0) or 0."""
    from scipy import stats

    d = pair.a - pair.b
    if d.size < 2 or np.ptp(d) <= 1e-12 * max(1.0, float(np.abs(d).max())):
        return 1.0 if np.allclose(d, 0) else 0.0
    return float(stats.ttest_rel(pair.a, pair.b).pvalue)


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
