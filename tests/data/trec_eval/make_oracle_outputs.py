"""Write trec_eval 10.0's output on the two carried runs of ``tests/data/oracle/dl-like``.

``tests/test_trec_eval.py`` checks that ``ragnb trec-eval -q -c -m all_trec`` prints the same
bytes (``out.dl-like.*.aqc``) and that ``ragnb evaluate`` gives every per-query value to 1e-9
(``out17.dl-like.*.aqc``). The files were made with trec_eval built by ``make`` from commit
f4253652c8efd0d86ddffd0d163cc0a0f813111a of https://github.com/usnistgov/trec_eval (17 June
2026, "Updating CHANGELOG for version 10.0"), once unpatched and once with ``%.17g`` in place
of ``%6.4f`` in ``meas_print_single.c`` and ``meas_print_final.c`` (every digit of each
double; ``sed -i 's/%6.4f/%.17g/g'`` on the two files), with::

    python tests/data/trec_eval/make_oracle_outputs.py --trec-eval /path/to/trec_eval \
        --trec-eval-17 /path/to/widened/trec_eval

``-c`` because each run lacks a few queries of the qrels (trec_eval 10.0 stops otherwise).
The case has grades 1-3 and no grade-0 line, as the shared ``msmarco-dl-subset``.

With ``--prefs`` (``--trec-eval`` alone needed) it writes instead a seeded random case of
preference judgements, ``prefs.random`` (judgment groups of one subgroup and of several,
consistent partial orders, ties, repeated lines), the same judgements as qrels
``qrels_prefs.random`` (the group in the second column), a run ``prefs.random.run`` (tied
scores, unjudged documents) and the same run without one query, ``prefs.random.trunc``, and
trec_eval 10.0's output of each line of
:data:`PREFS_LINES` (``tests/test_trec_eval_prefs.py`` checks ``ragnb trec-eval`` prints the
same bytes)::

    python tests/data/trec_eval/make_oracle_outputs.py --trec-eval /path/to/trec_eval --prefs
"""

from __future__ import annotations

import argparse
import random
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASE = HERE.parent / "oracle" / "dl-like"
ARGS = ["-q", "-c", "-m", "all_trec"]
#: carried run -> the output file written here (``out17.`` in place of ``out.`` for the
#: widened build)
OUTPUTS = {"bm25.run": "out.dl-like.bm25.aqc", "dense.run": "out.dl-like.dense.aqc"}
#: trec_eval's arguments on the random preference case -> the output file written here
PREFS_LINES = {
    "-q -m all_prefs -R prefs prefs.random prefs.random.run": "out.prefs.random.q",
    "-q -c -M6 -m all_prefs -R prefs prefs.random prefs.random.trunc": "out.prefs.random.qcM",
    "-q -m all_prefs -R qrels_prefs qrels_prefs.random prefs.random.run": (
        "out.qrels_prefs.random.q"
    ),
}


def _judgements(rng: random.Random, qid: str) -> list[str]:
    """One query's preference lines ``qid jg jsg docno rel_level``: groups of one subgroup
    (levels 0-3, some halves, a repeated line) and of several (each subgroup a few documents
    of one hidden order, so that no group contradicts itself; 0 for the same documents)."""
    pool = [f"D{i:02d}" for i in range(rng.randint(2, 12))]
    lines = []
    for g in range(rng.randint(1, 3)):
        docs = rng.sample(pool, rng.randint(2, len(pool)))
        hidden = {d: rng.choice([0, 0, 1, 2, 3, 4]) for d in docs}
        n_sub = 1 if rng.random() < 0.5 else rng.randint(2, 3)
        for s in range(n_sub):
            sub = docs if n_sub == 1 else rng.sample(docs, rng.randint(2, len(docs)))
            for d in sub:
                level = hidden[d] + (0.5 if n_sub == 1 and hidden[d] and rng.random() < 0.2 else 0)
                lines.append(f"{qid} U{g} S{s} {d} {level:g}")
        if n_sub == 1 and rng.random() < 0.3:
            lines.append(lines[-1])
    return lines


def write_prefs_case(seed: int = 10) -> None:
    """The random preference case: ``prefs.random``, ``qrels_prefs.random``,
    ``prefs.random.run`` and ``prefs.random.trunc`` (without query ``Q5``)."""
    rng = random.Random(seed)
    prefs, run = [], []
    for q in range(8):
        qid = f"Q{q}"
        lines = _judgements(rng, qid)
        prefs += lines
        judged = sorted({line.split()[3] for line in lines})
        docs = rng.sample(judged, rng.randint(0, len(judged))) + [f"X{i}" for i in range(3)]
        rng.shuffle(docs)
        for rank, d in enumerate(docs, start=1):
            run.append(f"{qid} Q0 {d} {rank} {rng.choice([3, 2.5, 2, 1])} random")
    rng.shuffle(prefs)
    (HERE / "prefs.random").write_text("\n".join(prefs) + "\n")
    qrels = [" ".join([f[0], f[1], f[3], f[4]]) for f in (line.split() for line in prefs)]
    unique = list(dict.fromkeys(qrels))  # a qrels file judges a document once per group
    (HERE / "qrels_prefs.random").write_text("\n".join(unique) + "\n")
    (HERE / "prefs.random.run").write_text("\n".join(run) + "\n")
    trunc = [line for line in run if not line.startswith("Q5 ")]
    (HERE / "prefs.random.trunc").write_text("\n".join(trunc) + "\n")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--trec-eval", type=Path, required=True, help="the trec_eval binary")
    p.add_argument("--trec-eval-17", type=Path, help="the widened build")
    p.add_argument("--prefs", action="store_true", help="the preference case only")
    args = p.parse_args(argv)
    if args.prefs:
        write_prefs_case()
        for line, name in PREFS_LINES.items():
            out = subprocess.run(
                [str(args.trec_eval.resolve()), *line.split()],
                cwd=HERE,
                check=True,
                capture_output=True,
            )
            (HERE / name).write_bytes(out.stdout)
            print(f"{name}: {len(out.stdout.splitlines())} lines")
        return
    if args.trec_eval_17 is None:
        p.error("--trec-eval-17 is required (unless --prefs)")
    for binary, prefix in ((args.trec_eval, "out."), (args.trec_eval_17, "out17.")):
        for run, name in OUTPUTS.items():
            out = subprocess.run(
                [str(binary), *ARGS, "qrels.txt", run], cwd=CASE, check=True, capture_output=True
            )
            name = name.replace("out.", prefix, 1)
            (HERE / name).write_bytes(out.stdout)
            print(f"{name}: {len(out.stdout.splitlines())} lines")


if __name__ == "__main__":
    main()
