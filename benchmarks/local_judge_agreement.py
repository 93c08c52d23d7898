"""How far does the local model agree with human assessors? SmolLM2-135M against TREC DL labels.

The judge ragnb starts with ``judge="local"`` (SmolLM2-135M-Instruct, Q4_1 GGUF, served by
llama.cpp through :class:`ragnb.llm.server.LocalLLMServer`; a tiny stand-in, not a judge to
trust) grades (query, passage) pairs of the graded MS MARCO subset
(``../shared/datasets/msmarco-dl-subset``, TREC DL labels 1 related, 2 highly relevant, 3
perfectly relevant; the subset holds no labelled 0) with the ``utility-rubric`` prompt (1-5),
constrained output (a JSON schema admitting only ``{"grade": n}``, n in 1-5) and ``logprobs=10``
(the expected grade from the grade tokens' probabilities, Zhuang et al., NAACL 2024). Human
labels are put on the judge's scale by ragnb's ``trec-dl`` grade map (3 -> 5, 2 -> 4, 1 -> 3).

Pairs: the union of the top 10 of six systems (bm25, bm25-plain, bm25 with b=0, bm25 with
k1=0.5, dense all-MiniLM-L6-v2, hybrid RRF of bm25 and dense) on the subset's 43 judged queries,
restricted to the pairs with a human label, then ``--n / 3`` drawn at random per human grade
(stratified: each grade weighs the same in the agreement statistics). Every call goes through
the cache (a second run makes no call) and the ledger.

Printed: the confusion matrix (human by judge, on 1-5), exact agreement, Cohen's kappa unweighted,
linear and quadratic with bootstrap intervals over queries, Krippendorff's alpha (ordinal,
interval), the judge's bias per human grade, the parse rate, judgements per second, and the systems'
nDCG@10 under human labels vs judge grades on the judged pairs with Kendall's tau and its interval
(:func:`ragnb.studies.golden.calibrate`); once with the sampled grade and once with the expected
grade rounded to the nearest integer. ``--unconstrained`` also grades the same pairs without the
schema (one reminder after an unparsable answer) for comparison.

Last, the system tau of judges that read nothing (every pair 5, every pair 3, random grades).
The systems are scored on the judged pairs only, and which sampled pairs a system retrieves
already orders the systems: measured here, a constant judge reaches tau 1.0 on the MS MARCO
subset (which labels no pair 0) and 0.867 on the DBpedia-Entity subset (``--dataset
../shared/datasets/dbpedia-entity-subset --grade-map dbpedia-entity``: 0, 1, 2 -> 1, 4, 5). A
judge's system tau means something only above these baselines; a telling one needs every
pair of the systems' top 10 judged, not a stratified sample. The per-label statistics are the
evidence here.

Reference points (other models, other data; context, not targets): Thomas et al., "Large
language models can accurately predict searcher preferences" (SIGIR 2024): Cohen's kappa up to
about 0.64 against TREC assessors for their best GPT-4 prompt; UMBRELA (Upadhyay et al., 2024,
arXiv 2406.06519): fair per-label agreement (kappa about 0.3-0.5 on TREC DL 2019-2023) with high
system-ranking correlation (Kendall's tau about 0.8-0.9) against human qrels.

Run: ``nice .venv/bin/python benchmarks/local_judge_agreement.py [--n 330] [--seed 0]
[--unconstrained] [--n-boot 1000] [--cache-dir DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO.parent / "shared" / "datasets" / "msmarco-dl-subset"
SCALE = (1, 5)
REFERENCES = (
    "Thomas et al. (SIGIR 2024), GPT-4, best prompt, TREC assessors: Cohen's kappa up to ~0.64",
    "UMBRELA (Upadhyay et al. 2024), GPT-4o, TREC DL 2019-2023: fair per-label agreement "
    "(kappa ~0.3-0.5), system-ranking Kendall tau ~0.8-0.9 against human qrels",
)


def system_runs(data: Any, cache: Any, depth: int = 10) -> dict[str, pd.DataFrame]:
    """The six systems' top ``depth`` on the judged queries (dense embeddings through ``cache``)."""
    from ragnb.retrievers.retrieve import BM25Retriever, HybridRetriever, make_retriever

    queries = data.judged_queries
    lexical = {
        "bm25": BM25Retriever(),
        "bm25-plain": BM25Retriever(stemmer=None, stopwords=None, name="bm25-plain"),
        "bm25-b0": BM25Retriever(b=0.0, name="bm25-b0"),
        "bm25-k0.5": BM25Retriever(k1=0.5, name="bm25-k0.5"),
    }
    runs = {name: r.index(data.corpus).retrieve(queries, k=depth) for name, r in lexical.items()}
    dense = make_retriever("dense", cache=cache, progress=False).index(data.corpus)
    runs["dense"] = dense.retrieve(queries, k=depth)
    runs["hybrid"] = HybridRetriever(lexical["bm25"], dense, depth=100).retrieve(queries, k=depth)
    return runs


