"""The qrels and runs the repository carries for the outside-oracle tests (``tests/data/oracle``).

Written by ``tests/data/make_oracle_data.py``; three cases mirror the shared datasets, each with a
qrels file and two runs (``bm25``, ``dense``). Every outside-oracle comparison that reads
``../shared/datasets`` has a twin on these, so that a clone without ``../shared`` runs them all.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ragnb.io.readers import read_qrels, read_run

ORACLE_DIR = Path(__file__).resolve().parent / "data" / "oracle"

#: carried case -> the shared dataset it mirrors
MIRRORS = {
    "scifact-like": "scifact",
    "dl-like": "msmarco-dl-subset",
    "dbpedia-like": "dbpedia-entity-subset",
}
CASES = tuple(MIRRORS)
#: the grade map of each graded case (as for the dataset it mirrors)
GRADE_MAPS = {"dl-like": "trec-dl", "dbpedia-like": "dbpedia-entity"}
SYSTEMS = ("bm25", "dense")


def qrels_path(case: str) -> Path:
    return ORACLE_DIR / case / "qrels.txt"


def run_path(case: str, system: str = "bm25") -> Path:
    return ORACLE_DIR / case / f"{system}.run"


def qrels(case: str) -> pd.DataFrame:
    """Columns ``query_id``, ``doc_id``, ``relevance``, in file order."""
    return read_qrels(qrels_path(case))


def run(case: str, system: str = "bm25") -> pd.DataFrame:
    """Columns ``query_id``, ``doc_id``, ``score``, ``rank`` (trec_eval's order: the file's)."""
    return read_run(run_path(case, system)).drop(columns="tag")


def untied(frame: pd.DataFrame) -> pd.DataFrame:
    """The run with each score replaced by minus its rank (the file's rank is trec_eval's)."""
    return frame.assign(score=-frame["rank"].astype("float64"))
