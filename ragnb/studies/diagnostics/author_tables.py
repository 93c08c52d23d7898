"""Author tables for the proper-name bundles: installed-metadata names paired with works.

:func:`default_author_table` takes its works from the ``data/pydocs`` sample (module purposes as
topics, docstring first sentences as titles); :func:`scifact_author_table` from SciFact (claims
as topics, cited papers' titles as works), found under :func:`datasets_root` unless a path is
given. Both assign names from :func:`ragnb.studies.diagnostics.names.installed_author_names`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ragnb.core.paths import display_path
from ragnb.studies.diagnostics.names import (
    assign_authors,
    installed_author_names,
    name_pool_summary,
)

__all__ = ["DATASETS_ENV", "datasets_root", "default_author_table", "scifact_author_table"]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_MODULE_PREFIX = re.compile(
    r"^(?:This module|The functions in this module)\s+"
    r"(?:provides|defines|implements|helps|allow|allows)\s+",
    re.IGNORECASE,
)


_PROPER = frozenset({"python", "java", "javascript", "unicode", "unix", "linux", "windows"})


def _topic_phrase(text: str) -> str:
    """A module's purpose (or a claim) as a topic phrase: "This module provides" removed, final
    period dropped, the first letter lower-cased when the first word is a plain word (letters
    only, lower case after the first, not an acronym or a name such as Python).

    Examples
    --------
    >>> _topic_phrase("This module provides access to the Unicode Character Database.")
    'access to the Unicode Character Database'
    >>> _topic_phrase("Python Codec Registry, API and helpers.")
    'Python Codec Registry, API and helpers'
    """
    phrase = _MODULE_PREFIX.sub("", " ".join(str(text).split())).rstrip(". ")
    first = phrase.split(" ", 1)[0].rstrip(",:;")
    plain = len(first) > 1 and first.isalpha() and first[1:].islower()
    if plain and first.lower() not in _PROPER:
        phrase = phrase[0].lower() + phrase[1:]
    return phrase


def _title_sentence(text: str, min_words: int = 4, max_words: int = 16) -> str | None:
    """The first sentence of a docstring as a work title, or None when it does not read as one
    (too short or long, not capitalised, quotes, arrows, ``=`` or backquotes in it)."""
    first = _SENTENCE_END.split(" ".join(str(text).split()), maxsplit=1)[0].rstrip(". ")
    n = len(first.split())
    if not min_words <= n <= max_words or not first[:1].isupper():
        return None
    if any(mark in first for mark in ('"', "«", "»", "->", "<", ">", "=", "`")):
        return None
    return first


def _project_root() -> Path:
    from ragnb.core.paths import project_root

    return project_root()


#: The environment variable that names the folder of shared datasets (SciFact, MS MARCO, ...).
DATASETS_ENV = "RAGNB_DATASETS"


def datasets_root() -> Path:
    """The folder of shared BEIR datasets that default paths point into.

    ``$RAGNB_DATASETS`` when set, else ``shared/datasets`` beside the project root
    (``../shared/datasets`` from the folder holding ``notebooks/``), where the test suite and
    the notebooks' examples find SciFact.

    Returns
    -------
    Path
    """
    env = os.environ.get(DATASETS_ENV)
    return Path(env) if env else _project_root().parent / "shared" / "datasets"


def default_author_table(
    dataset: str | Path | None = None,
    names: Sequence[str] | None = None,
    *,
    min_diacritics: int = 3,
) -> pd.DataFrame:
    """The default author table: installed-metadata names x ``data/pydocs`` works.

    One row per module of the dataset (95 for the shipped ``pydocs``): ``topic`` is the module's
    purpose (its query, "This module provides" and the final period removed), ``title`` the first
    sentence (4 to 16 words) of the first of its relevant passages that has one (the topic itself
    otherwise), ``author`` a name from :func:`installed_author_names` (names with diacritics
    first, then the others in SHA-256 order, cycling when there are fewer names than rows).

    Parameters
    ----------
    dataset : str or Path, optional
        A BEIR folder whose queries are module purposes; default ``data/pydocs`` of the project.
    names : sequence of str, optional
        The name pool; default :func:`installed_author_names`.
    min_diacritics : int, default 3
        Warn when fewer names carry diacritics.

    Returns
    -------
    DataFrame
        ``author``, ``title``, ``topic``, ``query_id`` (the module's query). ``attrs`` holds
        ``source`` and :func:`name_pool_summary` of the pool under ``names``.

    Warns
    -----
    UserWarning
        When fewer than ``min_diacritics`` names carry diacritics.
    """
    from ragnb.io.files import read_beir

    path = Path(dataset) if dataset is not None else _project_root() / "data" / "pydocs"
    data = read_beir(path)
    pool = list(names) if names is not None else installed_author_names()
    relevant = data.qrels[data.qrels["relevance"] > 0]
    texts = dict(zip(data.corpus["doc_id"], data.corpus["text"], strict=True))
    order = {d: i for i, d in enumerate(data.corpus["doc_id"])}
    by_query: dict[str, list[str]] = {}
    for qid, did in zip(relevant["query_id"], relevant["doc_id"], strict=True):
        by_query.setdefault(qid, []).append(did)
    rows = []
    for qid, text in zip(data.queries["query_id"], data.queries["text"], strict=True):
        if qid not in by_query:
            continue
        topic = _topic_phrase(text)
        title = None
        for did in sorted(by_query[qid], key=lambda d: order.get(d, len(order))):
            title = _title_sentence(texts.get(did, ""))
            if title is not None and title.casefold() != topic.casefold():
                break
            title = None
        rows.append((topic, title or topic, qid))
    authors = assign_authors(len(rows), pool, min_diacritics)
    table = pd.DataFrame(
        [(a, t, p, q) for a, (p, t, q) in zip(authors, rows, strict=True)],
        columns=["author", "title", "topic", "query_id"],
    )
    table.attrs = {"source": f"names: installed metadata; works: {display_path(path)}"}
    table.attrs["names"] = name_pool_summary(pool)
    return table


def scifact_author_table(
    path: str | Path | None = None,
    names: Sequence[str] | None = None,
    *,
    n: int | None = 100,
    split: str = "test",
    min_diacritics: int = 3,
) -> pd.DataFrame:
    """An author table from SciFact: paper titles as works, the citing claim as the topic.

    For each claim of the split (queries order) that cites a paper (qrels), one row: ``title``
    the first cited paper's title, ``topic`` the claim (final period dropped, first letter
    lower-cased unless an acronym), ``author`` from the name pool as in
    :func:`default_author_table`.

    Parameters
    ----------
    path : str or Path, optional
        SciFact in BEIR layout; default ``scifact`` under :func:`datasets_root`
        (``$RAGNB_DATASETS``, else ``../shared/datasets`` beside the project).
    names : sequence of str, optional
        Default :func:`installed_author_names`.
    n : int or None, default 100
        Rows kept (the first ``n`` claims); None keeps all.
    split : str, default "test"
    min_diacritics : int, default 3

    Returns
    -------
    DataFrame
        ``author``, ``title``, ``topic``, ``query_id``, ``doc_id``.

    Raises
    ------
    FileNotFoundError
        If the folder is missing.
    """
    from ragnb.io.files import read_beir

    folder = Path(path) if path is not None else datasets_root() / "scifact"
    data = read_beir(folder, split=split)
    pool = list(names) if names is not None else installed_author_names()
    titles = dict(zip(data.corpus["doc_id"], data.corpus["title"], strict=True))
    cited: dict[str, str] = {}
    for qid, did, rel in zip(
        data.qrels["query_id"], data.qrels["doc_id"], data.qrels["relevance"], strict=True
    ):
        if rel > 0 and qid not in cited and str(titles.get(did, "")).strip():
            cited[qid] = did
    rows = []
    seen_titles: set[str] = set()
    for qid, claim in zip(data.queries["query_id"], data.queries["text"], strict=True):
        did = cited.get(qid)
        if did is None or did in seen_titles:
            continue
        seen_titles.add(did)
        title = " ".join(str(titles[did]).split()).rstrip(". ")
        rows.append((title, _topic_phrase(claim), qid, did))
        if n is not None and len(rows) >= n:
            break
    authors = assign_authors(len(rows), pool, min_diacritics)
    table = pd.DataFrame(
        [(a, *r) for a, r in zip(authors, rows, strict=True)],
        columns=["author", "title", "topic", "query_id", "doc_id"],
    )
    table.attrs = {"source": f"names: installed metadata; works: {display_path(folder)}"}
    table.attrs["names"] = name_pool_summary(pool)
    return table