def choose_pairs(qrels: pd.DataFrame, runs: dict[str, pd.DataFrame], n: int, seed: int) -> Any:
    """``n // 3`` labelled pool pairs per human grade (all of a grade when it has fewer).

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id``, ``relevance`` (the human grade, 1-3), sorted.
    """
    pool = pd.concat([r[["query_id", "doc_id"]] for r in runs.values()]).drop_duplicates()
    labelled = pool.merge(qrels[["query_id", "doc_id", "relevance"]], on=["query_id", "doc_id"])
    grades = sorted(labelled["relevance"].unique())
    per = max(1, n // len(grades))
    rng = np.random.default_rng(seed)
    parts = []
    for g in grades:
        rows = labelled[labelled["relevance"] == g].sort_values(["query_id", "doc_id"])
        take = rng.choice(len(rows), size=min(per, len(rows)), replace=False)
        parts.append(rows.iloc[np.sort(take)])
    chosen = pd.concat(parts).sort_values(["query_id", "doc_id"]).reset_index(drop=True)
    return chosen, len(pool), len(labelled)


def labelled_pairs(dataset: Path, n: int, seed: int) -> tuple[Any, Any, Any, Any, Any, int]:
    """``n // 3`` labelled pairs per human grade of ``dataset``'s qrels (the qrels as the pool).

    Returns
    -------
    data, chosen, items, human, text, n_labelled
        The dataset (:func:`ragnb.io.files.read_beir`, split ``test``), the chosen pairs
        (:func:`choose_pairs`), the judge's items (:func:`pair_items`), the chosen labels mapped
        onto 1-5 by the ``trec-dl`` map, each document's text (Series by doc id), and the
        labelled pairs chosen from.
    """
    from ragnb.io.files import read_beir
    from ragnb.measures import map_grades
    from ragnb.retrievers.retrieve import doc_texts

    data = read_beir(dataset, split="test")
    pool = {"qrels": data.qrels[["query_id", "doc_id"]]}
    chosen, _, n_labelled = choose_pairs(data.qrels, pool, n, seed)
    text = pd.Series(doc_texts(data.corpus), index=data.corpus["doc_id"])
    items = pair_items(chosen, data.queries, text)
    return data, chosen, items, map_grades(chosen, "trec-dl"), text, n_labelled


def add_local_arguments(parser: argparse.ArgumentParser) -> None:
    """``--cache-dir``, ``--out`` and ``--threads`` of the benchmarks of the local judge."""
    parser.add_argument("--cache-dir", default=None, help="ragnb cache (default: ~/.cache/ragnb)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the ledger")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")


def print_load(before: tuple[float, float, float], out: Path, t0: float) -> None:
    """The closing line of a benchmark of the local judge: the load average before and now,
    the cores, the ledger's folder and the seconds since ``t0``."""
    after = os.getloadavg()
    print(
        f"\nload average {before[0]:.1f} before, {after[0]:.1f} after, {os.cpu_count()} cores; "
        f"ledger in {out}; total {time.perf_counter() - t0:.0f} s"
    )


def local_model_missing() -> bool:
    """Whether the local model cannot run here (then the reason is printed on stderr)."""
    from ragnb.llm.server import local_llm_unavailable

    reason = local_llm_unavailable()
    if reason is not None:
        print(f"the local model cannot run here: {reason}", file=sys.stderr)
    return reason is not None


def pair_items(chosen: pd.DataFrame, queries: pd.DataFrame, text: pd.Series) -> pd.DataFrame:
    """The chosen pairs with their ``query`` (from ``queries``) and ``passage`` (``text``, a
    Series doc_id -> passage text)."""
    by_id = queries.set_index("query_id")["text"]
    return chosen.assign(query=chosen["query_id"].map(by_id), passage=chosen["doc_id"].map(text))


def local_ledger(out: Path | None, prefix: str) -> tuple[Path, Any]:
    """The output folder (``out``, else a new temporary one named ``prefix...``) and a ledger in
    it that prices the local model at zero."""
    from ragnb.llm.ledger import Ledger
    from ragnb.llm.prices import ModelPrice
    from ragnb.llm.server import DEFAULT_MODEL

    folder = Path(out) if out else Path(tempfile.mkdtemp(prefix=prefix))
    ledger = Ledger(folder / "ledger.jsonl")
    ledger.prices.prices.setdefault(
        DEFAULT_MODEL, ModelPrice(DEFAULT_MODEL, 0.0, 0.0, ledger.prices.as_of, "local model")
    )
    return folder, ledger


def make_judge(server: Any, cache: Any, ledger: Any, *, constrained: bool) -> Any:
    """OpenAIJudge on the local server: constrained + logprobs=10 (notebook 02's ``local``
    judge), or unconstrained with one reminder."""
    from ragnb.judge import OpenAIJudge

    options: dict[str, Any] = (
        {"constrained": "json_object_schema", "logprobs": 10, "request_params": {"max_tokens": 64}}
        if constrained
        else {"request_params": {"max_tokens": 16}}
    )
    return OpenAIJudge(
        **server.client_options(),  # as many requests at once as the server has slots
        cache=cache,
        ledger=ledger,
        progress=False,
        **options,
    )


def grade(judge: Any, items: pd.DataFrame) -> dict[str, Any]:
    """Grade ``items``; return the frame and the rates (judgements/s over the fresh calls)."""
    start = time.perf_counter()
    frame = judge.grade_many(items)
    seconds = time.perf_counter() - start
    fresh = int((~frame["cached"]).sum())
    return {
        "frame": frame,
        "seconds": seconds,
        "fresh": fresh,
        "per_s": fresh / seconds if fresh else float("nan"),
        "parsed": float((frame["valid"] & ~frame["reminded"]).mean()),
        "valid": float(frame["valid"].mean()),
        "expected": float(frame.loc[frame["valid"], "expected_grade"].notna().mean()),
    }


def judge_qrels(frame: pd.DataFrame, column: str = "grade") -> pd.DataFrame:
    """Valid grades as qrels; ``column="expected_grade"`` rounds the expected grade."""
    ok = frame[frame["valid"] & frame[column].notna()]
    values = np.rint(ok[column].astype(float)).astype(np.int64)
    return pd.DataFrame({"query_id": ok["query_id"], "doc_id": ok["doc_id"], "relevance": values})


def print_calibration(title: str, cal: Any) -> None:
    """The calibration's numbers, as text."""
    print(f"\n== {title}: {len(cal.pairs)} pairs, {cal.pairs['query_id'].nunique()} queries")
    print("confusion matrix (rows: human grade mapped onto 1-5, columns: judge grade):")
    print(cal.matrix.to_string())
    iv = cal.intervals().set_index("statistic")
    for stat in ("exact agreement", "within one grade", "kappa", "kappa (linear)"):
        r = iv.loc[stat]
        print(f"  {stat:<20} {r['value']:7.3f}  [{r['low']:.3f}, {r['high']:.3f}]")
    for stat in ("kappa (quadratic)", "alpha (ordinal)", "alpha (interval)"):
        r = iv.loc[stat]
        print(f"  {stat:<20} {r['value']:7.3f}  [{r['low']:.3f}, {r['high']:.3f}]")
    print("judge bias per human grade (mean judge grade minus human grade):")
    print(cal.bias.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"systems, {cal.measure} on the judged pairs:")
    print(cal.systems.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    ti = cal.tau_interval
    band = "" if ti is None else f"  95% interval over queries [{ti.low:.3f}, {ti.high:.3f}]"
    print(f"  Kendall tau-b of the system rankings {cal.tau.tau:.3f}{band}")
    for note in cal.notes:
        print(f"  note: {note}")


def print_baselines(human: pd.DataFrame, runs: dict[str, pd.DataFrame]) -> None:
    """Kendall's tau of judges that read nothing: a constant grade, and random grades.

    Every judged pair here carries a human grade of at least 1 ("related"), so a judge that
    calls every pair relevant already orders the systems much as the humans do: the system
    tau above is worth only what it adds to these.
    """
    from ragnb.judge.calibration import system_agreement

    rng = np.random.default_rng(0)
    print("\nbaselines (judges that read nothing), Kendall tau-b of the system rankings:")
    for name, grades in (
        ("every pair 5", np.full(len(human), 5)),
        ("every pair 3", np.full(len(human), 3)),
        ("uniform random 1-5 (seed 0)", rng.integers(1, 6, len(human))),
    ):
        fake = human.assign(relevance=grades)
        _, tau = system_agreement(human, fake, runs)
        print(f"  {name:<28} tau {tau.tau:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--n", type=int, default=330, help="pairs to judge (n // 3 per grade)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--grade-map", default="trec-dl", help="ragnb grade map onto 1-5 (dbpedia-entity: 0-2)"
    )
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--unconstrained", action="store_true", help="also grade unconstrained")
    parser.add_argument("--cache-dir", default=None, help="ragnb cache (default: ~/.cache/ragnb)")
    parser.add_argument("--out", type=Path, default=None, help="folder for ledger and tables")
    parser.add_argument(
        "--threads", type=int, default=None, help="llama.cpp threads (default: the server's)"
    )
    args = parser.parse_args(argv)

    from ragnb.core.cache import Cache
    from ragnb.io.files import read_beir
    from ragnb.judge.calibration import calibrate
    from ragnb.llm.server import DEFAULT_MODEL, LocalLLMServer
    from ragnb.measures import map_grades
    from ragnb.studies.golden.judging import LOCAL_MODEL_NAME

    if local_model_missing():
        return 2
    t0 = time.perf_counter()
    cache = Cache(args.cache_dir)
    data = read_beir(args.dataset, split="test")
    runs = system_runs(data, cache)
    chosen, n_pool, n_labelled = choose_pairs(data.qrels, runs, args.n, args.seed)
    corpus = data.corpus.set_index("doc_id")
    text = (corpus["title"].fillna("") + " " + corpus["text"].fillna("")).str.strip()
    items = pair_items(chosen, data.queries, text)
    human = map_grades(chosen, args.grade_map)
    print(
        f"{args.dataset.name}: {len(data.judged_queries)} judged queries, pool of the top 10 of "
        f"{len(runs)} systems = {n_pool} pairs, {n_labelled} with a human label; judged "
        f"{len(chosen)} (per human grade: "
        f"{chosen['relevance'].value_counts().sort_index().to_dict()}), systems ready in "
        f"{time.perf_counter() - t0:.0f} s"
    )
    out, ledger = local_ledger(args.out, "ragnb-agreement-")
    load = os.getloadavg()
    results = {}
    with LocalLLMServer(DEFAULT_MODEL, n_threads=args.threads) as server:
        print(
            f"judge: {LOCAL_MODEL_NAME}; llama.cpp with {server.n_threads} thread(s), started "
            f"in {server.startup_s:.1f} s"
        )
        modes = [True, False] if args.unconstrained else [True]
        for constrained in modes:
            judge = make_judge(server, cache, ledger, constrained=constrained)
            results[constrained] = grade(judge, items)
    load_after = os.getloadavg()
    print(
        f"load average {load[0]:.1f} before, {load_after[0]:.1f} after, {os.cpu_count()} cores "
        "(other work shares the machine)"
    )
    for constrained, r in results.items():
        label = "constrained + logprobs=10" if constrained else "unconstrained (1 reminder)"
        rate = "all from the cache" if not r["fresh"] else f"{r['per_s']:.2f} judgements/s"
        print(
            f"{label:<28} {rate} ({r['fresh']} fresh calls, {r['seconds']:.0f} s), first "
            f"answers parsed {r['parsed']:.1%}, valid {r['valid']:.1%}, expected grade on "
            f"{r['expected']:.1%} of the valid"
        )
    frame = results[True]["frame"]
    frame.to_csv(out / "grades.csv", index=False)
    for title, column in (
        ("sampled grade", "grade"),
        ("expected grade, rounded", "expected_grade"),
    ):
        cal = calibrate(
            human,
            judge_qrels(frame, column),
            runs,
            labels=range(SCALE[0], SCALE[1] + 1),
            n_boot=args.n_boot,
            seed=args.seed,
        )
        print_calibration(f"{title} (constrained + logprobs=10)", cal)
        cal.export(out / column.replace("_", "-"), bias_table=True)
    if False in results:
        cal = calibrate(
            human,
            judge_qrels(results[False]["frame"]),
            runs,
            labels=range(SCALE[0], SCALE[1] + 1),
            n_boot=args.n_boot,
            seed=args.seed,
        )
        print_calibration("sampled grade (unconstrained)", cal)
    print_baselines(human, runs)
    print("\nreference points (other models and data, context only):")
    for line in REFERENCES:
        print(f"  {line}")
    print(f"\nledger and tables in {out}; total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
