"""Do synthetic queries rank systems as real ones do? SciFact with its queries hidden.

SciFact's corpus (``../shared/datasets/scifact``, 5,183 abstracts) is given to the synthetic query
pipeline of :mod:`ragnb.studies.retrieval.querygen` as if it had no queries: ``--n`` passages are
sampled (seed ``--seed``), the local model (SmolLM2-135M-Instruct, Q4_1 GGUF, served by llama.cpp
through :class:`ragnb.llm.server.LocalLLMServer`; a tiny stand-in) writes one query per passage, the
styles keyword, question and conversational in turn, each answer held to its style's shape by a
llama.cpp grammar. Generation stops when ``--budget`` seconds are spent (the passages not reached
get no query; a rerun finds the answers so far in the cache). A query is kept when BM25 (Lucene
defaults, ragnb's ``bm25``) ranks its source passage in the top ``--k`` (round-trip filter;
Promptagator, Dai et al. 2022; InPars, Bonifacio et al. 2022) and it is not a near-duplicate
(word-set Jaccard >= 0.8 on normalised text) of a kept one. The kept queries are written as a BEIR
folder in a temporary directory (the corpus linked, never copied), with qrels pairing each query
with its source passage (grade 1).

Then four systems (bm25, bm25-plain: no stemming, no stop words; dense: all-MiniLM-L6-v2;
hybrid: RRF of bm25 and dense) are evaluated on the synthetic queries and on SciFact's 300
real test queries, and the system ranking on each is compared by Kendall's tau, per measure
(nDCG@10, R@100). Note the bias: the filter's retriever is bm25, one of the compared systems,
and every synthetic query has exactly one relevant passage.

Printed: the generation rate, the filter's pass rate, the duplicate share, the kept queries per
style, a few examples, the two tables of scores and ranks, and tau per measure.

Run: ``nice .venv/bin/python benchmarks/synthetic_queries.py [--n 200] [--budget 900]
[--seed 0] [--k 20] [--threads N] [--cache-dir DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO.parent / "shared" / "datasets" / "scifact"
MEASURES = ["nDCG@10", "R@100"]
SYSTEMS = ["bm25", "bm25-plain", "dense", "hybrid"]


def systems(corpus: pd.DataFrame, cache: Any) -> dict[str, Any]:
    """The four retrievers, indexed on ``corpus`` (the dense index shared with hybrid)."""
    from ragnb.embed import make_embedder
    from ragnb.retrievers.retrieve import BM25Retriever, DenseRetriever, HybridRetriever

    bm25 = BM25Retriever().index(corpus)
    plain = BM25Retriever(stemmer=None, stopwords=None, name="bm25-plain").index(corpus)
    dense = DenseRetriever(make_embedder("all-MiniLM-L6-v2", cache=cache, progress=False))
    dense.index(corpus)
    hybrid = HybridRetriever(bm25, dense, rrf_k=60, depth=100)
    return {"bm25": bm25, "bm25-plain": plain, "dense": dense, "hybrid": hybrid}


def scores(retrievers: dict[str, Any], queries: pd.DataFrame, qrels: pd.DataFrame) -> pd.DataFrame:
    """Mean nDCG@10 and R@100 per system (rows) on ``queries``."""
    from ragnb.evaluation.evaluate import evaluate

    rows = {}
    for name, r in retrievers.items():
        run = r.retrieve(queries, k=100)
        rows[name] = evaluate(qrels, run, MEASURES).aggregate_to_dict()
    return pd.DataFrame(rows).T[MEASURES]


def generate(args: argparse.Namespace, corpus: pd.DataFrame, out: Path) -> Any:
    """The synthetic queries, through the local model (cache, ledger in ``out``)."""
    from ragnb.core.cache import Cache
    from ragnb.llm import ChatClient
    from ragnb.llm.ledger import Ledger
    from ragnb.llm.server import LocalLLMServer
    from ragnb.llm.transport import RetryPolicy
    from ragnb.studies.retrieval.querygen import QueryGenerator, synthesize_queries

    with LocalLLMServer(n_threads=args.threads) as server:
        options = server.client_options()
        options["retry"] = RetryPolicy(timeout=600.0)  # 64-token answers on a busy CPU
        client = ChatClient(
            **options,
            cache=Cache(args.cache_dir or None),
            ledger=Ledger(out / "ledger.jsonl"),
            progress=False,
        )
        gen = QueryGenerator(client, grammar=True, max_tokens=64)
        start = time.monotonic()
        result = synthesize_queries(
            gen,
            corpus,
            n=args.n,
            seed=args.seed,
            k=args.k,
            time_budget_s=args.budget,
            chunk=5,
        )
        took = time.monotonic() - start
        ledger = client.ledger.frame()
    return result, took, ledger


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="passages sampled (one query each)")
    parser.add_argument("--budget", type=float, default=900.0, help="generation seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=20, help="round-trip depth")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    parser.add_argument("--cache-dir", default="")
    parser.add_argument("--out", default="", help="BEIR folder (default: a temporary one)")
    args = parser.parse_args(argv)

    from ragnb.core.cache import Cache
    from ragnb.io.files import read_beir
    from ragnb.judge.agreement import kendall_tau
    from ragnb.studies.retrieval.querygen import is_synthetic, synthetic_notice, write_synthetic

    real = read_beir(DATASET, split="test")
    out = Path(args.out or tempfile.mkdtemp(prefix="ragnb-synthetic-scifact-"))
    out.mkdir(parents=True, exist_ok=True)
    result, took, ledger = generate(args, real.corpus, out)
    stats = result.stats()
    sent = stats["generated"] - stats["cached"]
    print(
        f"passages sent {stats['generated']} of {args.n} in {took:.0f} s wall "
        f"({result.filter['seconds']:.0f} s generating); new calls {sent}, cached {stats['cached']}"
    )
    if sent:
        print(
            f"rate: {sent / result.filter['seconds'] * 60:.1f} new queries per minute, "
            f"{result.filter['seconds'] / sent:.1f} s per call"
        )
    print(
        f"ledger: {len(ledger)} lines, statuses {ledger['status'].value_counts().to_dict()}; "
        f"tokens in {stats['input_tokens']}, out {stats['output_tokens']}"
    )
    print(f"valid answers {stats['valid']} of {stats['generated']} (failed {stats['failed']})")
    print(
        f"round-trip pass rate (bm25 top {args.k}): {stats['round_trip']}/{stats['valid']} = "
        f"{stats['pass_rate']:.3f}"
    )
    print(
        f"duplicate share among passed: {stats['duplicates']}/{stats['round_trip']} = "
        f"{stats['duplicate_share']:.3f}"
    )
    print(f"kept {stats['kept']}, by style {stats['by_style']}")
    c = result.candidates
    print(
        "invalid reasons:", c.loc[~c["valid"], "reason"].str[:50].value_counts().head(5).to_dict()
    )
    for _, row in c[c["kept"]].groupby("style").head(2).iterrows():
        print(
            f"  [{row['style']}] doc {row['doc_id']} rank {row['source_rank']:.0f}: {row['text']}"
        )
    for _, row in c[c["valid"] & ~c["round_trip"]].head(3).iterrows():
        print(f"  [dropped {row['style']}] doc {row['doc_id']}: {row['text']}")

    folder = write_synthetic(result, out, corpus_path=DATASET / "corpus.jsonl")
    syn = read_beir(folder, split="synthetic")
    print(
        f"written {folder} (corpus linked: {(folder / 'corpus.jsonl').is_symlink()}); "
        f"is_synthetic={is_synthetic(folder)}"
    )
    print(synthetic_notice(folder))
    if stats["kept"] < 2:
        print("too few synthetic queries to rank systems")
        return 1

    t0 = time.monotonic()
    retrievers = systems(real.corpus, Cache(args.cache_dir or None))
    on_syn = scores(retrievers, syn.judged_queries, syn.qrels)
    on_real = scores(retrievers, real.judged_queries, real.qrels)
    print(f"\nretrieval and evaluation: {time.monotonic() - t0:.0f} s")
    for name, table in (("synthetic", on_syn), ("real test", on_real)):
        n_q = len(syn.judged_queries) if name == "synthetic" else len(real.judged_queries)
        ranks = table.rank(ascending=False, method="min").astype(int).add_suffix(" rank")
        print(f"\n{name} queries ({n_q}):")
        print(pd.concat([table.round(4), ranks], axis=1).to_string())
    print("\nKendall tau (synthetic vs real system ranking):")
    for m in MEASURES:
        tau = kendall_tau(on_syn[m].to_numpy(), on_real[m].to_numpy())
        order_s = " > ".join(on_syn[m].sort_values(ascending=False).index)
        order_r = " > ".join(on_real[m].sort_values(ascending=False).index)
        print(
            f"  {m}: tau = {tau.tau:.3f} (p = {tau.p_value:.3f}); synthetic {order_s}; "
            f"real {order_r}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
