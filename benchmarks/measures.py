"""Time ragnb against ranx and ir_measures (pytrec_eval) on a synthetic run of 100,000 queries.

Usage (from the repository root)::

    .venv/bin/python benchmarks/measures.py                  # 100,000 queries x 100 documents
    .venv/bin/python benchmarks/measures.py --queries 2000   # a quick run
    .venv/bin/python benchmarks/measures.py --plain-only     # the three measures' rows only

Data: ``--queries`` queries, each retrieving 100 distinct documents of a corpus of
``50 * queries`` ids (``doc<n>``), scores rounded to 3 decimals (so some documents tie); 15 judged
documents per query, graded 0-3 with about 10 relevant (grade >= 1), 70% of them retrieved. Rows
of the run come query after query, documents in id order (not in score order).

Every tool is timed twice on ``nDCG@10``, ``P@10`` and ``R@100``:

plain
    From the same ``{query_id: {doc_id: value}}`` dicts, conversions counted: ragnb's
    ``evaluate(qrels, run, measures)``; ranx's ``evaluate(qrels, run, metrics)`` on the dicts and,
    separately, building ``ranx.Qrels`` / ``ranx.Run`` from them then evaluating;
    ``ir_measures.pytrec_eval.calc_aggregate``. ragnb is also timed from DataFrames.
prepared
    From each tool's own structures, built beforehand and warmed up by one call: ragnb computes
    the measures on ``RankingArrays`` from ``prepare``; ranx evaluates ``Qrels`` / ``Run`` objects;
    ir_measures calls ``calc_aggregate(run)`` of an evaluator built on the qrels.

Then the breadth measures both tools have are timed the same two ways: ragnb against ranx
(``AP@100``, ``Rprec``, ``nDCG_exp@10``) and against ir_measures' pytrec_eval (``AP``, ``AP@100``,
``Rprec``, ``infAP``, ``IPrec@0.5``, ``NumRet``, ``NumRelRet``, ``NumRel``), with the ratios.

Then ragnb alone computes one measure of every registered family (``ragnb.measures.families()``;
cutoff 10 where a cutoff is required, required parameters at the middle of their range), from the
dicts, from DataFrames and from prepared arrays. A family that needs more than qrels and a run is
skipped with a note.

Each timing is the best of ``--repeat`` calls (a call longer than 30 s is not repeated). Compile
times (numba, for ragnb's kernels and ranx) are excluded by a warm-up on a small input first. The
prepared rows time every call from arrays without derived values (the masks, counts and values
that ``RankingArrays`` keeps once a measure computed them), so a repeat recomputes them. The
machine and the load average are printed with the numbers.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from importlib import metadata
from typing import Any

import numpy as np
import pandas as pd

import ragnb
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.measures import (
    GRADED_FAMILIES,
    Measure,
    families,
    map_grades,
    parse_measures,
    prepare,
    prepare_sources,
)

MEASURES = ["nDCG@10", "P@10", "R@100"]
RANX = {"nDCG@10": "ndcg@10", "P@10": "precision@10", "R@100": "recall@100"}
#: The breadth measures ranx also computes (ragnb name: ranx name).
RANX_BREADTH = {"AP@100": "map@100", "Rprec": "r-precision", "nDCG_exp@10": "ndcg_burges@10"}
#: The breadth measures ir_measures computes with pytrec_eval (ragnb name: ir_measures name).
IRM_BREADTH = {
    "AP": "AP",
    "AP@100": "AP@100",
    "Rprec": "Rprec",
    "infAP": "infAP",
    "IPrec@0.5": "IPrec@0.5",
    "NumRet": "NumRet",
    "NumRelRet": "NumRet(rel=1)",
    "NumRel": "NumRel",
}
DOCS_PER_QUERY = 100
JUDGED_PER_QUERY = 15
NO_REPEAT_AFTER_S = 30.0

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


# ----------------------------------------------------------------------------- data


def synthetic(n_queries: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Qrels and run frames, see the module docstring."""
    rng = np.random.default_rng(seed)
    corpus = max(1000, 50 * n_queries)
    # 100 distinct documents per query: increasing offsets from a random start, modulo the corpus
    gaps = rng.integers(1, corpus // DOCS_PER_QUERY, size=(n_queries, DOCS_PER_QUERY))
    start = rng.integers(0, corpus, size=(n_queries, 1))
    retrieved = (start + np.cumsum(gaps, axis=1)) % corpus
    # 15 judged per query: 70% among the retrieved, the others just below the start (unretrieved)
    is_retrieved = rng.random((n_queries, JUDGED_PER_QUERY)) < 0.7
    below = (start - 1 - np.arange(JUDGED_PER_QUERY)) % corpus
    judged = np.where(is_retrieved, retrieved[:, :JUDGED_PER_QUERY], below)
    grades = rng.choice(4, p=[1 / 3, 1 / 3, 2 / 9, 1 / 9], size=judged.shape)
    # scores: noise plus a boost for relevant retrieved documents, 3 decimals (some ties)
    boost = np.zeros(retrieved.shape)
    boost[:, :JUDGED_PER_QUERY] = np.where(is_retrieved, 0.8 * grades, 0.0)
    scores = np.round(rng.normal(size=retrieved.shape) + boost, 3)

    qids = np.array([f"q{i:06d}" for i in range(n_queries)], dtype=object)
    run = pd.DataFrame(
        {
            "query_id": np.repeat(qids, DOCS_PER_QUERY),
            "doc_id": _doc_ids(retrieved.ravel()),
            "score": scores.ravel(),
        }
    )
    qrels = pd.DataFrame(
        {
            "query_id": np.repeat(qids, JUDGED_PER_QUERY),
            "doc_id": _doc_ids(judged.ravel()),
            "relevance": grades.ravel().astype(np.int64),
        }
    )
    return qrels, run


def _doc_ids(numbers: np.ndarray) -> pd.Series:
    return pd.Series([f"doc{n}" for n in numbers.tolist()], dtype="str")


def as_dicts(frame: pd.DataFrame, value: str, kind: type) -> dict[str, dict[str, Any]]:
    """``{query_id: {doc_id: value}}`` of a frame whose rows come query after query."""
    qids = frame["query_id"].to_numpy(dtype=object)
    docs = frame["doc_id"].to_numpy(dtype=object).tolist()
    values = frame[value].to_numpy().astype(kind).tolist()
    bounds = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1], True])
    return {
        qids[a]: dict(zip(docs[a:b], values[a:b], strict=True))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    }


