"""Coverage and width of PPI / PPI++ intervals against human-only ones on the graded subsets.

Usage (from the repository root)::

    .venv/bin/python benchmarks/ppi_coverage.py                 # 1000 draws, seed 0
    .venv/bin/python benchmarks/ppi_coverage.py --draws 300 --seed 1

For the MS MARCO DL and DBpedia-Entity subsets of ``../shared/datasets``: three BM25 systems
(Lucene BM25 with stemming; without stemming or stop words; k1 = 0.9, b = 0.3) retrieve the top
10 for every query with qrels. The qrels are the truth; a simulated judge (the noise model
of :class:`ragnb.judge.NoisyJudge` with ``noise="confusion"``, :func:`ragnb.ppi.confusion_grades`;
lenient: +1 grade 25%, +2 5%, -1 15%, seeded) labels every pair, so judge-only estimates are
biased upwards. In each draw ``n`` pairs of the population (the pairs the systems rank in their
top 10) reveal their true grade and the human-only, PPI (lam = 1) and PPI++ (cross-fitted lam)
95% intervals are computed
(:func:`ragnb.ppi.coverage_simulation`, ``unit="pair"``) for ``P@10`` (``P(rel=2)@10`` on MS
MARCO, whose grade 1 means "related") and ``nDCG@10`` over the judge's ideal DCG@10 (the linear
form of nDCG per pair). Printed per dataset, measure, ``n`` and method: coverage and interval
width averaged over the systems, for simple random samples and for samples stratified by the
judge's grade (equal allocation). A last table estimates trec_eval's nDCG@10 and RA-nWG@10 with
whole queries as the unit (``unit="query"``, n = 10, 20, 30 queries).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import pandas as pd

from ragnb.io.files import read_beir
from ragnb.measures import map_grades
from ragnb.ppi import coverage_simulation
from ragnb.retrievers.retrieve import BM25Retriever

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
SUBSETS = {
    "msmarco-dl-subset": ("P(rel=2)@10", "trec-dl"),
    "dbpedia-entity-subset": ("P@10", "dbpedia-entity"),
}


def systems(path: Path) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    ds = read_beir(path)
    queries = ds.queries[ds.queries["query_id"].isin(ds.qrels["query_id"])]
    retrievers = {
        "bm25": BM25Retriever(),
        "bm25-nostem": BM25Retriever(stemmer=None, stopwords=None),
        "bm25-k0.9-b0.3": BM25Retriever(k1=0.9, b=0.3),
    }
    runs = {name: r.index(ds.corpus).retrieve(queries, k=10) for name, r in retrievers.items()}
    return ds.qrels, runs


def table(sim: pd.DataFrame) -> pd.DataFrame:
    cov = sim.pivot_table(index=["measure", "n"], columns="method", values="coverage")
    wid = sim.pivot_table(index=["measure", "n"], columns="method", values="mean_width")
    out = pd.concat({"coverage": cov, "width": wid}, axis=1)
    out[("width", "ppi++/human")] = wid["ppi++"] / wid["human"]
    return out.round(3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pd.set_option("display.width", 160)
    print(
        f"python {platform.python_version()}, {platform.machine()}, "
        f"load average {os.getloadavg()[0]:.2f}; draws {args.draws}, seed {args.seed}, "
        "nominal coverage 0.95"
    )
    for name, (precision, grade_map) in SUBSETS.items():
        qrels, runs = systems(DATASETS / name)
        for sampling in ("srs", "stratified"):
            start = time.perf_counter()
            sim = coverage_simulation(
                qrels,
                runs,
                [precision, "nDCG@10"],
                ndcg_ideal="judge",
                n_draws=args.draws,
                seed=args.seed,
                sampling=sampling,
            )
            took = time.perf_counter() - start
            first = sim.drop_duplicates(["system", "measure"])
            print(
                f"\n== {name}: {len(runs)} systems, {sim['n_total'].iloc[0]} pairs, "
                f"sampling={sampling} ({took:.1f} s)"
            )
            if sampling == "srs":
                print(first[["system", "measure", "truth", "judge_only"]].round(4).to_string())
            print(table(sim).to_string())
        mapped = map_grades(qrels, grade_map)
        sim = coverage_simulation(
            mapped,
            runs,
            ["nDCG@10", "RA-nWG@10"],
            unit="query",
            n_labels=(10, 20, 30),
            n_draws=args.draws,
            seed=args.seed,
        )
        print(f"\n== {name}: unit=query, {sim['n_total'].iloc[0]} queries (grades mapped 1-5)")
        print(table(sim).to_string())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
