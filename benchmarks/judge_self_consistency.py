"""Self-consistency and the bias audit of the local judge on graded MS MARCO pairs.

SmolLM2-135M-Instruct (llama.cpp through :class:`ragnb.llm.server.LocalLLMServer`, notebook 02's
``local`` judge: ``utility-rubric``, constrained output, ``logprobs=10``) grades each chosen pair
``--samples`` times at ``--temperature`` (:class:`ragnb.judge.SelfConsistentJudge`, each sample
its own cache entry). Printed:

1. the samples' agreement with each other (:func:`ragnb.judge.self_agreement`: mean pairwise
   Cohen's kappa, Krippendorff's alpha over all samples) beside each sample's and the
   majority's agreement with the human labels (:func:`ragnb.judge.ensemble_agreement`);
2. the bias audit (:func:`ragnb.judge.bias_audit`): slopes of the majority grade and of
   (majority - human) against passage length (per 100 words) and query-term overlap, 95%
   bootstrap intervals over queries;
3. the position test (:func:`ragnb.judge.position_audit`): one batch of ``--batch`` labelled
   passages per query (queries with that many), in original, reversed and shuffled orders.

Pairs: ``--n / 3`` labelled pairs per human grade (TREC DL 1, 2, 3;
``local_judge_agreement.choose_pairs``), grades mapped onto 1-5 by the ``trec-dl`` map. A rerun
makes no call (everything is cached) and prints the same tables.

Measured here (``--n 45 --samples 3 --temperature 0.7 --threads 1``, 45 pairs on 24 queries,
135 calls in 721 s on 2 shared cores; details in ``benchmarks/README.md``): mean pairwise kappa
between the samples 0.042, Krippendorff's alpha (ordinal) 0.003, each sample's kappa with the
human labels -0.040 to 0.010 and the majority's -0.018; no bias slope's interval excludes 0;
the listwise answers are the input order every time (correlation 1.000, p 0.0005). A tiny
model samples at chance and its order is the prompt's: the checks catch both.

Run: ``nice .venv/bin/python benchmarks/judge_self_consistency.py [--n 45] [--samples 3]
[--temperature 0.7] [--batch 4] [--max-batches 8] [--threads 1] [--cache-dir DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import local_judge_agreement as lja  # noqa: E402

FLOATS = {"float_format": lambda v: f"{v:.3f}"}


def position_batches(
    qrels: pd.DataFrame, queries: pd.DataFrame, text: pd.Series, size: int, most: int
) -> list[dict]:
    """One batch of ``size`` labelled passages per query (the first ``most`` queries that have
    as many), in doc-id order."""
    by_id = queries.set_index("query_id")["text"]
    out = []
    for qid, rows in qrels.sort_values(["query_id", "doc_id"]).groupby("query_id"):
        ids = [str(d) for d in rows["doc_id"].head(size)]
        if len(ids) == size and qid in by_id.index:
            out.append(
                {
                    "query_id": str(qid),
                    "doc_ids": ids,
                    "query": by_id[qid],
                    "passages": [text[d] for d in ids],
                }
            )
        if len(out) == most:
            break
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=lja.DATASET)
    parser.add_argument("--n", type=int, default=45, help="pairs to judge (n // 3 per grade)")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--batch", type=int, default=4, help="passages per position batch")
    parser.add_argument("--max-batches", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    lja.add_local_arguments(parser)
    args = parser.parse_args(argv)

    from ragnb.core.cache import Cache
    from ragnb.judge import (
        SelfConsistentJudge,
        bias_audit,
        ensemble_agreement,
        position_audit,
        self_agreement,
    )
    from ragnb.llm.server import DEFAULT_MODEL, LocalLLMServer

    if lja.local_model_missing():
        return 2
    t0 = time.perf_counter()
    data, chosen, items, human, text, _ = lja.labelled_pairs(args.dataset, args.n, args.seed)
    labels = list(range(lja.SCALE[0], lja.SCALE[1] + 1))
    print(
        f"{args.dataset.name}: {len(chosen)} pairs on {chosen['query_id'].nunique()} queries, "
        f"{args.samples} samples each at temperature {args.temperature:g}"
    )
    out, ledger = lja.local_ledger(args.out, "ragnb-consistency-")
    load = os.getloadavg()
    with LocalLLMServer(DEFAULT_MODEL, n_threads=args.threads) as server:
        judge = lja.make_judge(server, Cache(args.cache_dir), ledger, constrained=True)
        sc = SelfConsistentJudge(judge, samples=args.samples, temperature=args.temperature)
        start = time.perf_counter()
        graded = sc.grade_members(items)
        seconds = time.perf_counter() - start
        sent = sum(int((f["attempts"] > 0).sum()) for f in graded.members.values())
        print(f"{sent} calls sent in {seconds:.0f} s; valid {graded.grades['valid'].mean():.1%}")
        print("\nthe samples with each other:")
        print(self_agreement(graded, labels=labels).to_string(index=False, **FLOATS))
        print("\nagainst the human labels (on 1-5):")
        table = ensemble_agreement(human, graded, labels=labels).table
        print(table.to_string(index=False, **FLOATS))
        majority = graded.grades.merge(items, on=["query_id", "doc_id"])
        print("\nbias audit of the majority grade (95% intervals over queries):")
        audit = bias_audit(majority, human=human, seed=args.seed)
        print(audit.drop(columns=["ci"]).to_string(index=False, **FLOATS))
        qrels = data.qrels[data.qrels["relevance"] > 0]
        batches = position_batches(qrels, data.queries, text, args.batch, args.max_batches)
        start = time.perf_counter()
        pos = position_audit(judge, batches, seed=args.seed)
        print(
            f"\nposition test: {pos.n_batches} batches of {args.batch} passages "
            f"({time.perf_counter() - start:.0f} s, {pos.n_invalid} invalid answers)"
        )
        print(pos.summary.to_string(index=False, **FLOATS))
        print(f"correlation {pos.correlation:.3f}, randomization p {pos.p_value:.4f}")
    lja.print_load(load, out, t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
