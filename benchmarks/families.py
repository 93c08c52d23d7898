"""Time the diversity, Compat and C/W/L families against their oracles (pyndeval, ir_measures,
cwl-eval through ir_measures' cwl_eval provider).

Usage (from the repository root)::

    .venv/bin/python benchmarks/families.py                       # 100,000 queries; oracles 2,000
    .venv/bin/python benchmarks/families.py --queries 5000 --oracle-queries 500

Data: ``benchmarks/measures.py``'s synthetic run (100 documents a query, scores with ties) and
qrels (15 judged a query, grades 0-3); for the diversity measures each judgement is given one of
four subtopics, a third of them a second one. ragnb is timed from ``{query_id: {doc_id: value}}``
dicts (the subtopic qrels as a DataFrame: dicts cannot hold subtopics), conversions counted, on
``--queries`` queries, one measure at a time. The oracles are pure Python per query (pyndeval's
C core is called once per query), so they and ragnb are timed again, in the same run, on the
first ``--oracle-queries`` queries, and the ratio printed is ragnb's time over the oracle's there
(below 1: ragnb faster). The means printed beside may differ where tied scores are ranked apart:
ragnb ranks ties by ``doc_id`` descending, pyndeval ascending, ir_measures' compat ascending and
its cwl_eval provider in input order (the tests compare per query on one order). Each timing is
the best of ``--repeat`` calls (one when a call takes more than 30 s). The machine and its load
are printed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measures import as_dicts, best_of, load, machine, synthetic  # noqa: E402

from ragnb.evaluation.evaluate import evaluate  # noqa: E402
from ragnb.io.interop import to_ir_measures_qrels  # noqa: E402

#: ragnb's name -> (ir_measures provider, ir_measures' name); grades 0-3, so max_rel=3
MEASURES = {
    "ERR-IA@20": ("pyndeval", "ERR_IA@20"),
    "nERR-IA@20": ("pyndeval", "nERR_IA@20"),
    "alpha-DCG@20": ("pyndeval", "alpha_DCG@20"),
    "NRBP": ("pyndeval", "NRBP"),
    "nNRBP": ("pyndeval", "nNRBP"),
    "P-IA@20": ("pyndeval", "P_IA@20"),
    "AP-IA": ("pyndeval", "AP_IA"),
    "StRecall@20": ("pyndeval", "StRecall@20"),
    "Compat": ("compat", "Compat(p=0.95)"),
    "INST(max_rel=3)": ("cwl_eval", "INST(max_rel=3)"),
    "INSQ(max_rel=3)": ("cwl_eval", "INSQ(max_rel=3)"),
    "BPM(max_rel=3)@10": ("cwl_eval", "BPM(max_rel=3)@10"),
    "SDCG(max_rel=3)@10": ("cwl_eval", "SDCG(max_rel=3)@10"),
    "NERR8(max_rel=3)@10": ("cwl_eval", "NERR8(max_rel=3)@10"),
    "NERR9(max_rel=3)@10": ("cwl_eval", "NERR9(max_rel=3)@10"),
    "NERR10(max_rel=3)": ("cwl_eval", "NERR10(max_rel=3)"),
    "NERR11(max_rel=3)": ("cwl_eval", "NERR11(max_rel=3)"),
    # ir_measures has no TBG, U or graded RBP: ragnb alone
    "RBP-CWL(max_rel=3)": (None, None),
    "TBG(max_rel=3)": (None, None),
    "U(max_rel=3)": (None, None),
}


def subtopics(qrels: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """One of four subtopics per judgement, a second one for a third of them."""
    rng = np.random.default_rng(seed)
    first = qrels.assign(subtopic=rng.integers(0, 4, len(qrels)).astype(str))
    extra = first[rng.random(len(first)) < 1 / 3]
    second = (extra["subtopic"].astype(int) + rng.integers(1, 4, len(extra))) % 4
    return pd.concat([first, extra.assign(subtopic=second.astype(str))], ignore_index=True)


def head(frame: pd.DataFrame, n: int) -> pd.DataFrame:
    keep = frame["query_id"].drop_duplicates().iloc[:n]
    return frame[frame["query_id"].isin(keep)]


def timers(qrels: pd.DataFrame, sub: pd.DataFrame, run: pd.DataFrame) -> dict[str, Any]:
    """The inputs each tool reads: dicts, the subtopic frame, ir_measures' qrels."""
    return {
        "qrels": as_dicts(qrels, "relevance", int),
        "run": as_dicts(run, "score", float),
        "sub": sub,
        "irm_sub": to_ir_measures_qrels(sub),
    }


def ragnb_call(name: str, data: dict[str, Any]) -> Callable[[], float]:
    qrels = data["sub"] if MEASURES[name][0] == "pyndeval" else data["qrels"]
    return lambda: next(iter(evaluate(qrels, data["run"], [name]).aggregate_to_dict().values()))


def oracle_call(name: str, data: dict[str, Any]) -> Callable[[], float] | None:
    import ir_measures

    provider, theirs = MEASURES[name]
    if provider is None:
        return None
    tool = getattr(ir_measures, provider)
    measure = ir_measures.parse_measure(theirs)
    qrels = data["irm_sub"] if provider == "pyndeval" else data["qrels"]
    return lambda: float(tool.calc_aggregate([measure], qrels, data["run"])[measure])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=100_000, help="default 100000")
    parser.add_argument("--oracle-queries", type=int, default=2000, help="default 2000")
    parser.add_argument("--repeat", type=int, default=3, help="best of R calls (default 3)")
    args = parser.parse_args(argv)
    print("machine:", *machine(), sep="\n  ")
    print(load())
    qrels, run = synthetic(args.queries)
    sub = subtopics(qrels)
    n = args.oracle_queries
    small = timers(head(qrels, n), head(sub, n), head(run, n))
    big = timers(qrels, sub, run)
    ragnb_call("NRBP", timers(head(qrels, 50), head(sub, 50), head(run, 50)))()  # warm-up
    print(
        f"\nragnb on {args.queries:,} queries; ragnb and the oracle on {args.oracle_queries:,} "
        "(ratio = ragnb / oracle there, below 1 = ragnb faster)"
    )
    print(
        f"  {'measure':22s} {'ragnb, all':>11s} {'ragnb':>9s} {'oracle':>9s} {'ratio':>7s}  oracle"
    )
    for name, (provider, _) in MEASURES.items():
        t_big, _ = best_of(ragnb_call(name, big), args.repeat)
        t_small, ours = best_of(ragnb_call(name, small), args.repeat)
        oracle = oracle_call(name, small)
        if oracle is None:
            print(f"  {name:22s} {t_big:10.3f}s {t_small:8.3f}s {'-':>9s} {'-':>7s}  none")
            continue
        t_oracle, theirs = best_of(oracle, args.repeat)
        same = "same mean" if abs(ours - theirs) < 1e-9 else f"means {ours:.6f} vs {theirs:.6f}"
        print(
            f"  {name:22s} {t_big:10.3f}s {t_small:8.3f}s {t_oracle:8.3f}s "
            f"{t_small / t_oracle:7.3f}  {provider} ({same})",
            flush=True,
        )
    print(load())


if __name__ == "__main__":
    main()
