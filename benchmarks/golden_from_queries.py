"""A golden set from queries alone on SciFact, then PPI intervals from a sampled human-label file.

End to end on the real local model:

1. A dataset folder with SciFact's ``corpus.jsonl`` and ``queries.jsonl`` and **no qrels**
   (symbolic links in a temporary folder; nothing copied), and a query file ``queries.csv``
   (``query_id,text``) holding the first ``--queries`` queries of SciFact's test split: the
   ``queries`` parameter of :class:`ragnb.studies.golden.GoldenSetConfig`.
2. :func:`ragnb.studies.golden.pipeline.build_pipeline` with ``judge="local"``
   (SmolLM2-135M-Instruct behind llama.cpp on this machine: a tiny stand-in, not a judge to trust):
   pool (BM25 and BM25 without stemming, top ``--depth``), grade, prune, refine, export the golden
   set as TREC qrels with its manifest.
3. A human-label file drawn by the sampler:
   :func:`ragnb.studies.golden.labelling.calibration_sample` over the judged pairs (stratified by
   judge grade and pool systems, ``--labels`` pairs, at most half the judged pairs so that some stay
   unlabelled), each grade looked up in SciFact's real ``qrels/test.tsv`` (a pair it does not list
   is not relevant), standing in for a person, written through
   :class:`ragnb.studies.golden.labelling.LabelStore` (``human.qrels`` and its ``.sample.jsonl``
   with the inclusion probabilities).
4. The notebook's calibration and PPI on that file (``human_labels``): agreement with bootstrap
   intervals, the judge's bias per grade, Kendall's tau, and per system the PPI++ interval
   beside human-only and judge-only (:func:`ragnb.ppi.ppi_system_estimates`, ``unit="pair"``),
   with how many more labels would halve it.

Every judge call goes through the cache (``--cache-dir``): a second run makes none.

Run: ``nice .venv/bin/python benchmarks/golden_from_queries.py [--queries 6] [--depth 4]
[--labels 200] [--seed 0] [--cache-dir DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact"


def queries_alone(src: Path, folder: Path, n_queries: int) -> tuple[Path, Path]:
    """A BEIR folder without qrels (links to ``src``'s corpus and queries) and a ``queries.csv``
    of the first ``n_queries`` test queries."""
    from ragnb.io.files import read_beir, write_table_csv

    data = folder / "scifact-no-qrels"
    data.mkdir(parents=True, exist_ok=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        link = data / name
        if not link.exists():
            link.symlink_to(src / name)
    test = read_beir(src, split="test").judged_queries.head(n_queries)
    csv = folder / "queries.csv"
    write_table_csv(test[["query_id", "text"]], csv)
    return data, csv


def human_file(gs: object, qrels: pd.DataFrame, path: Path, n: int, seed: int) -> pd.DataFrame:
    """``n`` judged pairs drawn by the sampler, labelled from ``qrels`` (absent: 0), written as a
    LabelStore would (labels file and sample table)."""
    from ragnb.studies.golden.human import draw_sample
    from ragnb.studies.golden.labelling import LabelStore

    judged = gs.judgements  # type: ignore[attr-defined]
    sample = draw_sample(judged[["query_id", "doc_id", "grade", "systems"]], n=n, seed=seed)
    grades = qrels.astype({"query_id": str, "doc_id": str}).set_index(["query_id", "doc_id"])
    store = LabelStore(path)
    store.write_sample(sample)
    for q, d in zip(sample["query_id"], sample["doc_id"], strict=True):
        store.label(q, d, int(grades["relevance"].get((q, d), 0)))
    store.close()
    return sample


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=6, help="test queries (default 6)")
    parser.add_argument("--depth", type=int, default=4, help="pool depth per system (4)")
    parser.add_argument("--labels", type=int, default=200, help="human labels drawn (200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", default="", help="judge cache (default: a temp folder)")
    parser.add_argument("--out", default="", help="run folder (default: a temp folder)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ragnb.io.files import read_beir
    from ragnb.studies.golden import GoldenSetConfig
    from ragnb.studies.golden.evaluation import calibrate_judge, human_labels_for, ppi_for
    from ragnb.studies.golden.human import halving_markdown
    from ragnb.studies.golden.pipeline import build_pipeline

    work = Path(args.out or tempfile.mkdtemp(prefix="golden-from-queries-"))
    data, csv = queries_alone(SCIFACT, work, args.queries)
    config = GoldenSetConfig(
        dataset=str(data),
        queries=str(csv),
        judge="local",
        max_queries=0,
        retrievers=["bm25", "bm25-plain"],
        new_systems=[],
        depth=args.depth,
        min_pool=args.depth,
        top_n=2,
        refine_batch=2,
        refine_max_iterations=1,
        simulate=False,
        seed=args.seed,
        cache_dir=args.cache_dir or str(work / "cache"),
        export_dir=str(work / "run"),
    )
    start = time.perf_counter()
    pipeline = build_pipeline(config, progress=True)
    print(f"dataset: {data} (corpus.jsonl, queries.jsonl, no qrels); {pipeline.dataset.has_qrels=}")
    gs = pipeline.run()
    built = time.perf_counter() - start
    counts = gs.manifest()["counts"]
    g = gs.grades
    print(
        f"golden set from queries alone: {counts['queries']} queries, {counts['candidates']} "
        f"judged pairs ({int(g['valid'].sum())} valid, parse rate {g['valid'].mean():.3f}), "
        f"{counts['refine_calls']} listwise calls, {counts['qrels']} qrels in "
        f"{gs.run_dir / 'golden.qrels'}; built in {built:.0f} s wall"
    )
    print("judge grade distribution:", g["grade"].value_counts().sort_index().to_dict())
    real = read_beir(SCIFACT, split="test").qrels
    n = min(args.labels, len(gs.judgements) // 2)
    if n < args.labels:
        print(
            f"the sampler draws {n} labels, not {args.labels}: {len(gs.judgements)} pairs are "
            "judged, and PPI needs pairs the humans did not label"
        )
    labels_path = work / "human.qrels"
    sample = human_file(gs, real, labels_path, n, args.seed)
    gs = replace(gs, build=replace(gs.build, config=replace(config, human_labels=str(labels_path))))
    human = human_labels_for(gs)
    assert human is not None
    print(f"human labels: {human.source}; {'; '.join(human.notes)}")
    print("human grades:", human.qrels["relevance"].value_counts().sort_index().to_dict())
    print("strata:", sample["stratum"].value_counts().to_dict())
    cal = calibrate_judge(gs, human)
    pd.set_option("display.width", 200)
    print("\nagreement (95% bootstrap intervals over queries):")
    print(cal.intervals().round(3).to_string(index=False))
    print("\nconfusion (human rows, judge columns):")
    print(cal.matrix.to_string())
    print("\njudge bias per human grade:")
    print(cal.bias.round(3).to_string(index=False))
    ti = cal.tau_interval
    tau = "n/a" if cal.tau is None else f"{cal.tau.tau:.3f}"
    iv = "" if ti is None else f" [{ti.low:.3f}, {ti.high:.3f}]"
    print(f"\nsystem ranking Kendall tau ({cal.measure}, {len(cal.systems)} systems): {tau}{iv}")
    table, notes = ppi_for(gs, human)
    cols = [
        "system",
        "measure",
        "n_labelled",
        "n_total",
        "judge_only",
        "human_only",
        "human_ci_low",
        "human_ci_high",
        "ppi",
        "ppi_ci_low",
        "ppi_ci_high",
        "lam",
        "labels_to_halve",
    ]
    print("\nPPI++ per system (95% intervals):")
    print(table[cols].round(3).to_string(index=False) if not table.empty else "(none)")
    for note in notes:
        print(f"note: {note}")
    print("\n" + halving_markdown(table).replace("**", ""))
    print(f"\ntotal wall time {time.perf_counter() - start:.0f} s; run folder {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
