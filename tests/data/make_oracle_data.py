"""Write the small TREC qrels and runs that the outside-oracle tests carry (``tests/data/oracle``).

    python tests/data/make_oracle_data.py [--out FOLDER]

Three cases mirror the shared datasets (``../shared/datasets``), so that a clone without them
still compares ragnb with ranx, ir_measures (pytrec_eval, gdeval, ndeval) and the others:

``scifact-like``
    Binary grades (SciFact's 1, and a few judged 0): sparse qrels, runs mostly unjudged.
``dl-like``
    Graded 1/2/3 (TREC Deep Learning: 3 perfect, 2 highly relevant, 1 related; the binary
    measures conventionally count rel >= 2), deep judgement pools.
``dbpedia-like``
    Graded 0/1/2 with explicit zeros (DBpedia-Entity v2), most judged documents grade 0.

Each case is a qrels file (TREC form ``qid 0 docid rel``) and two runs (``qid Q0 docid rank
score tag``): ``bm25.run`` (BM25-like scores) and ``dense.run`` (cosine-like scores), written in
trec_eval's order (score descending, ties by ``docid`` descending) with ranks 1, 2, ... The
hard parts are built in on purpose: tied scores (including ties across the cutoffs 5 and 10 and
ties whose ``docid`` order is not their numeric order), retrieved documents without a judgement
(some judged for another query), queries in the qrels without a relevant document, queries of
the qrels missing from a run, run queries without qrels, runs shorter than 5 and longer than
100 documents, and two runs whose query sets and documents differ partly.

The data are synthetic: ids and scores shaped like the real ones, relevance drawn at random
with a signal, so that the measures take ordinary values. Only the standard library is used
(``random.Random`` with fixed seeds), so the files are the same bytes on every machine;
``tests/test_oracle_data.py`` regenerates them and compares.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field
from pathlib import Path

OUT = Path(__file__).resolve().parent / "oracle"

# Words for DBpedia-style entity names (<dbpedia:Word_Word>).
WORDS = (
    "Ancient Roman Architecture Provence Mercury Planet River Thames Battle Hastings Castle "
    "Cathedral Church Bridge Harbour Museum Gallery Abbey Palace Garden Valley Mountain Lake "
    "Island Railway Station University College School Library Theatre Opera Festival Orchestra "
    "Novel Album Film Series Season Empire Kingdom Republic Province County District Village "
    "Lighthouse Fortress Monastery Temple Market Square Street Tower Canal Forest Desert Coast "
    "Skinner Downs Lehigh Cuisine Rice Dhal Papad Roti Morning Call Indian Vegetables"
).split()
QUALIFIERS = ("(band)", "(film)", "(novel)", "(album)", "(planet)", "(river)", "(ship)")
DBPEDIA_QUERY_PREFIXES = (
    "INEX_LD-2009",
    "INEX_LD-2010",
    "INEX_LD-2012",
    "INEX_XER-",
    "SemSearch_ES-",
    "SemSearch_LS-",
    "QALD2_te-",
    "QALD2_tr-",
    "TREC_Entity-",
)


@dataclass(frozen=True)
class Case:
    """How one case is drawn."""

    name: str
    seed: int
    n_queries: int  # queries in the qrels
    grades: tuple[tuple[int, float], ...]  # (grade, weight) of a judged document
    n_judged: tuple[int, int]  # judged documents per query (inclusive range)
    n_no_relevant: int  # queries whose judgements are all below rel 1 (or 2 for dl-like)
    missing: dict[str, int] = field(default_factory=dict)  # run -> qrels queries left out
    n_extra: int = 5  # run queries without qrels (per run)
    medium: tuple[int, int] = (6, 20)  # run length of most queries
    n_long: int = 2  # queries with 101-130 documents
    n_short: int = 5  # queries with 1-4 documents
    tie_rate: float = 0.08  # chance that a document ties with the one above it


CASES = (
    Case(
        "scifact-like",
        seed=20211,
        n_queries=50,
        grades=((1, 0.8), (0, 0.2)),
        n_judged=(1, 4),
        n_no_relevant=2,
        missing={"bm25": 4, "dense": 3},
        medium=(5, 18),
    ),
    Case(
        "dl-like",
        seed=20192,
        n_queries=30,
        grades=((1, 0.4), (2, 0.44), (3, 0.16)),
        n_judged=(8, 20),
        n_no_relevant=2,  # only grade 1: nothing relevant at rel >= 2
        missing={"bm25": 3, "dense": 2},
        medium=(8, 24),
    ),
    Case(
        "dbpedia-like",
        seed=20173,
        n_queries=30,
        grades=((0, 0.74), (1, 0.18), (2, 0.08)),
        n_judged=(10, 22),
        n_no_relevant=2,  # only grade 0
        missing={"bm25": 3, "dense": 2},
        medium=(8, 24),
    ),
)


# ----------------------------------------------------------------------------- identifiers


def _numeric_ids(rng: random.Random, n: int, digits: tuple[int, int], taken: set[str]) -> list[str]:
    out = []
    while len(out) < n:
        d = rng.randint(*digits)
        s = str(rng.randint(10 ** (d - 1), 10**d - 1))
        if s not in taken:
            taken.add(s)
            out.append(s)
    return out


def _entity_ids(rng: random.Random, n: int, taken: set[str]) -> list[str]:
    out = []
    while len(out) < n:
        words = rng.sample(WORDS, rng.randint(1, 3))
        if rng.random() < 0.15:
            words.append(rng.choice(QUALIFIERS))
        s = "<dbpedia:" + "_".join(words) + ">"
        if s not in taken:
            taken.add(s)
            out.append(s)
    return out


def _doc_ids(case: Case, rng: random.Random, n: int, taken: set[str]) -> list[str]:
    if case.name == "scifact-like":
        return _numeric_ids(rng, n, (4, 9), taken)  # S2ORC-like ids of varied length
    if case.name == "dl-like":
        return _numeric_ids(rng, n, (5, 7), taken)  # MS MARCO passage ids below 8.8M
    return _entity_ids(rng, n, taken)


def _query_ids(case: Case, rng: random.Random, n: int) -> list[str]:
    if case.name == "scifact-like":
        # SciFact's test claims start 1, 3, ...; the ids run to about 1,400
        rest = rng.sample([i for i in range(4, 1400) if i not in (1, 3)], n - 2)
        return ["1", "3", *map(str, rest)]
    if case.name == "dl-like":
        taken: set[str] = set()
        return _numeric_ids(rng, n, (5, 7), taken)
    out: list[str] = []
    while len(out) < n:
        prefix = rng.choice(DBPEDIA_QUERY_PREFIXES)
        number = rng.randint(1, 99) if prefix.endswith("-") else rng.randint(1, 499)
        s = f"{prefix}{number:03d}" if not prefix.endswith("-") else f"{prefix}{number}"
        if s not in out:
            out.append(s)
    return out


# ----------------------------------------------------------------------------- qrels


def _draw_grade(rng: random.Random, grades: tuple[tuple[int, float], ...]) -> int:
    x = rng.random() * sum(w for _, w in grades)
    for g, w in grades:
        x -= w
        if x < 0:
            return g
    return grades[-1][0]


def _relevance_floor(case: Case) -> int:
    """The grade from which a document counts as relevant for ``n_no_relevant``."""
    return 2 if case.name == "dl-like" else 1


def make_qrels(case: Case, rng: random.Random, queries: list[str], taken: set[str]) -> dict:
    """{query: {doc: grade}}; the last ``n_no_relevant`` queries have no relevant document."""
    qrels: dict[str, dict[str, int]] = {}
    floor = _relevance_floor(case)
    for i, q in enumerate(queries):
        n = rng.randint(*case.n_judged)
        docs = _doc_ids(case, rng, n, taken)
        if i >= len(queries) - case.n_no_relevant:
            below = [g for g, _ in case.grades if g < floor]
            grades = [rng.choice(below) for _ in docs]
        else:
            grades = [_draw_grade(rng, case.grades) for _ in docs]
            if max(grades) < 1:  # every other query has something relevant
                grades[rng.randrange(len(grades))] = max(g for g, _ in case.grades)
        qrels[q] = dict(zip(docs, grades, strict=True))
    return qrels


# ----------------------------------------------------------------------------- runs


def _scores(system: str, latents: list[float], rng: random.Random) -> list[float]:
    """Monotone scores for latents sorted descending, rounded to 4 decimals."""
    if system == "bm25":
        top = rng.uniform(9.0, 24.0)
        raw = [max(0.05, top + 2.6 * (x - latents[0])) for x in latents]
    else:
        top = rng.uniform(0.62, 0.88)
        raw = [max(0.0001, top + 0.06 * (x - latents[0])) for x in latents]
    return [round(s, 4) for s in raw]


def _add_ties(scores: list[float], rate: float, rng: random.Random, forced: bool) -> list[float]:
    """Copy the score above with probability ``rate``; with ``forced``, ties across ranks 5/6 and
    10/11 (the cutoffs) where the ranking is that long."""
    out = list(scores)
    for i in range(1, len(out)):
        if rng.random() < rate:
            out[i] = out[i - 1]
        if forced and i in (5, 10):
            out[i] = out[i - 1]
        out[i] = min(out[i], out[i - 1])  # stays non-increasing after a copy above
    return out


def make_run(
    case: Case,
    system: str,
    rng: random.Random,
    queries: list[str],
    qrels: dict[str, dict[str, int]],
    pools: dict[str, list[str]],
    lengths: dict[str, int],
) -> list[tuple[str, str, float]]:
    """(query, doc, score) rows of one system over ``queries``.

    Each query ranks some of its judged documents (relevant ones more often, and higher) and
    documents of its unjudged pool, which both systems share; a few documents judged for
    another query come in as unjudged ones.
    """
    top_grade = max(g for g, _ in case.grades)
    all_judged = sorted({d for docs in qrels.values() for d in docs})
    rows = []
    for k, q in enumerate(queries):
        judged = qrels.get(q, {})
        length = lengths[q]
        latent: dict[str, float] = {}
        for d, g in judged.items():
            if rng.random() < (0.85 if g > 0 else 0.7):
                signal = 1.6 * g / max(top_grade, 1) if g > 0 else 0.4  # pooled: ranked once
                latent[d] = signal + rng.gauss(0.0, 0.9)
        for d in rng.sample(all_judged, 2):
            if d not in judged:
                latent[d] = rng.gauss(-0.2, 1.0)
        pool = pools[q]
        for d in rng.sample(pool, min(len(pool), length + 3)):
            latent.setdefault(d, rng.gauss(-0.3, 1.0))
        ranked = sorted(latent, key=lambda d: (-latent[d], d))[:length]
        scores = _scores(system, [latent[d] for d in ranked], rng)
        scores = _add_ties(scores, case.tie_rate, rng, forced=k % 4 == 0)
        rows += list(zip([q] * len(ranked), ranked, scores, strict=True))
    return rows


def trec_order(rows: list[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """Queries in string order; within each, score descending and ties by doc_id descending."""
    by_query: dict[str, list[tuple[str, str, float]]] = {}
    for row in rows:
        by_query.setdefault(row[0], []).append(row)
    out = []
    for q in sorted(by_query):
        group = sorted(by_query[q], key=lambda r: r[1], reverse=True)
        out += sorted(group, key=lambda r: r[2], reverse=True)  # stable: doc_id desc in ties
    return out


# ----------------------------------------------------------------------------- one case


def make_case(case: Case) -> dict[str, str]:
    """File name -> text of one case."""
    rng = random.Random(case.seed)
    queries = _query_ids(case, rng, case.n_queries)
    taken: set[str] = set()
    qrels = make_qrels(case, rng, queries, taken)
    extra = [q for q in _query_ids(case, rng, case.n_queries + 8) if q not in qrels][:8]
    pools = {q: _doc_ids(case, rng, 150, taken) for q in [*queries, *extra]}
    # lengths per query, shared by both systems: a few long (past 100), a few short (below 5)
    order = [*queries, *extra]
    rng.shuffle(order)
    lengths = {}
    for i, q in enumerate(order):
        if i < case.n_long:
            lengths[q] = rng.randint(101, 130)
        elif i < case.n_long + case.n_short:
            lengths[q] = rng.randint(1, 4)
        else:
            lengths[q] = rng.randint(*case.medium)
    files = {"qrels.txt": "".join(f"{q} 0 {d} {g}\n" for q in qrels for d, g in qrels[q].items())}
    # bm25 leaves out the first judged queries and takes the first extra ones; dense leaves out
    # an overlapping set and takes overlapping extras, so the two query sets differ partly
    judged_order = list(queries[: -case.n_no_relevant])
    rng.shuffle(judged_order)
    n_bm25, n_dense = case.missing["bm25"], case.missing["dense"]
    left_out = {
        "bm25": set(judged_order[:n_bm25]),
        "dense": set(judged_order[n_bm25 - 1 : n_bm25 - 1 + n_dense]),
    }
    added = {"bm25": extra[: case.n_extra], "dense": extra[2 : 2 + case.n_extra]}
    for system in ("bm25", "dense"):
        run_queries = [q for q in queries if q not in left_out[system]] + added[system]
        rows = trec_order(make_run(case, system, rng, run_queries, qrels, pools, lengths))
        lines = []
        rank = 0
        for i, (q, d, s) in enumerate(rows):
            rank = 1 if i == 0 or rows[i - 1][0] != q else rank + 1
            lines.append(f"{q} Q0 {d} {rank} {s:.4f} {system}\n")
        files[f"{system}.run"] = "".join(lines)
    return files


README = """\
# Carried oracle data

Small synthetic TREC qrels and runs, written by `tests/data/make_oracle_data.py` (seeded, standard
library only): the outside-oracle tests run on them when `../shared/datasets` is absent. Do not
edit by hand; change the script and run `python tests/data/make_oracle_data.py`.

| folder | mirrors | grades |
|---|---|---|
| `scifact-like/` | `scifact` | binary (1, a few judged 0) |
| `dl-like/` | `msmarco-dl-subset` | 1, 2, 3 (binary measures at rel >= 2) |
| `dbpedia-like/` | `dbpedia-entity-subset` | 0, 1, 2 |

Each folder holds `qrels.txt` (`qid 0 docid rel`) and two runs, `bm25.run` and `dense.run`
(`qid Q0 docid rank score tag`, trec_eval's order).
"""


def make_all() -> dict[str, str]:
    """Relative path -> text of every carried file."""
    files = {"README.md": README}
    for case in CASES:
        files |= {f"{case.name}/{name}": text for name, text in make_case(case).items()}
    return files


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder to write (default {OUT})")
    args = parser.parse_args(argv)
    for rel, text in make_all().items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        print(f"{path}  {text.count(chr(10))} lines")


if __name__ == "__main__":
    main()
