"""Proper-name margins: five-candidate bundles and the Delta margins of Dallaire section 4.2.

Each query asks "Which works by [AUTHOR] on [TOPIC]?" and comes with five candidates:

==== ====== ===== ==============================================================
ID   author topic what the candidate is
==== ====== ===== ==============================================================
C1   yes    yes   the author's work on the topic
C2a  no     yes   C1's text with impostor A's name instead of the author's
C2b  no     yes   C1's text with impostor B's name instead of the author's
C3   yes    no    the author with a work on another topic
C4   no     no    another name with a work on another topic
==== ====== ===== ==============================================================

and three margins per query, ``s`` the cosine of the query's and a candidate's embeddings::

    Delta_name  = s(Q, C1) - max(s(Q, C2a), s(Q, C2b))
    Delta_topic = s(Q, C1) - s(Q, C3)
    Delta_both  = s(Q, C1) - s(Q, C4)

A :class:`Bundle` keeps the pieces the texts are rendered from (templates, label, names, titles), so
each ablation of :mod:`ragnb.studies.diagnostics.ablations` is a pure function that changes pieces
and returns a new bundle; :attr:`Bundle.query` and :attr:`Bundle.candidates` render them.

Author tables
-------------
Bundles are drawn from an *author table*, a DataFrame with columns ``author``, ``title``,
``topic`` (one work per row). :func:`default_author_table` builds one from real data only:
person names from the metadata of the installed Python distributions
(:func:`installed_author_names`) and topics and titles from the embedded ``data/pydocs`` dataset
(a module's purpose as the topic, the first sentence of one of its docstrings as the work's
title). The pairing of names with works is synthetic, as it is in the paper. The pairing puts the
names that carry diacritics first, so each of them authors a work (``strip_diacritics`` can only
change bundles that hold such names). :func:`scifact_author_table` pairs the same names with
SciFact paper titles (topic: the claim that cites the paper).

Runs and jitter
---------------
:func:`make_bundles` draws, for run ``r`` and row ``i``, the impostors, C3's and C4's works and
the phrasing variants from ``numpy.random.default_rng([seed, r, i])``: a run gets fresh impostors,
the same table, pool, ``seed`` and ``run`` give the same bundles, and the draws do not depend on
the language (the EN and FR bundles of a run hold the same names and works: they are paired).

References
----------
Dallaire, "Practical RAG evaluation" (arXiv 2511.09545), section 4.1 (bundle table, sampling and
runs) and section 4.2 (margins).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from importlib import metadata
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from ragnb.core.validation import l2_normalise, require_columns
from ragnb.errors import InputError

__all__ = [
    "CANDIDATE_IDS",
    "LANGUAGES",
    "Bundle",
    "bundles_frame",
    "has_diacritics",
    "installed_author_names",
    "make_bundles",
    "name_margins",
    "name_pool_summary",
    "parse_person_names",
    "strip_marks",
    "Embedder",
    "assign_authors",
    "check_language",
    "margin_frame",
    "name_key",
    "similarities",
]

Language = Literal["en", "fr"]
LANGUAGES: tuple[str, ...] = ("en", "fr")
CANDIDATE_IDS: tuple[str, ...] = ("C1", "C2a", "C2b", "C3", "C4")
# which of the bundle's three titles each candidate carries: C1, C2a, C2b the query's work
_TITLE_OF = (0, 0, 0, 1, 2)
TABLE_COLUMNS = ("author", "title", "topic")


class Embedder(Protocol):
    """What the margins need of an embedder: ``embed(texts, kind) -> (n, dim)`` vectors."""

    def embed(self, texts: Sequence[str], kind: Any = ...) -> np.ndarray: ...


# ----------------------------------------------------------------------------- templates

# Query phrasings: variant 0 is the paper's canonical template; the others are the "light
# template jitter" of section 4.1. French puts a space before "?" (French typography).
QUERY_TEMPLATES: dict[str, tuple[str, ...]] = {
    "en": (
        "Which works by {author} on {topic}?",
        "Which works by {author} are about {topic}?",
        "What works by {author} deal with {topic}?",
    ),
    "fr": (
        "Quels travaux de {author} sur {topic} ?",
        "Quels sont les travaux de {author} sur {topic} ?",
        "Quelles publications de {author} portent sur {topic} ?",
    ),
}
# The work segment of a candidate; the author segment is "{label}{author}." (section 4.2's
# example of author_position_shift: "Author: X. Research paper: 'Y'.").
WORK_TEMPLATES: dict[str, tuple[str, ...]] = {
    "en": (
        'Research paper: "{title}".',
        'Paper: "{title}".',
        'Research article: "{title}".',
    ),
    "fr": (
        "Article de recherche : « {title} ».",
        "Publication : « {title} ».",
        "Article scientifique : « {title} ».",
    ),
}
# The explicit field label that remove_label deletes ("Author:" / "Auteur:", section 4.2).
LABELS: dict[str, str] = {"en": "Author: ", "fr": "Auteur : "}


def check_language(language: str) -> str:
    """``language`` when it is one of :data:`LANGUAGES`.

    Parameters
    ----------
    language : str
        A language code such as ``"en"`` or ``"fr"``; it selects the templates, the labels
        and the noise phrases of a bundle.

    Returns
    -------
    str
        ``language`` itself, unchanged.

    Raises
    ------
    InputError
        Naming the languages known.
    """
    if language not in LANGUAGES:
        raise InputError(f"language must be one of {list(LANGUAGES)}, got {language!r}")
    return language


# ----------------------------------------------------------------------------- the bundle


@dataclass(frozen=True)
class Bundle:
    """One query and its five candidates, kept as the pieces their texts are rendered from.

    Attributes
    ----------
    bundle_id : str
        ``"r<run>-<row>"``, e.g. ``"r03-0042"``: the run and the table row.
    run : int
    language : {"en", "fr"}
    author : str
        The true author as in the table (provenance; not changed by ablations).
    impostors : tuple of (str, str)
        Impostor A and B as drawn (provenance).
    other_author : str
        C4's author as drawn (provenance).
    topic : str
        The query's topic (rendered into the query).
    titles : tuple of (str, str, str)
        Titles of the query's work (C1, C2a, C2b), of C3's work and of C4's work.
    other_topics : tuple of (str, str)
        Topics of C3's and C4's works (provenance).
    query_template : str
        With ``{author}`` and ``{topic}``.
    work_template : str
        With ``{title}``.
    label : str
        The author field's label, ``"Author: "`` or ``"Auteur : "`` (``""`` once removed).
    author_first : bool
        Render the author segment before the work segment.
    query_name : str
        The author's name as the query shows it.
    candidate_names : tuple of 5 str
        The name each candidate shows, in :data:`CANDIDATE_IDS` order.
    ablation : str
        ``"base"`` or the names of the ablations applied, joined by ``"+"``.

    Examples
    --------
    >>> b = Bundle.build("Ada Lovelace", ("Alan Turing", "Grace Hopper"), "Kurt Gödel",
    ...                  topic="analytical engines", titles=("Notes", "Poems", "Proofs"))
    >>> b.query
    'Which works by Ada Lovelace on analytical engines?'
    >>> b.candidates[1]
    'Research paper: "Notes". Author: Alan Turing.'
    """

    bundle_id: str
    run: int
    language: str
    author: str
    impostors: tuple[str, str]
    other_author: str
    topic: str
    titles: tuple[str, str, str]
    other_topics: tuple[str, str]
    query_template: str
    work_template: str
    label: str
    author_first: bool
    query_name: str
    candidate_names: tuple[str, str, str, str, str]
    ablation: str = "base"

    @classmethod
    def build(
        cls,
        author: str,
        impostors: tuple[str, str],
        other_author: str,
        *,
        topic: str,
        titles: tuple[str, str, str],
        other_topics: tuple[str, str] = ("", ""),
        language: str = "en",
        query_variant: int = 0,
        work_variant: int = 0,
        bundle_id: str = "r00-0000",
        run: int = 0,
    ) -> Bundle:
        """A base bundle from names, topic and titles with the given phrasing variants."""
        check_language(language)
        if len(impostors) != 2 or len(titles) != 3:
            raise InputError("a bundle needs two impostors and three titles")
        names = (author, impostors[0], impostors[1], author, other_author)
        return cls(
            bundle_id=bundle_id,
            run=int(run),
            language=language,
            author=author,
            impostors=(impostors[0], impostors[1]),
            other_author=other_author,
            topic=topic,
            titles=(titles[0], titles[1], titles[2]),
            other_topics=(other_topics[0], other_topics[1]),
            query_template=QUERY_TEMPLATES[language][query_variant],
            work_template=WORK_TEMPLATES[language][work_variant],
            label=LABELS[language],
            author_first=False,
            query_name=author,
            candidate_names=names,
        )

    @property
    def query(self) -> str:
        """The query text."""
        return self.query_template.format(author=self.query_name, topic=self.topic)

    def _candidate(self, i: int) -> str:
        work = self.work_template.format(title=self.titles[_TITLE_OF[i]])
        author = f"{self.label}{self.candidate_names[i]}."
        return f"{author} {work}" if self.author_first else f"{work} {author}"

    @property
    def candidates(self) -> tuple[str, str, str, str, str]:
        """The five candidate texts, in :data:`CANDIDATE_IDS` order."""
        c = [self._candidate(i) for i in range(5)]
        return (c[0], c[1], c[2], c[3], c[4])

    @property
    def texts(self) -> tuple[str, ...]:
        """The query and the five candidates (what an ablation may change)."""
        return (self.query, *self.candidates)

    def with_names(
        self, query_name: str | None = None, candidate_names: Sequence[str] | None = None
    ) -> Bundle:
        """A copy showing other names (None keeps the current ones)."""
        names = self.candidate_names if candidate_names is None else tuple(candidate_names)
        if len(names) != 5:
            raise InputError(f"a bundle has 5 candidates, got {len(names)} names")
        return replace(
            self,
            query_name=self.query_name if query_name is None else query_name,
            candidate_names=(names[0], names[1], names[2], names[3], names[4]),
        )

    def tagged(self, ablation: str) -> Bundle:
        """A copy whose ``ablation`` records one more ablation."""
        tag = ablation if self.ablation == "base" else f"{self.ablation}+{ablation}"
        return replace(self, ablation=tag)


def bundles_frame(bundles: Iterable[Bundle]) -> pd.DataFrame:
    """The bundles' texts, one row per bundle, for reading.

    Returns
    -------
    DataFrame
        ``bundle_id``, ``run``, ``language``, ``ablation``, ``author``, ``topic``, ``query``,
        ``C1``, ``C2a``, ``C2b``, ``C3``, ``C4``.
    """
    rows = []
    for b in bundles:
        row: dict[str, Any] = {
            "bundle_id": b.bundle_id,
            "run": b.run,
            "language": b.language,
            "ablation": b.ablation,
            "author": b.author,
            "topic": b.topic,
            "query": b.query,
        }
        row.update(dict(zip(CANDIDATE_IDS, b.candidates, strict=True)))
        rows.append(row)
    columns = ["bundle_id", "run", "language", "ablation", "author", "topic", "query"]
    return pd.DataFrame(rows, columns=[*columns, *CANDIDATE_IDS])


# ----------------------------------------------------------------------------- names


def strip_marks(text: str) -> str:
    """Remove combining marks: NFD, drop category ``Mn``, NFC.

    Letters that do not decompose (``Ł``, ``ø``, ``œ``) are kept.

    Examples
    --------
    >>> strip_marks("Sebastián Ramírez, Łukasz")
    'Sebastian Ramirez, Łukasz'
    """
    decomposed = unicodedata.normalize("NFD", text)
    kept = "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
    return unicodedata.normalize("NFC", kept)


def has_diacritics(name: str) -> bool:
    """True when :func:`strip_marks` changes ``name`` (what ``strip_diacritics`` acts on)."""
    return strip_marks(name) != unicodedata.normalize("NFC", name)


# Words that make a metadata entry an organisation, a team or a placeholder, not a person.
_ORG_WORDS = frozenset(
    """team teams developers developer development dev devs contributors contributor community
    project foundation authority software services service corporation corp inc ltd llc gmbh
    labs lab group university institute organization organisation maintainers maintainer authors
    others unknown consortium systems technologies company collective the core packaging
    support""".split()
)
_SUFFIXES = frozenset({"inc", "inc.", "ltd", "ltd.", "llc", "gmbh", "corp", "corp.", "co", "co."})
PARTICLES = frozenset(
    "van von de der den du da di la le del della dos das ter ten bin al y".split()
)
_TOKEN = re.compile(r"^[^\W\d_](?:[^\W\d_]|['’\-.])*$")


def _person_like(name: str) -> bool:
    tokens = name.split()
    if not 2 <= len(tokens) <= 4:
        return False
    if any(t.lower().strip(".") in _ORG_WORDS for t in tokens):
        return False
    words = 0
    for t in tokens:
        if not _TOKEN.match(t):
            return False
        if t.lower() in PARTICLES:
            continue
        if not t[0].isupper():
            return False
        if len(t.rstrip(".")) >= 2 and not t.endswith("."):
            words += 1
    last = tokens[-1]
    return words >= 2 and last.lower() not in PARTICLES and not last.endswith(".")


def parse_person_names(value: str) -> list[str]:
    """Person names ("First Last") found in one ``Author``/``Maintainer`` metadata value.

    E-mail addresses (``<...>`` or bare), parenthetical remarks, quoted nicknames, "et al.",
    and anything after "->" are dropped; the value is split on commas, semicolons, "and", "&"
    and "/"; organisations (a word such as *Team*, *Developers*, *Foundation*, *Inc.*, or a
    segment followed by a company suffix) and single words are dropped. A kept name has 2 to 4
    tokens, at least two of them words of two or more letters, each token capitalised or a
    particle (*van*, *de*, ...), and ends with a family name.

    Examples
    --------
    >>> parse_person_names('"Guido van Rossum, Łukasz Langa" <x@y.org>, Hugging Face, Inc.')
    ['Guido van Rossum', 'Łukasz Langa']
    >>> parse_person_names("The Pandas Development Team <pandas-dev@python.org>")
    []
    """
    text = unicodedata.normalize("NFC", str(value))
    text = text.split("->")[0]
    text = re.sub(r"<[^>]*>", " ", text)
    text = re.sub(r"\([^)]*\)", " ", text)
    text = re.sub(r"(?<!\w)'[^'\s][^']*'(?!\w)", " ", text)  # quoted nicknames: Jeffrey 'Alex'
    text = text.replace('"', " ")
    text = re.sub(r"\bet al\.?", " ", text)
    segments = [s.strip() for s in re.split(r",|;|/|&|\band\b", text)]
    names: list[str] = []
    skip_previous = False
    for seg in reversed(segments):  # a company suffix ("Inc.") disqualifies the segment before
        seg = " ".join(seg.split())
        if seg.lower() in _SUFFIXES:
            skip_previous = True
            continue
        if skip_previous:
            skip_previous = False
            continue
        if not seg or "@" in seg:
            continue
        if _person_like(seg):
            names.append(seg)
    return names[::-1]


METADATA_FIELDS = ("Author", "Author-email", "Maintainer", "Maintainer-email")


def name_key(name: str) -> str:
    """The key under which two spellings of a name are the same: diacritics stripped, casefolded.

    Parameters
    ----------
    name : str
        A person's name as written, e.g. in a package's ``Author`` field.

    Returns
    -------
    str
        ``name`` without combining marks (:func:`strip_marks`), casefolded.

    Examples
    --------
    >>> name_key("Zoë Müller") == name_key("zoe muller")
    True
    """
    return strip_marks(name).casefold()


def installed_author_names(
    distributions: Iterable[metadata.Distribution] | None = None,
) -> list[str]:
    """Person names from the metadata of the installed Python distributions.

    Reads the ``Author``, ``Author-email``, ``Maintainer`` and ``Maintainer-email`` fields of
    every distribution (:func:`importlib.metadata.distributions`), keeps the person-like names
    (:func:`parse_person_names`), removes duplicates (same letters ignoring case and diacritics;
    the first spelling in sorted order is kept) and sorts.

    Parameters
    ----------
    distributions : iterable of importlib.metadata.Distribution, optional
        Default: every distribution importable in this environment.

    Returns
    -------
    list of str
        Sorted by the name without diacritics, case-folded.
    """
    dists = metadata.distributions() if distributions is None else distributions
    found: dict[str, str] = {}
    values = []
    for dist in dists:
        meta = dist.metadata
        for field in METADATA_FIELDS:
            values.extend(meta.get_all(field) or [])
    for value in sorted(set(values)):
        for name in parse_person_names(value):
            key = name_key(name)
            if key not in found or name < found[key]:
                found[key] = name
    return sorted(found.values(), key=lambda n: (name_key(n), n))


def name_pool_summary(names: Sequence[str]) -> dict[str, Any]:
    """Counts for a report: names, names with diacritics (and which), non-ASCII names."""
    marked = [n for n in names if has_diacritics(n)]
    return {
        "n_names": len(names),
        "n_with_diacritics": len(marked),
        "with_diacritics": marked,
        "n_non_ascii": sum(1 for n in names if not n.isascii()),
    }


def _sha_order(names: Sequence[str]) -> list[str]:
    """Names with diacritics first, then the rest; each group in SHA-256 order (stable)."""

    def key(n: str) -> tuple[bool, str]:
        return (not has_diacritics(n), hashlib.sha256(n.encode()).hexdigest())

    return sorted(names, key=key)


def assign_authors(n_rows: int, names: Sequence[str], min_diacritics: int) -> list[str]:
    """The author of each of ``n_rows`` bundles, cycling through ``names`` in a fixed order.

    Parameters
    ----------
    n_rows : int
        Bundles to give an author.
    names : sequence of str
        The name pool, at least 4 (an author, two impostors and C4's author).
    min_diacritics : int
        Names with diacritics below which a warning says that ``strip_diacritics`` will change
        few bundles.

    Returns
    -------
    list of str
        Length ``n_rows``; the order is the names' SHA-256 order, so it does not depend on the
        pool's order.

    Raises
    ------
    InputError
        When the pool holds fewer than 4 names.

    Warns
    -----
    UserWarning
        When fewer than ``min_diacritics`` names carry diacritics.
    """
    if len(names) < 4:
        raise InputError(
            f"the name pool holds {len(names)} person names; bundles need at least 4 "
            "(an author, two impostors and C4's author)"
        )
    n_marked = sum(1 for n in names if has_diacritics(n))
    if n_marked < min_diacritics:
        warnings.warn(
            f"only {n_marked} of {len(names)} names carry diacritics; strip_diacritics will "
            "change few bundles (add names to the pool with names=...)",
            UserWarning,
            stacklevel=3,
        )
    ordered = _sha_order(names)
    return [ordered[i % len(ordered)] for i in range(n_rows)]


def _check_table(table: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"the author table must be a DataFrame, got {type(table).__name__}")
    require_columns(table, TABLE_COLUMNS, "the author table")
    out = table.reset_index(drop=True)
    for col in TABLE_COLUMNS:
        values = out[col]
        bad = values.isna() | (values.astype(str).str.strip() == "")
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"row {row} has an empty {col}", column=col)
    if out["topic"].nunique() < 3:
        raise InputError(
            "the author table needs at least 3 distinct topics (C1, C3 and C4 differ in topic)",
            column="topic",
        )
    return out


# ----------------------------------------------------------------------------- bundles


def _draw_names(rng: np.random.Generator, author: str, pool: Sequence[str], k: int) -> list[str]:
    key = name_key(author)
    choices = [n for n in pool if name_key(n) != key]
    if len(choices) < k:
        raise InputError(f"the name pool holds too few names besides {author!r} to draw {k}")
    picked = rng.choice(len(choices), size=k, replace=False)
    return [choices[int(i)] for i in picked]


def make_bundles(
    table: pd.DataFrame,
    *,
    language: str = "en",
    seed: int = 0,
    run: int = 0,
    names: Sequence[str] | None = None,
    jitter: bool = True,
) -> list[Bundle]:
    """One bundle per row of an author table, for one run.

    Per row ``i`` (its own generator ``default_rng([seed, run, i])``): impostors A and B and
    C4's author are three distinct names of the pool other than the author; C3's work is another
    work of the same author on another topic when the table has one, else a work of another row
    on another topic; C4's work is a work on a third topic; with ``jitter`` the query and
    candidate phrasings are drawn from :data:`QUERY_TEMPLATES` and :data:`WORK_TEMPLATES` (the
    five candidates of a bundle share one phrasing, so C2a and C2b differ from C1 only by name).

    Parameters
    ----------
    table : DataFrame
        ``author``, ``title``, ``topic``.
    language : {"en", "fr"}, default "en"
    seed : int, default 0
    run : int, default 0
    names : sequence of str, optional
        The impostor pool; default: the table's authors and :func:`installed_author_names`.
    jitter : bool, default True
        False uses phrasing variant 0 (the paper's canonical templates) everywhere.

    Returns
    -------
    list of Bundle
        In table order.

    Raises
    ------
    InputError
        On a malformed table, an unknown language, or a pool of fewer than 4 names.
    """
    check_language(language)
    table = _check_table(table)
    authors = table["author"].astype(str).tolist()
    titles = table["title"].astype(str).tolist()
    topics = table["topic"].astype(str).tolist()
    pool = list(dict.fromkeys([*authors, *(installed_author_names() if names is None else names)]))
    if len(pool) < 4:
        raise InputError(f"the name pool holds {len(pool)} names; bundles need at least 4")
    by_author: dict[str, list[int]] = {}
    for i, a in enumerate(authors):
        by_author.setdefault(name_key(a), []).append(i)
    n_q, n_w = len(QUERY_TEMPLATES[language]), len(WORK_TEMPLATES[language])
    out = []
    for i, (author, title, topic) in enumerate(zip(authors, titles, topics, strict=True)):
        rng = np.random.default_rng([int(seed), int(run), i])
        imp_a, imp_b, other = _draw_names(rng, author, pool, 3)
        own = [j for j in by_author[name_key(author)] if topics[j] != topic]
        elsewhere = [j for j in range(len(topics)) if topics[j] != topic]
        c3 = own or elsewhere
        j3 = c3[int(rng.integers(len(c3)))]
        third = [j for j in elsewhere if topics[j] != topics[j3]]
        j4 = third[int(rng.integers(len(third)))]
        qv = int(rng.integers(n_q)) if jitter else 0
        wv = int(rng.integers(n_w)) if jitter else 0
        out.append(
            Bundle.build(
                author,
                (imp_a, imp_b),
                other,
                topic=topic,
                titles=(title, titles[j3], titles[j4]),
                other_topics=(topics[j3], topics[j4]),
                language=language,
                query_variant=qv,
                work_variant=wv,
                bundle_id=f"r{int(run):02d}-{i:04d}",
                run=run,
            )
        )
    return out


# ----------------------------------------------------------------------------- margins


def similarities(embedder: Embedder, bundles: Sequence[Bundle]) -> np.ndarray:
    """Cosines of each query with its five candidates.

    One ``embed`` call for all queries (``kind="query"``) and one for all candidates
    (``kind="passage"``); vectors are L2-normalised here.

    Parameters
    ----------
    embedder : Embedder
        Anything with ``embed(texts, kind) -> (n, dim)``.
    bundles : sequence of Bundle

    Returns
    -------
    ndarray of float64, shape (n_bundles, 5)
        Cosines in [-1, 1], candidates in the order C1, C2a, C2b, C3, C4.

    Raises
    ------
    InputError
        When the embedder returns vectors of the wrong shapes.

    References
    ----------
    Dallaire (arXiv 2511.09545), section 4.2.
    """
    if not bundles:
        return np.zeros((0, 5))
    queries = [b.query for b in bundles]
    candidates = [c for b in bundles for c in b.candidates]
    q = l2_normalise(embedder.embed(queries, kind="query"), np.float64)
    c = l2_normalise(embedder.embed(candidates, kind="passage"), np.float64)
    if q.shape[0] != len(queries) or c.shape[0] != len(candidates) or q.shape[1] != c.shape[1]:
        raise InputError(
            f"the embedder returned shapes {q.shape} and {c.shape} for {len(queries)} queries "
            f"and {len(candidates)} candidates"
        )
    return np.einsum("nd,nkd->nk", q, c.reshape(len(bundles), 5, -1))


def _margins(sims: np.ndarray) -> dict[str, np.ndarray]:
    """Delta_name, Delta_topic, Delta_both from (n, 5) cosines: each shape (n,)."""
    return {
        "delta_name": sims[:, 0] - np.maximum(sims[:, 1], sims[:, 2]),
        "delta_topic": sims[:, 0] - sims[:, 3],
        "delta_both": sims[:, 0] - sims[:, 4],
    }


MARGIN_COLUMNS = (
    "bundle_id",
    "run",
    "language",
    "ablation",
    "author",
    "topic",
    "s_C1",
    "s_C2a",
    "s_C2b",
    "s_C3",
    "s_C4",
    "delta_name",
    "delta_topic",
    "delta_both",
)


def margin_frame(bundles: Sequence[Bundle], sims: np.ndarray) -> pd.DataFrame:
    """The table of :func:`name_margins` from the bundles and their cosines.

    Parameters
    ----------
    bundles : sequence of Bundle
    sims : ndarray of float64, shape (n_bundles, 5)
        Cosines of each query with C1, C2a, C2b, C3, C4 (:func:`similarities`).

    Returns
    -------
    DataFrame
        Columns :data:`MARGIN_COLUMNS`, one row per bundle.

    References
    ----------
    Dallaire (arXiv 2511.09545), section 4.2, the three margin equations.
    """
    m = _margins(sims)
    frame = pd.DataFrame(
        {
            "bundle_id": [b.bundle_id for b in bundles],
            "run": np.asarray([b.run for b in bundles], dtype=np.int64),
            "language": [b.language for b in bundles],
            "ablation": [b.ablation for b in bundles],
            "author": [b.author for b in bundles],
            "topic": [b.topic for b in bundles],
            **{f"s_{cid}": sims[:, i] for i, cid in enumerate(CANDIDATE_IDS)},
            **m,
        }
    )
    return frame[list(MARGIN_COLUMNS)]


def name_margins(embedder: Embedder, bundles: Sequence[Bundle]) -> pd.DataFrame:
    """Per-bundle cosines and Delta margins (Dallaire section 4.2).

    Parameters
    ----------
    embedder : CachedEmbedder or Embedder
        Anything with ``embed(texts, kind) -> (n, dim)``; vectors are L2-normalised here, so
        dot products are cosines. Queries are embedded with ``kind="query"``, candidates with
        ``kind="passage"``, each in one call.
    bundles : sequence of Bundle

    Returns
    -------
    DataFrame
        One row per bundle: ``bundle_id``, ``run``, ``language``, ``ablation``, ``author``,
        ``topic``, ``s_C1`` ... ``s_C4`` (cosines in [-1, 1]), ``delta_name`` (``s_C1 -
        max(s_C2a, s_C2b)``), ``delta_topic`` (``s_C1 - s_C3``), ``delta_both`` (``s_C1 -
        s_C4``), all floats in [-2, 2].

    References
    ----------
    Dallaire (arXiv 2511.09545), section 4.2, the three margin equations.
    """
    bundles = list(bundles)
    return margin_frame(bundles, similarities(embedder, bundles))