# ----------------------------------------------------------------------------- timing


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Smallest wall time of ``repeat`` calls (seconds) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - t0
        best = min(best, elapsed)
        if elapsed > NO_REPEAT_AFTER_S:
            break
    return best, result


def family_measures() -> tuple[list[Measure], list[str]]:
    """One measure per registered family, and notes on the families skipped."""
    qrels = {"q1": {"a": 3, "b": 1, "c": 0}, "q2": {"a": 1}}
    run = {"q1": {"a": 0.5, "b": 0.4, "x": 0.3}, "q2": {"y": 1.0}}
    arrays = prepare(qrels, run)
    chosen, notes = [], []
    for name, spec in families().items():
        params = {}
        for p in spec.params:
            if p.default is None:
                low = 0.0 if p.low is None else p.low
                params[p.name] = (low + p.high) / 2 if p.high is not None else max(low, 1)
        try:
            m = Measure(name, 10 if spec.cutoff == "required" else None, **params)
            m.compute(arrays)
        except InputError as err:
            notes.append(f"skipped {name}: {str(err).split(';')[0]}")
            continue
        chosen.append(m)
    return chosen, notes


def machine() -> list[str]:
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = next(int(line.split()[1]) for line in f if line.startswith("MemTotal"))
    versions = []
    for dist in (
        "numpy",
        "pandas",
        "pyarrow",
        "numba",
        "ranx",
        "ir-measures",
        "pytrec-eval-terrier",
    ):
        try:
            versions.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{dist} -")
    return [
        f"cores: {os.cpu_count()} ({len(os.sched_getaffinity(0))} usable); CPU: {model}; "
        f"RAM: {mem_kb / 2**20:.1f} GiB",
        f"Python {platform.python_version()} on {platform.platform()}",
        f"ragnb {ragnb.__version__ if hasattr(ragnb, '__version__') else metadata.version('ragnb')}"
        f"; " + ", ".join(versions),
    ]


