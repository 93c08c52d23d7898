"""Judge ensembles against human labels: two prompts of the local model, and the local model
with a simulated judge, on graded MS MARCO pairs.

Bergum's post (Vespa blog) answers "Why didn't you try ... an ensemble of judges?" with "That is
certainly an option, to use majority voting for example". This benchmark builds two ensembles with
:class:`ragnb.judge.EnsembleJudge` and prints :func:`ragnb.judge.ensemble_agreement`'s two
tables for each (against human labels: each member and the ensemble; between members):

A. SmolLM2-135M-Instruct (llama.cpp through :class:`ragnb.llm.server.LocalLLMServer`) with the
   ``utility-rubric`` prompt in English and the same rubric in French (both 1-5, ``{"grade":
   n}``), constrained output and ``logprobs=10`` as ``benchmarks/local_judge_agreement.py``;
B. the English-prompt member of A with a simulated judge, :class:`ragnb.judge.NoisyJudge` (the
   human labels plus Gaussian noise, ``--noise-sd``, rounded onto 1-5). It reads the human
   labels, so its own agreement is high by construction: it stands for a better judge, not a
   measurement of one.

Each ensemble is shown under majority vote (ties: the lower grade) and mean grade (rounded, a
half down). Pairs: the labelled pairs of the subset's qrels, ``--n / 3`` drawn at random per
human grade (TREC DL 1, 2, 3; :func:`local_judge_agreement.choose_pairs` with the qrels as the
pool), human grades mapped onto 1-5 by the ``trec-dl`` grade map (3 -> 5, 2 -> 4, 1 -> 3). Every
call goes through the cache and the ledger: B's LLM member and every second combination rule are
served from the cache (a rerun makes no call).

Measured here (``--n 90 --seed 0 --threads 1``, 90 pairs on 33 queries, 176 calls in 353 s at
load average about 3 on 2 cores; a rerun makes no call and prints the same tables): the English
prompt grades 81 of 90 pairs 5, the French one 87 of 90 pairs 1, so the two prompts agree with
each other at chance (kappa 0.015) and a majority with ties to the lower grade is the French
member (kappa 0.004); the mean grade lands on 3 for most pairs (kappa -0.021, quadratic 0.067;
English alone 0.005 and 0.136). With the simulated judge (sd 1, quadratic kappa 0.481 on its
own), the mean ensemble reaches kappa 0.189 (quadratic 0.465), the majority 0.134 (0.430).
A tiny model is no judge to trust; the numbers show the ensemble's path, not a good ensemble.

Run: ``nice .venv/bin/python benchmarks/judge_ensemble.py [--n 90] [--seed 0] [--threads 1]
[--noise-sd 1.0] [--cache-dir DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_judge_agreement import (  # noqa: E402
    DATASET,
    SCALE,
    add_local_arguments,
    labelled_pairs,
    local_ledger,
    local_model_missing,
    make_judge,
    print_load,
)

FLOATS = {"float_format": lambda v: f"{v:.3f}"}


def counts(frame: pd.DataFrame) -> dict[int, int]:
    """How many valid results got each grade."""
    return {int(g): int(c) for g, c in frame["grade"].value_counts().sort_index().items()}


def agreement_tables(
    human: pd.DataFrame, members: list[Any], names: list[str], items: pd.DataFrame
) -> None:
    """Grade ``items`` with the ensemble of ``members`` (majority, then mean) and print the
    tables."""
    from ragnb.judge import EnsembleJudge, ensemble_agreement

    labels = range(SCALE[0], SCALE[1] + 1)
    rows = []
    pairwise = pd.DataFrame()
    for combine in ("majority", "mean"):
        judge = EnsembleJudge(members, combine=combine, tie="lower", names=names)
        start = time.perf_counter()
        out = judge.grade_members(items)
        seconds = time.perf_counter() - start
        if combine == "majority":
            for name, frame in out.members.items():
                print(
                    f"  {name}: {int((frame['attempts'] > 0).sum())} calls sent, "
                    f"{int(frame['cached'].sum())} from the cache, valid "
                    f"{frame['valid'].mean():.1%}, grades {counts(frame)}"
                )
        print(
            f"  ensemble ({combine}, ties lower): {seconds:.0f} s, valid "
            f"{out.grades['valid'].mean():.1%}, grades {counts(out.grades)}"
        )
        report = ensemble_agreement(human, out, labels=labels)
        table = report.table
        if combine == "mean":
            table = table[table["role"] == "ensemble"]
        rows.append(table.assign(judge=table["judge"].replace("ensemble", f"ensemble ({combine})")))
        pairwise = report.pairwise
    print("\nagreement with the human labels (on 1-5):")
    print(pd.concat(rows).to_string(index=False, **FLOATS))
    print("\nagreement between the members:")
    print(pairwise.to_string(index=False, **FLOATS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--n", type=int, default=90, help="pairs to judge (n // 3 per grade)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise-sd", type=float, default=1.0, help="the simulated judge's sd")
    add_local_arguments(parser)
    args = parser.parse_args(argv)

    from ragnb.core.cache import Cache
    from ragnb.judge import NoisyJudge
    from ragnb.llm.server import DEFAULT_MODEL, LocalLLMServer

    if local_model_missing():
        return 2
    t0 = time.perf_counter()
    _, chosen, items, human, _, n_labelled = labelled_pairs(args.dataset, args.n, args.seed)
    print(
        f"{args.dataset.name}: {n_labelled} labelled pairs; judged {len(chosen)} on "
        f"{chosen['query_id'].nunique()} queries (per human grade: "
        f"{chosen['relevance'].value_counts().sort_index().to_dict()}, mapped 1/2/3 -> 3/4/5)"
    )
    out, ledger = local_ledger(args.out, "ragnb-ensemble-")
    cache = Cache(args.cache_dir)
    load = os.getloadavg()
    with LocalLLMServer(DEFAULT_MODEL, n_threads=args.threads) as server:
        print(
            f"local model {server.model}: llama.cpp with {server.n_threads} thread(s), started "
            f"in {server.startup_s:.1f} s"
        )
        english = make_judge(server, cache, ledger, constrained=True)
        french = english.with_prompt("utility-rubric", language="fr")
        print(f"\n== A. {english.judge_id} with utility-rubric in English and in French")
        agreement_tables(human, [english, french], ["local/en", "local/fr"], items)
        simulated = NoisyJudge(human, sd=args.noise_sd, seed=args.seed, scale=SCALE)
        print(f"\n== B. local/en and {simulated.judge_id} (reads the human labels)")
        names = ["local/en", f"noisy(sd={args.noise_sd:g})"]
        agreement_tables(human, [english, simulated], names, items)
    print_load(load, out, t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