def load() -> str:
    return "load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


# ----------------------------------------------------------------------------- the tools


def ragnb_plain(qrels: Any, run: Any, measures: list, **options: Any) -> dict[str, float]:
    return evaluate(qrels, run, measures, **options).aggregate_to_dict()


def ragnb_prepared(arrays: Any, measures: list[Measure]) -> dict[str, float]:
    """Macro means as ``evaluate`` takes them (NaN values left out).

    Each call starts from the prepared arrays without the values measures derive from them and
    share (``RankingArrays.derived``: relevance masks, counts, a measure's own values), so that a
    repeated call computes everything again.
    """
    arrays = dataclasses.replace(arrays)
    out = {}
    for m in measures:
        values = m.compute(arrays)
        valid = values[~np.isnan(values)]
        out[m.name] = float(valid.mean()) if len(valid) else float("nan")
    return out


def breadth(
    qrels_d: Qrels, run_d: Run, *, full_arrays: Any, record: Callable[..., float], repeat: int
) -> None:
    """Time the breadth measures against ranx and ir_measures, plain and prepared; print ratios."""
    import ir_measures
    import ranx

    ours_ranx = parse_measures(list(RANX_BREADTH))
    ours_irm = parse_measures(list(IRM_BREADTH))
    irm_measures = [ir_measures.parse_measure(n) for n in IRM_BREADTH.values()]
    ranx_metrics = list(RANX_BREADTH.values())
    irm = ir_measures.pytrec_eval
    print(f"\nbreadth measures vs ranx ({', '.join(RANX_BREADTH)}):")
    t_r = record(
        "breadth",
        "ragnb",
        "evaluate(dicts)",
        lambda: ragnb_plain(qrels_d, run_d, ours_ranx),
        repeat,
    )
    t_x = record(
        "breadth",
        "ranx",
        "evaluate(dicts)",
        lambda: ranx.evaluate(qrels_d, run_d, ranx_metrics),
        repeat,
    )
    rq, rr = ranx.Qrels(qrels_d), ranx.Run(run_d)
    ranx.evaluate(rq, rr, ranx_metrics)
    tp_r = record(
        "breadth",
        "ragnb",
        "measures on RankingArrays",
        lambda: ragnb_prepared(full_arrays, ours_ranx),
        repeat,
    )
    tp_x = record(
        "breadth",
        "ranx",
        "evaluate(Qrels, Run)",
        lambda: ranx.evaluate(rq, rr, ranx_metrics),
        repeat,
    )
    print(f"breadth measures vs ir_measures pytrec_eval ({', '.join(IRM_BREADTH)}):")
    t_r2 = record(
        "breadth", "ragnb", "evaluate(dicts)", lambda: ragnb_plain(qrels_d, run_d, ours_irm), repeat
    )
    t_i = record(
        "breadth",
        "ir_measures",
        "pytrec_eval.calc_aggregate(dicts)",
        lambda: irm.calc_aggregate(irm_measures, qrels_d, run_d),
        repeat,
    )
    evaluator = irm.evaluator(irm_measures, qrels_d)
    evaluator.calc_aggregate(run_d)
    tp_r2 = record(
        "breadth",
        "ragnb",
        "measures on RankingArrays",
        lambda: ragnb_prepared(full_arrays, ours_irm),
        repeat,
    )
    tp_i = record(
        "breadth",
        "ir_measures",
        "evaluator(qrels).calc_aggregate(run)",
        lambda: evaluator.calc_aggregate(run_d),
        repeat,
    )
    print(
        f"  breadth ratios: plain ragnb/ranx {t_r / t_x:6.3f}, "
        f"ragnb/ir_measures {t_r2 / t_i:6.3f}; prepared ragnb/ranx {tp_r / tp_x:6.3f}, "
        f"ragnb/ir_measures {tp_r2 / tp_i:6.3f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=100_000, help="default 100000")
    parser.add_argument("--repeat", type=int, default=3, help="best of R calls (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--plain-only",
        action="store_true",
        help="stop after the nDCG@10/P@10/R@100 rows and their values (no breadth, no families)",
    )
    args = parser.parse_args(argv)

    import ir_measures
    import ranx
    from ir_measures import P, R, nDCG
    from numba.core.errors import NumbaTypeSafetyWarning

    warnings.filterwarnings("ignore", category=NumbaTypeSafetyWarning)  # raised inside ranx

    ranx_metrics = list(RANX.values())
    irm_measures = [nDCG @ 10, P @ 10, R @ 100]
    irm = ir_measures.pytrec_eval
    parsed = parse_measures(MEASURES)

    print("machine:", *machine(), sep="\n  ")
    print(load())
    print(
        f"\ndata: {args.queries:,} queries x {DOCS_PER_QUERY} retrieved documents "
        f"({args.queries * DOCS_PER_QUERY:,} run rows), {JUDGED_PER_QUERY} judged per query "
        f"({args.queries * JUDGED_PER_QUERY:,} qrels rows); best of {args.repeat}"
    )
    t0 = time.perf_counter()
    qrels_df, run_df = synthetic(args.queries, args.seed)
    qrels_d: Qrels = as_dicts(qrels_df, "relevance", int)
    run_d: Run = as_dicts(run_df, "score", float)
    print(f"built in {time.perf_counter() - t0:.1f} s")

    # Warm-up on a small input: numba compilation (ragnb kernels, ranx) is not timed.
    sq, sr = synthetic(200, args.seed + 1)
    sqd, srd = as_dicts(sq, "relevance", int), as_dicts(sr, "score", float)
    ragnb_plain(sqd, srd, MEASURES)
    ranx.evaluate(sqd, srd, ranx_metrics)
    ranx.evaluate(ranx.Qrels(sqd), ranx.Run(srd), ranx_metrics)
    irm.calc_aggregate(irm_measures, sqd, srd)

    rows: list[tuple[str, str, str, float, dict[str, float]]] = []

    def record(mode: str, tool: str, how: str, fn: Callable[[], Any], repeat: int) -> float:
        seconds, result = best_of(fn, repeat)
        values = {str(k): float(v) for k, v in result.items()}
        rows.append((mode, tool, how, seconds, values))
        print(f"  {mode:9s} {tool:12s} {how:44s} {seconds:8.3f} s", flush=True)
        return seconds

    print("\ntimings (nDCG@10, P@10, R@100):")
    rep = args.repeat
    t_ragnb = record(
        "plain", "ragnb", "evaluate(dicts)", lambda: ragnb_plain(qrels_d, run_d, MEASURES), rep
    )
    t_ranx = record(
        "plain", "ranx", "evaluate(dicts)", lambda: ranx.evaluate(qrels_d, run_d, ranx_metrics), rep
    )
    built: dict[str, Any] = {}

    def ranx_objects() -> dict[str, float]:
        built["qrels"], built["run"] = ranx.Qrels(qrels_d), ranx.Run(run_d)
        return ranx.evaluate(built["qrels"], built["run"], ranx_metrics)

    t_ranx_obj = record("plain", "ranx", "Qrels(dict), Run(dict), evaluate", ranx_objects, 1)
    t_irm = record(
        "plain",
        "ir_measures",
        "pytrec_eval.calc_aggregate(dicts)",
        lambda: irm.calc_aggregate(irm_measures, qrels_d, run_d),
        rep,
    )
    t_ragnb_df = record(
        "plain",
        "ragnb",
        "evaluate(DataFrames)",
        lambda: ragnb_plain(qrels_df, run_df, MEASURES),
        rep,
    )

    arrays = prepare(qrels_df, run_df, depth=100)
    ragnb_prepared(arrays, parsed)
    tp_ragnb = record(
        "prepared",
        "ragnb",
        "measures on RankingArrays",
        lambda: ragnb_prepared(arrays, parsed),
        rep,
    )
    ranx.evaluate(built["qrels"], built["run"], ranx_metrics)
    tp_ranx = record(
        "prepared",
        "ranx",
        "evaluate(Qrels, Run)",
        lambda: ranx.evaluate(built["qrels"], built["run"], ranx_metrics),
        rep,
    )
    evaluator = irm.evaluator(irm_measures, qrels_d)
    evaluator.calc_aggregate(run_d)
    tp_irm = record(
        "prepared",
        "ir_measures",
        "evaluator(qrels).calc_aggregate(run)",
        lambda: evaluator.calc_aggregate(run_d),
        rep,
    )

    print("\nratios (time of ragnb / time of the other tool; below 1 = ragnb faster):")
    print(
        f"  plain    ragnb/ranx {t_ragnb / t_ranx:6.3f} (vs ranx on dicts), "
        f"{t_ragnb / t_ranx_obj:6.3f} (vs ranx building Qrels/Run); "
        f"ragnb/ir_measures {t_ragnb / t_irm:6.3f}; from DataFrames ragnb/ranx "
        f"{t_ragnb_df / t_ranx:6.3f}"
    )
    print(
        f"  prepared ragnb/ranx {tp_ragnb / tp_ranx:6.3f}; "
        f"ragnb/ir_measures {tp_ragnb / tp_irm:6.3f}"
    )

    print("\nvalues (ranx ranks tied scores in its own order, trec_eval and ragnb by doc_id):")
    for mode, tool, how, _, values in rows:
        shown = ", ".join(f"{v:.6f}" for v in values.values())
        print(f"  {mode:9s} {tool:12s} {how:44s} {shown}")

    if args.plain_only:
        print(load())
        return
    breadth(qrels_d, run_d, full_arrays=prepare(qrels_df, run_df), record=record, repeat=rep)

    measures, notes = family_measures()
    print(
        f"\nall families, ragnb alone ({len(measures)} measures: {', '.join(map(str, measures))})"
    )
    # the synthetic grades are 0-3: Dallaire's graded families read them through the TREC DL map;
    # RA-nWG-nov reads a source column (the doc id without its last digit: ten documents a
    # source) in the DataFrame and prepared rows
    nov = Measure("RA-nWG-nov", 10, beta=0.5)
    notes = [n for n in notes if not n.startswith("skipped RA-nWG-nov")]
    notes.append(f"{nov} in the DataFrame and prepared rows only (from a run 'source' column)")
    for note in notes:
        print(f"  note: {note}")
    sourced_df = run_df.assign(source=run_df["doc_id"].str[:-1])
    ta_dict = record(
        "all",
        "ragnb",
        "evaluate(dicts)",
        lambda: ragnb_plain(qrels_d, run_d, measures, grade_map="trec-dl"),
        rep,
    )
    ta_df = record(
        "all",
        "ragnb",
        "evaluate(DataFrames)",
        lambda: ragnb_plain(qrels_df, sourced_df, [*measures, nov], grade_map="trec-dl"),
        rep,
    )
    mapped = map_grades(qrels_df, "trec-dl")
    full = prepare(qrels_df, run_df)
    full_graded = prepare_sources(mapped, sourced_df)
    graded = [m for m in [*measures, nov] if m.family in (*GRADED_FAMILIES, nov.family)]
    plain = [m for m in measures if m not in graded]
    record(
        "all",
        "ragnb",
        "measures on RankingArrays",
        lambda: {**ragnb_prepared(full, plain), **ragnb_prepared(full_graded, graded)},
        rep,
    )
    goal = "met" if max(ta_dict, ta_df) < 5 else "NOT met"
    print(f"  goal (all measures for {args.queries:,} queries under 5 s): {goal}")
    print(load())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
